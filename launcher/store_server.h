// cxxrun's key-value store: a TCP server on its own thread, served by the node-rank-0 agent.
// Workers reach it through store_client.h (CXXRUN_STORE=host:port, CXXRUN_TOKEN).
//
// One thread serves every connection with poll(); a blocked get/wait is a pending entry, not a
// blocked thread, so any number of clients may wait at once. A client that sends a wrong token,
// an oversize frame or bytes that do not decode is disconnected; the others never notice.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "launcher/frame_server.h"

namespace ncclrec::launcher {

class StoreServer {
 public:
  struct Stats {
    uint64_t accepted = 0;
    uint64_t dropped = 0;  // connections closed for a protocol violation or a wrong token
  };

  // Listens on `bind_addr` ("" or "0.0.0.0": every interface) and `port` (0: a free port) and
  // starts serving. On failure *addr_in_use tells a busy port apart from other errors.
  static base::StatusOr<std::unique_ptr<StoreServer>> start(const std::string& bind_addr, int port,
                                                            std::string token,
                                                            bool* addr_in_use = nullptr);
  ~StoreServer();  // stops the thread and closes every connection
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  int port() const;
  Stats stats() const;

 private:
  StoreServer();

  std::atomic<uint64_t> refused_{0};                // wrong tokens
  std::unique_ptr<FrameServer::Protocol> service_;  // declared first: outlives frames_' thread
  std::unique_ptr<FrameServer> frames_;
};

}  // namespace ncclrec::launcher
