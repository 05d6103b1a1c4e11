#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "launcher/agent_internal.h"
#include "launcher/store_client.h"

namespace ncclrec::launcher {

int Agent::rendezvous(bool hosting) {
  auto client = StoreClient::connect(facts_.store_endpoint, facts_.token, o_.join_timeout_s);
  if (!client.ok()) {
    const std::string why = client.status().message();
    if (why.find("wrong job token") != std::string::npos) {
      say("cxxrun: port " + std::to_string(o_.master_port) + " on " + o_.master_addr +
          " is in use by another job (another run id or token): use another --master-port");
    } else {
      say("cxxrun: cannot join the job's store: " + why);
    }
    return kExitUsage;
  }
  rdzv_.emplace(std::move(client).value());
  if (o_.node_rank < 0) {
    if (hosting) {
      o_.node_rank = 0;
    } else {
      auto n = rdzv_->add("rdzv/next", 1);
      if (!n.ok()) return say("cxxrun: " + n.status().message()), kExitUsage;
      if (*n >= o_.nnodes) {
        say("cxxrun: more agents joined than --nnodes " + std::to_string(o_.nnodes) +
            " (this would be node " + std::to_string(*n) + ")");
        return kExitUsage;
      }
      o_.node_rank = static_cast<int>(*n);
    }
  }
  const std::string me = host_ + " (pid " + std::to_string(getpid()) + ")";
  const std::string key = "rdzv/node/" + std::to_string(o_.node_rank);
  auto claimed = rdzv_->compareSet(key, "", me);
  if (!claimed.ok()) return say("cxxrun: " + claimed.status().message()), kExitUsage;
  if (*claimed != me) {
    say("cxxrun: node rank " + std::to_string(o_.node_rank) + " is already taken by " + *claimed);
    return kExitUsage;
  }
  std::vector<std::string> keys;
  for (int r = 0; r < o_.nnodes; ++r) keys.push_back("rdzv/node/" + std::to_string(r));
  say("cxxrun: node rank " + std::to_string(o_.node_rank) + " of " + std::to_string(o_.nnodes) +
      "; waiting up to " + std::to_string(static_cast<int>(o_.join_timeout_s)) +
      " s for the other nodes (store " + facts_.store_endpoint + ")");
  if (!rdzv_->wait(keys, o_.join_timeout_s).ok()) {
    std::string missing, joined;
    for (int r = 0; r < o_.nnodes; ++r) {
      auto v = rdzv_->tryGet(keys[static_cast<size_t>(r)]);
      if (v.ok() && v->has_value()) {
        joined += (joined.empty() ? "" : ", ") + std::to_string(r) + " on " + **v;
      } else {
        missing += (missing.empty() ? "" : ",") + std::to_string(r);
      }
    }
    say("cxxrun: node(s) " + missing + " did not join within " +
        std::to_string(static_cast<int>(o_.join_timeout_s)) + " s (joined: " + joined + ")");
    return kExitUsage;
  }
  if (o_.node_rank == 0) {
    facts_.worker_master_port = freePort();
    if (!rdzv_->set("rdzv/master_port", std::to_string(facts_.worker_master_port)).ok())
      return say("cxxrun: lost the job's store"), kExitUsage;
  } else {
    auto port = rdzv_->get("rdzv/master_port", o_.join_timeout_s);
    if (!port.ok()) return say("cxxrun: " + port.status().message()), kExitUsage;
    facts_.worker_master_port = std::atoi(port->c_str());
  }
  return kExitOk;
}

void Agent::publishOnce(const std::string& key, const std::string& value) {
  if (!rdzv_ || std::find(published_.begin(), published_.end(), key) != published_.end()) return;
  published_.push_back(key);
  // First writer wins: the job's first failure stays the one every node names.
  (void)rdzv_->compareSet(key, "", value);
}

// True when another node reported something that ends this node's group too.
bool Agent::checkRemote(Outcome* outcome) {
  auto failed = rdzv_->tryGet("job/failed");
  if (!failed.ok()) {
    remote_failure_ = "  lost the job's store at " + facts_.store_endpoint +
                      " (did node 0 end?): " + failed.status().message() + "\n";
    *outcome = Outcome::kRemoteFailed;
    return true;
  }
  if (failed->has_value()) {
    remote_failure_ = **failed;
    *outcome = Outcome::kRemoteFailed;
    return true;
  }
  auto hang = rdzv_->tryGet("job/hang");
  if (hang.ok() && hang->has_value() &&
      std::find(published_.begin(), published_.end(), "job/hang") == published_.end()) {
    remote_hang_ = **hang;
    *outcome = Outcome::kHang;
    return true;
  }
  return false;
}

int Agent::waitForOtherNodes() {
  publishOnce("job/done/" + std::to_string(o_.node_rank), host_);
  // Node 0 serves the store: it stays until every node is done, and learns of their failures.
  if (o_.node_rank != 0) return kExitOk;
  const int interval_ms = std::max(1, static_cast<int>(o_.monitor_interval_s * 1000));
  for (;;) {
    bool all = true;
    for (int r = 0; r < o_.nnodes && all; ++r) {
      auto v = rdzv_->tryGet("job/done/" + std::to_string(r));
      all = v.ok() && v->has_value();
    }
    if (all) return kExitOk;
    Outcome remote;
    if (checkRemote(&remote) && remote == Outcome::kRemoteFailed) {
      printFailureSummary();
      return kExitWorkerFailed;
    }
    pump(interval_ms);
    if (pending_signal_ != 0) return 128 + pending_signal_;
  }
}

}  // namespace ncclrec::launcher
