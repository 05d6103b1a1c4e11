// Live hang detection under cxxrun: the agent reads this attempt's black boxes (live::Collector)
// every half second and runs the detector (live/detector.h) on them; its warnings and "resumed"
// lines are printed as they come, and a hang starts the same supervision as a rank's trigger.
#include <nlohmann/json.hpp>
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

void Agent::publishTimeline(const live::DetectorEvent& hang) {
  const nlohmann::json t = {{"node", o_.node_rank},
                            {"host", host_},
                            {"stall_began_ns", hang.assessment.since_ns},
                            {"detected_ns", detected_ns_},
                            {"detection", hang.line}};
  publishOnce(jobKey("hang_timeline"),
              t.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

bool Agent::readRemoteTimeline(report::HangReportInput* in) {
  auto text = rdzv_->tryGet(jobKey("hang_timeline"));
  if (!text.ok() || !text->has_value()) return false;
  const nlohmann::json t = nlohmann::json::parse(**text, nullptr, false);
  // Written by another agent of this job: still checked, as anything read from outside.
  if (!t.is_object() || !t.value("stall_began_ns", nlohmann::json()).is_number_integer() ||
      !t.value("detected_ns", nlohmann::json()).is_number_integer() ||
      !t.value("node", nlohmann::json()).is_number_integer() ||
      !t.value("host", nlohmann::json()).is_string() ||
      !t.value("detection", nlohmann::json()).is_string())
    return false;
  if (t["node"].get<int>() == o_.node_rank) return false;  // this node's own: already in `in`
  in->stall_began_ns = t["stall_began_ns"].get<int64_t>();
  in->detected_ns = t["detected_ns"].get<int64_t>();
  in->detection = t["detection"].get<std::string>();
  in->detected_by = "node " + std::to_string(t["node"].get<int>()) + " (host " +
                    t["host"].get<std::string>() + ")";
  return true;
}

}  // namespace ncclrec::launcher
