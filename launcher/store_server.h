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
#include <thread>

#include "recorder/format/status.h"

namespace ncclrec::launcher {

class StoreServer {
 public:
  struct Stats {
    uint64_t accepted = 0;
    uint64_t dropped = 0;  // connections closed for a protocol violation
  };

  // Listens on `bind_addr` ("" or "0.0.0.0": every interface) and `port` (0: a free port) and
  // starts serving. On failure *addr_in_use tells a busy port apart from other errors.
  static format::StatusOr<std::unique_ptr<StoreServer>> start(const std::string& bind_addr,
                                                              int port, std::string token,
                                                              bool* addr_in_use = nullptr);
  ~StoreServer();  // stops the thread and closes every connection
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  int port() const { return port_; }
  Stats stats() const { return {accepted_.load(), dropped_.load()}; }

 private:
  StoreServer(int listen_fd, int port, int wake_read, int wake_write, std::string token);
  void serve();

  int listen_fd_;
  int port_;
  int wake_read_;
  int wake_write_;
  std::string token_;
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> dropped_{0};
  std::thread thread_;
};

}  // namespace ncclrec::launcher
