#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "format/store_client.h"
#include "launcher/agent_internal.h"

namespace ncclrec::launcher {
namespace {

// How long node 0 waits, once every node is done, for the others to learn it before its store
// goes away.
constexpr double kAckTimeoutS = 10;

std::string seconds(double s) { return std::to_string(static_cast<int>(s)); }

// "HOST (pid N)", the value of rdzv/node/R, without the pid.
std::string hostOf(const std::string& claim) { return claim.substr(0, claim.rfind(" (pid ")); }

// The elastic rendezvous' state, one key changed only by compare_set: "open:K:LAST_JOINER" (K
// agents joined, node ranks 0..K-1; naming the joiner makes every agent's desired value unique,
// so a compare_set that returns it was this agent's), "closed:K" or "failed".
const char* const kRdzvState = "rdzv/state";
struct RdzvState {
  bool open = false;
  bool failed = false;
  int count = 0;
};

RdzvState parseState(const std::string& v) {
  RdzvState s;
  if (v == "failed") return s.failed = true, s;
  const size_t colon = v.find(':');
  if (colon == std::string::npos) return s.failed = true, s;
  s.open = v.compare(0, colon, "open") == 0;
  const size_t end = std::min(v.find(':', colon + 1), v.size());
  const auto [p, ec] = std::from_chars(v.data() + colon + 1, v.data() + end, s.count);
  if (ec != std::errc() || p != v.data() + end) s.failed = true;
  return s;
}

}  // namespace

int Agent::rendezvous(bool hosting) {
  auto client =
      format::StoreClient::connect(facts_.store_endpoint, facts_.token, o_.join_timeout_s);
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
  // What every agent must agree on: RANK = node_rank * nproc_per_node + local_rank holds only when
  // every node runs as many workers, and a restart needs every node to have one left.
  const std::pair<const char*, std::string> shape[] = {
      {"--nproc-per-node", std::to_string(o_.nproc_per_node)},
      {"--nnodes", std::to_string(o_.min_nnodes) + ":" + std::to_string(o_.nnodes)},
      {"--max-restarts", std::to_string(o_.max_restarts)}};
  for (const auto& [flag, mine] : shape) {
    auto agreed = rdzv_->compareSet(std::string("rdzv/flag") + flag, "", mine);
    if (!agreed.ok()) return say("cxxrun: " + agreed.status().message()), kExitUsage;
    if (*agreed != mine) {
      say(std::string("cxxrun: ") + flag + " " + mine + " here, but the job's other agents use " +
          *agreed + ": every node must be started with the same value");
      return kExitUsage;
    }
  }
  if (hosting) {
    auto s = rdzv_->set("rdzv/node0_run_dir", run_dir_);
    if (!s.ok()) return say("cxxrun: " + s.message()), kExitUsage;
  }
  const std::string me = host_ + " (pid " + std::to_string(getpid()) + ")";
  const int rc = isElastic(o_) ? rendezvousElastic(hosting, me) : rendezvousFixed(hosting, me);
  if (rc != kExitOk) return rc;
  node_hosts_.clear();
  for (int r = 0; r < o_.nnodes; ++r) {
    auto v = rdzv_->tryGet("rdzv/node/" + std::to_string(r));
    node_hosts_.push_back(v.ok() && v->has_value() ? hostOf(**v) : "?");
  }
  auto dir = rdzv_->tryGet("rdzv/node0_run_dir");
  if (dir.ok() && dir->has_value()) node0_run_dir_ = **dir;
  if (o_.node_rank != 0) heartbeat_.emplace(facts_.store_endpoint, facts_.token, o_.node_rank);
  return kExitOk;
}

int Agent::rendezvousFixed(bool hosting, const std::string& me) {
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
      "; waiting up to " + seconds(o_.join_timeout_s) + " s for the other nodes (store " +
      facts_.store_endpoint + ")");
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
    say("cxxrun: node(s) " + missing + " did not join within " + seconds(o_.join_timeout_s) +
        " s (joined: " + joined + ")");
    return kExitUsage;
  }
  return kExitOk;
}

