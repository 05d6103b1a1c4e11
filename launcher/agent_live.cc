// Live hang detection under cxxrun: the agent reads this attempt's black boxes (live::Collector)
// every half second and runs the detector (live/detector.h) on them; its warnings and "resumed"
// lines are printed as they come, and a hang starts the same supervision as a rank's trigger.
//
// Several nodes with a dump directory of their own each: node 0's ranks wait, in a collective
// spanning the nodes, for ranks it cannot see (StallKind::kWaitUnknown), and a hang inside a
// collective every rank entered (a link, a GPU) would wait for NCCLREC_TIMEOUT. Once such a wait
// lasts kWidenAfterS, node 0 also reads the other nodes' ranks through their agents' ncclrec-top
// servers (each published at topKey(NODE)), all at once, each bounded by kAgentTimeoutS, a node
// whose heartbeat stopped for kSilentNodeS left out; as soon as the job moves again it reads its
// own directory only. A healthy job pays nothing; with a shared directory node 0 sees every rank
// and never widens. A node whose heartbeat stopped cannot be read: while node 0's ranks still wait
// for ranks it cannot see, that silence is the hang (the network between the nodes, or that node,
// stopped), declared at once rather than at NCCLREC_TIMEOUT.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "launcher/agent_internal.h"
#include "live/snapshot_request.h"

namespace ncclrec::launcher {
namespace {

constexpr double kLiveEveryS = 0.5;
constexpr double kWidenAfterS = 1;
constexpr double kAgentTimeoutS = 0.3;

}  // namespace

std::string topKey(int node) { return "top/" + std::to_string(node); }

void Agent::shareTopEndpoint(int port) {
  if (!multi() || o_.node_rank == 0 || !rdzv_ || port <= 0) return;
  // The address this agent reaches the store from is one node 0 reaches it at.
  std::string addr = rdzv_->localAddress();
  if (addr.empty()) return;
  if (addr.find(':') != std::string::npos) addr = "[" + addr + "]";
  if (auto s = rdzv_->set(topKey(o_.node_rank), addr + ":" + std::to_string(port)); !s.ok())
    say("cxxrun: " + s.message() + "; node 0 will not read this node's ranks live");
}

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
  options.token = facts_.token;
  options.remote_timeout_s = kAgentTimeoutS;
  // The other agents by the addresses they published, not by the names they advertise.
  options.follow_peers = false;
  live_ = std::make_unique<live::Collector>(options);
  detector_.emplace(params);
  next_live_s_ = monoS() + kLiveEveryS;
}

std::optional<live::DetectorEvent> Agent::pollLive(bool now) {
  if (!live_ || (!now && monoS() < next_live_s_)) return std::nullopt;
  next_live_s_ = monoS() + kLiveEveryS;
  if (auto hang = detectOnce()) return hang;
  std::vector<int> silent;
  // Just widened: the other nodes' ranks are judged now, not half a second later.
  if (widenLive(&silent)) {
    if (auto hang = detectOnce()) return hang;
  }
  return silentNodeHang(silent);
}

std::optional<live::DetectorEvent> Agent::silentNodeHang(const std::vector<int>& silent) {
  const live::Assessment& a = detector_->last();
  if (silent.empty() || a.kind != live::StallKind::kWaitUnknown || a.stalled_s < kWidenAfterS ||
      a.since_ns == silent_hang_since_ns_)
    return std::nullopt;
  silent_hang_since_ns_ = a.since_ns;  // said once per stall (--on-hang=wait goes on)
  live::DetectorEvent e;
  e.type = live::DetectorEvent::Type::kHang;
  e.assessment = a;
  char stalled[32];
  snprintf(stalled, sizeof(stalled), "%.1f", a.stalled_s);
  std::vector<SilentNode> nodes;
  for (int n : silent)
    nodes.push_back({n, node_hosts_[static_cast<size_t>(n)], silentFor(&silence_, n)});
  e.line = "hang (unknown, no progress for " + std::string(stalled) + " s): " + a.why + "; " +
           silentNodesLine(nodes);
  return e;
}

std::optional<live::DetectorEvent> Agent::detectOnce() {
  const auto snapshot = live_->collect(base::realtimeNs());
  for (live::DetectorEvent& e : detector_->step(*snapshot)) {
    if (e.type == live::DetectorEvent::Type::kHang) return std::move(e);
    if (e.type == live::DetectorEvent::Type::kSnapshot) {
      // For the warning's "it is now in ...": the ranks of this directory by its request file,
      // those read through other agents by these agents.
      bool through_agents = false;
      (void)live::requestThreadSnapshots(*snapshot, &through_agents);
      if (through_agents) live_->askRemoteSnapshots();
      continue;
    }
    say("cxxrun: " + e.line);
  }
  return std::nullopt;
}

bool Agent::widenLive(std::vector<int>* silent) {
  if (!multi() || o_.node_rank != 0 || !rdzv_) return false;
  const live::Assessment& a = detector_->last();
  const bool widened = live_->agents() > 0;
  if (a.kind == live::StallKind::kNone || a.stalled_s < kWidenAfterS) {
    if (widened) live_->setAgents({});  // the job moves: this directory is enough again
    return false;
  }
  if (!widened && a.kind != live::StallKind::kWaitUnknown) return false;
  std::vector<std::string> endpoints;
  for (int n = 1; n < o_.nnodes; ++n) {
    if (silentFor(&silence_, n) >= kSilentNodeS) {
      silent->push_back(n);  // it could not answer
      continue;
    }
    std::string& e = top_endpoints_[n];
    if (e.empty()) {
      auto v = rdzv_->tryGet(topKey(n));
      if (v.ok() && v->has_value()) e = **v;
    }
    if (!e.empty()) endpoints.push_back(e);
  }
  live_->setAgents(endpoints);
  if (widened || endpoints.empty()) return false;
  if (!said_widen_) {
    said_widen_ = true;
    say("cxxrun: ranks here wait for ranks this node's dump directory does not show; reading " +
        std::to_string(endpoints.size()) +
        " other node(s) through their agents while such a wait lasts (said once)");
  }
  return true;
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
