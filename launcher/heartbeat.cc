#include "launcher/heartbeat.h"

#include <chrono>
#include <cstdio>

namespace ncclrec::launcher {

std::string heartbeatKey(int node) { return "alive/" + std::to_string(node); }

std::string silentNodesLine(const std::vector<SilentNode>& nodes) {
  if (nodes.empty()) return "";
  std::string out;
  for (const SilentNode& n : nodes) {
    char secs[32];
    snprintf(secs, sizeof(secs), "%.1f", n.silent_s);
    out += std::string(out.empty() ? "" : ", ") + "node " + std::to_string(n.node) + " (host " +
           n.host + ") not heard from for " + secs + " s";
  }
  return out + (nodes.size() == 1 ? ": the network between it and node 0 stopped, or the node did"
                                  : ": the network between them and node 0 stopped, or they did");
}

void HeartbeatSender::beat(double now_s) {
  if (now_s < next_beat_s_) return;
  next_beat_s_ = now_s + kHeartbeatEveryS;
  if (!client_) {
    if (now_s < next_connect_s_) return;
    next_connect_s_ = now_s + kReconnectEveryS;
    auto c = format::StoreClient::connect(endpoint_, token_, /*timeout_s=*/0);  // one try, ~1 s
    if (!c.ok()) {
      failure_ = c.status().message();
      return;
    }
    client_.emplace(std::move(c).value());
    client_->setIoTimeout(std::chrono::seconds(1));
  }
  auto n = client_->add(key_, 1);
  if (!n.ok()) {
    failure_ = n.status().message();
    client_.reset();  // closed by the failure; the next beat due reconnects
    next_connect_s_ = now_s + kReconnectEveryS;
    return;
  }
  count_ = *n;
  failure_.clear();
}

void SilenceWatch::observe(int node, const std::optional<std::string>& value, double now_s) {
  auto [it, added] = seen_.try_emplace(node, Seen{value, now_s});
  if (!added && it->second.value != value) it->second = Seen{value, now_s};
}

double SilenceWatch::silentFor(int node, double now_s) const {
  const auto it = seen_.find(node);
  return it == seen_.end() ? 0 : now_s - it->second.since_s;
}

}  // namespace ncclrec::launcher