// torchrun's rules: the round closes as soon as MAX agents joined, or once at least MIN joined
// and no other came for --rdzv-last-call seconds; node 0 (the store's host) decides and closes
// it. An agent that finds it closed is refused: membership is fixed for the job's whole life,
// restarts included.
int Agent::rendezvousElastic(bool hosting, const std::string& me) {
  const std::string range = std::to_string(o_.min_nnodes) + ":" + std::to_string(o_.nnodes);
  int world = 0;
  const int rc = hosting ? closeElastic(me, range, &world) : joinElastic(me, range, &world);
  if (rc != kExitOk) return rc;
  o_.nnodes = world;
  std::vector<std::string> keys;
  for (int r = 0; r < world; ++r) keys.push_back("rdzv/node/" + std::to_string(r));
  // A joiner names itself right after its compare_set: a moment at most.
  if (!rdzv_->wait(keys, 30).ok())
    return say("cxxrun: a node of the rendezvous vanished"), kExitUsage;
  say("cxxrun: node rank " + std::to_string(o_.node_rank) + " of " + std::to_string(world) +
      " (elastic --nnodes " + range + "): WORLD_SIZE " + std::to_string(world * o_.nproc_per_node));
  return kExitOk;
}

// Node 0: opens the round, watches agents join and closes it; *world: the nodes it closed with.
int Agent::closeElastic(const std::string& me, const std::string& range, int* world) {
  o_.node_rank = 0;
  const std::string first = "open:1:" + me;
  auto created = rdzv_->compareSet(kRdzvState, "", first);
  auto claimed = rdzv_->set("rdzv/node/0", me);
  if (!created.ok() || !claimed.ok() || *created != first)
    return say("cxxrun: cannot open the rendezvous in the job's store"), kExitUsage;
  say("cxxrun: node rank 0; elastic rendezvous (--nnodes " + range + "): waiting up to " +
      seconds(o_.join_timeout_s) + " s for " + std::to_string(o_.min_nnodes) +
      " node(s), then closing when " + std::to_string(o_.nnodes) + " joined or none joined for " +
      seconds(o_.rdzv_last_call_s) + " s (--rdzv-last-call) (store " + facts_.store_endpoint + ")");
  const double start = monoS();
  double changed = start;
  int last_count = 1;
  for (;;) {
    auto cur = rdzv_->tryGet(kRdzvState);
    if (!cur.ok() || !cur->has_value())
      return say("cxxrun: lost the rendezvous state in the job's store"), kExitUsage;
    const RdzvState s = parseState(**cur);
    const double now = monoS();
    if (s.count != last_count) {
      last_count = s.count;
      changed = now;
      say("cxxrun: " + std::to_string(s.count) + " node(s) joined the rendezvous");
    }
    std::string why;
    if (s.count >= o_.nnodes) {
      why = "--nnodes " + range + " allows no more";
    } else if (s.count >= o_.min_nnodes && now - changed >= o_.rdzv_last_call_s) {
      why =
          "no other agent joined within " + seconds(o_.rdzv_last_call_s) + " s (--rdzv-last-call)";
    }
    if (!why.empty()) {
      const std::string closed = "closed:" + std::to_string(s.count);
      auto after = rdzv_->compareSet(kRdzvState, **cur, closed);
      if (!after.ok()) return say("cxxrun: " + after.status().message()), kExitUsage;
      if (*after != closed) continue;  // an agent joined in between: count it first
      say("cxxrun: closing the rendezvous with " + std::to_string(s.count) + " node(s): " + why);
      *world = s.count;
      break;
    }
    if (s.count < o_.min_nnodes && now - start >= o_.join_timeout_s) {
      (void)rdzv_->compareSet(kRdzvState, **cur, "failed");
      std::string joined;
      for (int r = 0; r < s.count; ++r) {
        auto v = rdzv_->tryGet("rdzv/node/" + std::to_string(r));
        joined += (joined.empty() ? "" : ", ") + std::to_string(r) + " on " +
                  (v.ok() && v->has_value() ? **v : "?");
      }
      say("cxxrun: only " + std::to_string(s.count) + " of at least " +
          std::to_string(o_.min_nnodes) + " node(s) joined within " + seconds(o_.join_timeout_s) +
          " s (--nnodes " + range + "; joined: " + joined + ")");
      return kExitUsage;
    }
    pump(50);
    if (pending_signal_ != 0) {
      (void)rdzv_->compareSet(kRdzvState, **cur, "failed");
      say("cxxrun: " + base::signalName(pending_signal_) + " during the rendezvous: stopping");
      return 128 + pending_signal_;
    }
  }
  if (auto s = rdzv_->set("rdzv/world", std::to_string(*world)); !s.ok())
    return say("cxxrun: " + s.message()), kExitUsage;
  return kExitOk;
}

