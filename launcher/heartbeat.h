// Multi-node: how node 0 tells a node that is busy from one it can no longer hear (a network that
// stopped between them, a node that froze). Every agent but node 0's counts once a second at
// heartbeatKey(NODE) in the job's store, on a connection of its own whose requests give up after a
// second: a network that stopped holds that agent up for a second at most, and the connection its
// other requests use is left as it was. Node 0 serves the store; while it waits for the other
// nodes' recordings it watches their counts (SilenceWatch) and stops waiting for a node silent for
// kSilentNodeS.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "format/store_client.h"

namespace ncclrec::launcher {

inline constexpr double kHeartbeatEveryS = 1;
// Three missed beats: a node this quiet is not merely slow to answer.
inline constexpr double kSilentNodeS = 3;

// "alive/<NODE>": not per attempt, the count only has to change.
std::string heartbeatKey(int node);

class HeartbeatSender {
 public:
  HeartbeatSender(std::string endpoint, std::string token, int node)
      : endpoint_(std::move(endpoint)), token_(std::move(token)), key_(heartbeatKey(node)) {}

  // Counts once when kHeartbeatEveryS passed since the last try (`now_s`: a monotonic clock).
  // Without a connection (the first beat, or after one failed) it connects first, at most every
  // kReconnectEveryS. Each call waits about a second at most; failures are kept, never thrown.
  void beat(double now_s);
  // The count the store answered to the last beat that reached it; 0 before any.
  int64_t count() const { return count_; }
  // Why the last beat did not reach the store; "" when it did.
  const std::string& failure() const { return failure_; }

 private:
  static constexpr double kReconnectEveryS = 5;
  std::string endpoint_, token_, key_;
  std::optional<format::StoreClient> client_;
  double next_beat_s_ = 0;
  double next_connect_s_ = 0;
  int64_t count_ = 0;
  std::string failure_;
};

// A node node 0 could not hear from: its count stopped `silent_s` seconds ago.
struct SilentNode {
  int node = 0;
  std::string host;
  double silent_s = 0;
};
// "node 1 (host b) not heard from for 3.0 s: the network between it and node 0 stopped, or the
// node did"; of several nodes, "node 1 (...) ..., node 2 (...) ...: the network between them and
// node 0 stopped, or they did". "" for none.
std::string silentNodesLine(const std::vector<SilentNode>& nodes);

// Node 0's view of the other nodes' counts.
class SilenceWatch {
 public:
  // The node's count now (nullopt: it never counted) at `now_s`.
  void observe(int node, const std::optional<std::string>& value, double now_s);
  // Seconds since the node's count last changed, or since it was first observed; 0 for a node
  // never observed.
  double silentFor(int node, double now_s) const;

 private:
  struct Seen {
    std::optional<std::string> value;
    double since_s = 0;
  };
  std::map<int, Seen> seen_;
};

}  // namespace ncclrec::launcher
