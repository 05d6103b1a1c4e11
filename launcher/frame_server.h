// A TCP server on a thread of its own for a protocol of frames (a 4-byte little-endian length,
// then that many bytes): the listening socket, one poll() loop over every connection, buffering
// both ways, and stopping. cxxrun's store (store_server.h) and the ncclrec-top server
// (top_server.h) supply what a frame means through FrameServer::Protocol. Their clients share one
// framed-TCP client, format/frame_client.h, which also defines the frame itself.
//
// A slow or misbehaving client costs the others nothing: sockets are non-blocking, a frame longer
// than the limit drops its connection, and a reply waits in the connection's buffer until the
// client reads it.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "base/status.h"

namespace ncclrec::launcher {

class FrameServer {
 public:
  struct Conn {
    uint64_t id = 0;
    int fd = -1;
    bool authed = false;   // for the protocol: the client has proven it belongs to the job
    bool closing = false;  // hang up once `out` is sent (after refusing the client)
    std::string in;        // bytes received and not yet a whole frame
    std::string out;       // framed replies not yet sent
  };
  using Conns = std::map<uint64_t, Conn>;

  // Runs on the server thread only.
  class Protocol {
   public:
    virtual ~Protocol() = default;
    // One whole frame (without its length) from `c`: queue replies on c.out (framed), set
    // c.closing to hang up once they are sent. False: a protocol violation, `c` is dropped.
    virtual bool onFrame(Conn& c, std::string_view body) = 0;
    // How long the loop may sleep with nothing to do; -1: until something happens.
    virtual int pollTimeoutMs() { return -1; }
    // After each round of reads and writes: work not tied to one frame (replies that waited for
    // another client, deadlines). Replies queued here go out in the next round.
    virtual void afterRound(Conns& /*conns*/) {}
  };

  // Binds `bind_addr` ("" or "0.0.0.0": every interface; else an IPv4 address) and `port` (0: a
  // free one) and listens; does not serve yet. Errors begin with `what` ("store: cannot listen on
  // 127.0.0.1:29500: Address already in use"); *addr_in_use tells a busy port apart.
  static base::StatusOr<std::unique_ptr<FrameServer>> listen(const std::string& what,
                                                             const std::string& bind_addr, int port,
                                                             uint32_t max_frame,
                                                             bool* addr_in_use = nullptr);
  // Starts the server thread. `protocol` must outlive this object (declare it before).
  void serve(Protocol* protocol);
  ~FrameServer();  // stops the thread and closes every connection

  FrameServer(const FrameServer&) = delete;
  FrameServer& operator=(const FrameServer&) = delete;

  int port() const { return port_; }
  uint64_t accepted() const { return accepted_.load(); }
  uint64_t violations() const { return violations_.load(); }  // connections dropped for one

  // The frame around `body`, as onFrame's replies must be queued.
  static std::string frame(std::string_view body);

 private:
  FrameServer(int listen_fd, int port, int wake_read, int wake_write, uint32_t max_frame);
  void loop(Protocol* protocol);

  int listen_fd_;
  int port_;
  int wake_read_;
  int wake_write_;
  uint32_t max_frame_;
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> violations_{0};
  std::thread thread_;
};

}  // namespace ncclrec::launcher