// Another node: takes the next node rank while the round is open, then waits for node 0 to close
// it; *world: the nodes it closed with.
int Agent::joinElastic(const std::string& me, const std::string& range, int* world) {
  auto cur = rdzv_->get(kRdzvState, o_.join_timeout_s);
  if (!cur.ok()) return say("cxxrun: " + cur.status().message()), kExitUsage;
  for (;;) {
    const RdzvState s = parseState(*cur);
    if (!s.open || s.count >= o_.nnodes) {
      say("cxxrun: the rendezvous of run " + facts_.run_id + " is closed" +
          (s.failed ? " (it failed: too few nodes joined)"
                    : " (" + std::to_string(s.count) + " node(s) joined, --nnodes " + range + ")") +
          ": this agent came too late and is not part of the job; start it with another "
          "--run-id and --master-port for a new job");
      return kExitUsage;
    }
    const std::string mine = "open:" + std::to_string(s.count + 1) + ":" + me;
    auto after = rdzv_->compareSet(kRdzvState, *cur, mine);
    if (!after.ok()) return say("cxxrun: " + after.status().message()), kExitUsage;
    if (*after == mine) {
      o_.node_rank = s.count;
      break;
    }
    *cur = *after;
  }
  if (auto s = rdzv_->set("rdzv/node/" + std::to_string(o_.node_rank), me); !s.ok())
    return say("cxxrun: " + s.message()), kExitUsage;
  say("cxxrun: joined the elastic rendezvous (--nnodes " + range + ") as node rank " +
      std::to_string(o_.node_rank) + "; waiting for node 0 to close it");
  auto w = rdzv_->get("rdzv/world", o_.join_timeout_s + o_.rdzv_last_call_s + 10);
  if (!w.ok())
    return say("cxxrun: the rendezvous did not close: " + w.status().message()), kExitUsage;
  *world = std::atoi(w->c_str());
  return kExitOk;
}

// Node 0 picks the workers' MASTER_PORT for each attempt and hands it to the other nodes.
int Agent::agreeOnMasterPort() {
  if (!multi()) {
    facts_.worker_master_port = freePort();
    return kExitOk;
  }
  if (o_.node_rank == 0) {
    facts_.worker_master_port = freePort();
    if (!rdzv_->set(jobKey("master_port"), std::to_string(facts_.worker_master_port)).ok())
      return say("cxxrun: lost the job's store"), kExitUsage;
    return kExitOk;
  }
  auto port = rdzv_->get(jobKey("master_port"), o_.join_timeout_s);
  if (!port.ok()) return say("cxxrun: " + port.status().message()), kExitUsage;
  facts_.worker_master_port = std::atoi(port->c_str());
  return kExitOk;
}

std::string Agent::publishOnce(const std::string& key, const std::string& value) {
  if (!rdzv_ || std::find(published_.begin(), published_.end(), key) != published_.end())
    return value;
  published_.push_back(key);
  // First writer wins: the attempt's first failure stays the one every node names.
  auto after = rdzv_->compareSet(key, "", value);
  return after.ok() ? *after : value;
}

// The value is the one-line summary, then torchrun's block; when another node published first,
// its failure is the root cause this node names too.
void Agent::publishFailure() {
  const Failure& f = failures_.front();
  const std::string mine = failureLine(f, host_) + "\n" + failureText(f, host_);
  const std::string first = publishOnce(jobKey("failed"), mine);
  if (first != mine) {
    const size_t nl = first.find('\n');
    remote_failure_line_ = first.substr(0, nl);
    remote_failure_ = nl == std::string::npos ? "" : first.substr(nl + 1);
  }
}

// True when another node reported something that ends this node's group too: a failure (or the
// store's loss) always, a hang once per attempt.
bool Agent::checkRemote(Outcome* outcome) {
  auto failed = rdzv_->tryGet(jobKey("failed"));
  if (!failed.ok()) {
    store_lost_ = true;
    remote_failure_line_ = "lost the job's store at " + facts_.store_endpoint;
    remote_failure_ = "  lost the job's store at " + facts_.store_endpoint +
                      " (did node 0 end?): " + failed.status().message() + "\n";
    *outcome = Outcome::kRemoteFailed;
    return true;
  }
  if (failed->has_value()) {
    const size_t nl = (*failed)->find('\n');
    remote_failure_line_ = (*failed)->substr(0, nl);
    remote_failure_ = nl == std::string::npos ? **failed : (*failed)->substr(nl + 1);
    *outcome = Outcome::kRemoteFailed;
    return true;
  }
  if (hang_shared_) return false;
  auto hang = rdzv_->tryGet(jobKey("hang"));
  if (hang.ok() && hang->has_value()) {
    hang_shared_ = true;
    remote_hang_ = **hang;
    *outcome = Outcome::kHang;
    return true;
  }
  return false;
}

