// ncclrec-top's window into one node: a TCP server, on its own thread in the cxxrun agent, that
// answers `ncclrec-top --connect HOST:PORT` with the black boxes of this node's ranks (wire
// format: TopRequest / TopReply in format/ncclrec.proto). Every request must carry the
// job token (the store's, CXXRUN_TOKEN); a wrong one is answered once and the connection closed.
//
// The agents of a job find each other through the job's store: each publishes its endpoint there
// ("ncclrec-top/count", "ncclrec-top/<n>") and lists the others in its replies, so a client that
// reaches one agent shows every node.
//
// One thread serves every connection with poll(); files are read only when asked, at most once
// per kCacheSeconds whatever the number of clients, O_RDONLY and mapped PROT_READ: the ranks
// never notice. Nothing here runs in the workers.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "launcher/frame_server.h"
#include "launcher/options.h"
#include "launcher/worker_env.h"

namespace ncclrec::launcher {

class TopServer {
 public:
  struct Config {
    std::string bind_addr;       // "" or "0.0.0.0": every interface
    int port = 0;                // 0: a free port; a busy one is an error
    std::string token;           // the job token every request must carry
    std::string run_dir;         // NCCLREC_DIR/<run id>: its newest attempt_N is served
    std::string advertise_host;  // how the other agents and clients reach this one
    std::string store_endpoint;  // the job's store, to meet the other agents; "" = alone
    int max_events = 64;         // recent events per rank when the request asks for none
  };
  struct Stats {
    uint64_t accepted = 0;
    uint64_t requests = 0;
    uint64_t refused = 0;  // wrong token, oversize or undecodable request
    uint64_t reads = 0;    // times the black boxes were read
  };

  static base::StatusOr<std::unique_ptr<TopServer>> start(Config config);
  ~TopServer();  // stops the thread and closes every connection
  TopServer(const TopServer&) = delete;
  TopServer& operator=(const TopServer&) = delete;

  // Removes `path` (the endpoint file) when the server stops: it names a live server only.
  void removeOnStop(std::string path) { remove_on_stop_ = std::move(path); }

  int port() const;
  std::string endpoint() const { return config_.advertise_host + ":" + std::to_string(port()); }
  Stats stats() const;

  // Kept by the server thread, read by stats().
  struct Counters {
    std::atomic<uint64_t> requests{0};
    std::atomic<uint64_t> refused{0};  // wrong token or undecodable (oversize: the FrameServer's)
    std::atomic<uint64_t> reads{0};
  };

 private:
  explicit TopServer(Config config);

  Config config_;
  Counters counters_;
  std::string remove_on_stop_;
  std::unique_ptr<FrameServer::Protocol> protocol_;  // declared first: outlives frames_' thread
  std::unique_ptr<FrameServer> frames_;
};

// The agent's hook: serves this node for ncclrec-top until the returned server is destroyed.
// Listens where the store does (loopback for a loopback master address, else every interface)
// on CXXRUN_TOP_PORT or a free port, writes RUN_DIR/top.HOST.endpoint (mode 0600: endpoint and
// token; removed when the server stops) and says on stderr how to connect. nullptr, after one line
// saying why, when it cannot: the job runs on without it.
std::unique_ptr<TopServer> startTopServer(const Options& options, const JobFacts& facts,
                                          const std::string& run_dir, const std::string& host);

}  // namespace ncclrec::launcher
