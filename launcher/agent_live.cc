// Live hang detection under cxxrun: the agent reads this attempt's black boxes (live::Collector)
// every half second and runs the detector (live/detector.h) on them; its warnings and "resumed"
// lines are printed as they come, and a hang starts the same supervision as a rank's trigger.
#include <string>

#include "launcher/agent_internal.h"
#include "live/snapshot_request.h"

namespace ncclrec::launcher {
namespace {

constexpr double kLiveEveryS = 0.5;

}  // namespace

void Agent::startLive() {
  live_.reset();
  detector_.reset();
  if (format::paramValue("NCCLREC_WATCHER") == "off") return;  // the user turned it off
  std::string problem;
  const live::DetectorParams params = live::DetectorParams::fromEnvironment(&problem);
  if (!problem.empty() && attempt_ == 0) say("cxxrun: " + problem);
  live::CollectorOptions options;
  options.dir = facts_.dump_dir;
  options.hang_after_s = params.timeout_s;
  live_ = std::make_unique<live::Collector>(options);
  detector_.emplace(params);
  next_live_s_ = monoS() + kLiveEveryS;
}

std::optional<live::DetectorEvent> Agent::pollLive(bool now) {
  if (!live_ || (!now && monoS() < next_live_s_)) return std::nullopt;
  next_live_s_ = monoS() + kLiveEveryS;
  const auto snapshot = live_->collect(base::realtimeNs());
  for (live::DetectorEvent& e : detector_->step(*snapshot)) {
    if (e.type == live::DetectorEvent::Type::kHang) return std::move(e);
    if (e.type == live::DetectorEvent::Type::kSnapshot) {
      // For the warning's "it is now in ...". This collector reads its own directory only:
      // there are no agents to pass the request on to.
      bool through_agents = false;
      (void)live::requestThreadSnapshots(*snapshot, &through_agents);
      continue;
    }
    say("cxxrun: " + e.line);
  }
  return std::nullopt;
}

}  // namespace ncclrec::launcher