bool Agent::waitForKeys(const std::vector<std::string>& keys, double timeout_s,
                        std::vector<int>* missing) {
  const double deadline = monoS() + timeout_s;
  const int signals_before = signals_seen_;
  const int interval_ms = std::max(1, static_cast<int>(o_.monitor_interval_s * 1000));
  for (;;) {
    missing->clear();
    for (size_t i = 0; i < keys.size(); ++i) {
      auto v = rdzv_->tryGet(keys[i]);
      if (!v.ok()) {
        store_lost_ = true;
        return false;
      }
      if (!v->has_value()) missing->push_back(static_cast<int>(i));
    }
    if (missing->empty()) return true;
    if (monoS() >= deadline || signals_seen_ != signals_before) return false;
    pump(interval_ms);
  }
}

// This node's workers all exited 0. The job succeeded once every node's did; until then a failure
// elsewhere still concerns this node when restarts are left (the next attempt needs every node),
// and node 0 keeps serving the store.
Outcome Agent::waitForJobEnd() {
  publishOnce(jobKey("done/" + std::to_string(o_.node_rank)), host_);
  const bool restarts_left = attempt_ < o_.max_restarts;
  if (o_.node_rank != 0 && !restarts_left) return Outcome::kSucceeded;
  const int interval_ms = std::max(1, static_cast<int>(o_.monitor_interval_s * 1000));
  for (;;) {
    bool all = true;
    for (int r = 0; r < o_.nnodes && all; ++r) {
      auto v = rdzv_->tryGet(jobKey("done/" + std::to_string(r)));
      all = v.ok() && v->has_value();
    }
    if (all) break;
    Outcome remote;
    if (checkRemote(&remote)) {
      if (remote == Outcome::kRemoteFailed) return remote;
      // A hang elsewhere: this node's ranks ended, but their recordings belong in the report.
      superviseHang(remoteHangReason(), remote_hang_, attempt_start_ns_);
      if (o_.on_hang == OnHang::kExit) return Outcome::kHang;
    }
    pump(interval_ms);
    if (pending_signal_ != 0) return Outcome::kInterrupted;
  }
  if (!restarts_left) return Outcome::kSucceeded;
  if (o_.node_rank != 0) {
    (void)rdzv_->set(jobKey("ack/" + std::to_string(o_.node_rank)), host_);
    return Outcome::kSucceeded;
  }
  std::vector<std::string> acks;
  for (int r = 1; r < o_.nnodes; ++r) acks.push_back(jobKey("ack/" + std::to_string(r)));
  std::vector<int> missing;
  (void)waitForKeys(acks, kAckTimeoutS, &missing);
  return Outcome::kSucceeded;
}

// Every node stopped its workers before any starts the next attempt: no worker of the old group
// can meet one of the new.
bool Agent::restartBarrier() {
  publishOnce(jobKey("stopped/" + std::to_string(o_.node_rank)), host_);
  std::vector<std::string> keys;
  for (int r = 0; r < o_.nnodes; ++r) keys.push_back(jobKey("stopped/" + std::to_string(r)));
  std::vector<int> missing;
  if (waitForKeys(keys, o_.join_timeout_s, &missing)) return true;
  if (store_lost_) {
    say("cxxrun: lost the job's store at " + facts_.store_endpoint + " before the restart");
  } else if (pending_signal_ != 0) {
    say("cxxrun: " + base::signalName(pending_signal_) + " while waiting to restart: stopping");
  } else {
    std::string names;
    for (int r : missing)
      names += (names.empty() ? "" : ", ") + std::to_string(r) + " (host " +
               node_hosts_[static_cast<size_t>(r)] + ")";
    say("cxxrun: node(s) " + names + " did not stop their workers for the restart within " +
        seconds(o_.join_timeout_s) + " s");
  }
  return false;
}

}  // namespace ncclrec::launcher
