// The ranks of another host, through the cxxrun agent there (launcher/top_server.h): one TCP
// connection per agent, one TopRequest/TopReply exchange (format/ncclrec.proto) per
// refresh, authenticated with the job token, over the shared framed-TCP client
// (format/frame_client.h).
//
// Used by the collector's thread only. Blocking calls are bounded by the timeout given; a lost
// or refused connection is reported in Result::error and retried at the next poll (at most one
// connection attempt every few seconds).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/frame_client.h"
#include "live/snapshot.h"

namespace ncclrec::live {

class RemoteSource {
 public:
  RemoteSource(std::string endpoint, std::string token);
  ~RemoteSource();
  RemoteSource(const RemoteSource&) = delete;
  RemoteSource& operator=(const RemoteSource&) = delete;

  struct Result {
    std::vector<RankEntry> ranks;    // timestamps moved onto this host's clock
    std::vector<std::string> peers;  // other agents of the job (host:port), as the agent knows
    std::vector<std::string> notes;  // the agent's unreadable files, "agent E: PATH: why"
    std::string label;               // "HOST:DIR"
    std::string error;               // "agent E: why" when nothing came back
    std::string snapshot_asked;      // after askSnapshot(): "agent E: what the agent did"
  };

  // One request and its reply; `now_ns` is this host's CLOCK_REALTIME.
  Result poll(int64_t now_ns, double timeout_s);
  // The next poll() also asks the agent's ranks for a thread snapshot (ncclrec-top's 't' key);
  // asked again at later polls until one reaches the agent.
  void askSnapshot() { ask_snapshot_ = true; }

  const std::string& endpoint() const { return endpoint_; }

 private:
  std::string endpoint_;
  std::string token_;
  std::optional<format::FrameSocket> socket_;  // unset: not connected
  int64_t last_attempt_ns_ = 0;
  std::string last_error_;
  bool ask_snapshot_ = false;
};

// The endpoints --connect takes: "host:port", "[v6]:port" (format/frame_client.h).
using format::splitEndpoint;

}  // namespace ncclrec::live
