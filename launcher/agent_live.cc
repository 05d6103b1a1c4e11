// Live hang detection under cxxrun: the agent reads this attempt's black boxes (tui::Collector)
// every half second and runs the detector (watch/detector.h) on them; its warnings and "resumed"
// lines are printed as they come, and a hang starts the same supervision as a rank's trigger.
#include <string>

#include "launcher/agent_internal.h"
#include "tui/snapshot_request.h"

namespace ncclrec::launcher {
namespace {

constexpr double kLiveEveryS = 0.5;

}  // namespace

void Agent::startLive() {
  live_.reset();
  detector_.reset();
  if (format::paramValue("NCCLREC_WATCHER") == "off") return;  // the user turned it off
  std::string problem;
  const watch::DetectorParams params = watch::DetectorParams::fromEnvironment(&problem);
  if (!problem.empty() && attempt_ == 0) say("cxxrun: " + problem);
  tui::CollectorOptions options;
  options.dir = facts_.dump_dir;
  options.hang_after_s = params.timeout_s;
  live_ = std::make_unique<tui::Collector>(options);
  detector_.emplace(params);
  next_live_s_ = monoS() + kLiveEveryS;
}

std::optional<watch::DetectorEvent> Agent::pollLive(bool now) {
  if (!live_ || (!now && monoS() < next_live_s_)) return std::nullopt;
  next_live_s_ = monoS() + kLiveEveryS;
  const auto snapshot = live_->collect(base::realtimeNs());
  for (watch::DetectorEvent& e : detector_->step(*snapshot)) {
    if (e.type == watch::DetectorEvent::Type::kHang) return std::move(e);
    if (e.type == watch::DetectorEvent::Type::kSnapshot) {
      // For the warning's "it is now in ...". This collector reads its own directory only:
      // there are no agents to pass the request on to.
      bool through_agents = false;
      (void)tui::requestThreadSnapshots(*snapshot, &through_agents);
      continue;
    }
    say("cxxrun: " + e.line);
  }
  return std::nullopt;
}

}  // namespace ncclrec::launcher
