// One operation's point-to-point messages over a communicator's Gloo mesh: post sends and
// receives (non-blocking), then wait for all of them. This is the only place that waits on Gloo,
// so it is where timeouts, peer failures and ncclCommAbort turn into NCCL result codes.
//
// Messages from several peers are counted as they land (see wait()): a peer whose data stopped
// coming must not hold back the profiler events of those whose data came, or the transport's
// counters would show every connection of a gather's root stuck behind the first one.
//
// Every message travels on a 64-bit Gloo slot that encodes what the operation is (see
// makeSlot), so messages of two different operations never pair: a mismatch hangs (or times
// out) instead of delivering wrong data.
#pragma once

#include <gloo/transport/unbound_buffer.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hostnccl/comm.h"
#include "hostnccl/net.h"

namespace ncclrec::hostnccl {

// Slot layout: bit 63 = p2p, bits 40..62 = 23-bit signature of the operation (kind, count,
// datatype, redop, root), bits 8..39 = sequence number, bits 0..7 = step within the algorithm.
uint64_t makeSlot(bool p2p, uint32_t signature, uint32_t seq, uint8_t step);

class Transfer {
 public:
  // `opName` and `seq` name the operation in error messages ("AllReduce seq 17").
  Transfer(Comm& comm, const char* opName, uint32_t seq);
  ~Transfer();
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  static constexpr size_t kNone = static_cast<size_t>(-1);

  // How many messages the running operation (prof::currentOp()) will post to or from `peer`:
  // the nSteps of their profiler ProxyOp event. Without a plan, a ProxyOp announces one.
  void plan(int peer, bool isSend, int messages);

  // Zero-byte messages are skipped (both sides compute the same sizes) and return kNone.
  // Posting never blocks; the result identifies the message for wait(size_t).
  size_t send(int peer, const void* data, size_t bytes, uint64_t slot);
  size_t recv(int peer, void* data, size_t bytes, uint64_t slot);
  // Waits for one message (kNone: returns at once), or for everything posted so far. On failure
  // records the communicator's async error and returns its code; the communicator is then
  // unusable, as with NCCL. When what is left includes receives from two or more peers, wait()
  // waits for each receive on a thread of its own and completes them in the order they land, then
  // the sends; otherwise (a ring's sends, one peer's messages, which land in order) in post order.
  ncclResult_t wait(size_t message);
  ncclResult_t wait();

  // Called by Comm::abortAll with the communicator's lock held.
  void abortLocked();

 private:
  struct Pending {
    std::unique_ptr<gloo::transport::UnboundBuffer> buffer;  // nullptr: dropped (a test fault)
    int peer;
    bool isSend;
    bool done = false;
    void* step = nullptr;  // its profiler ProxyStep event
  };
  // The profiler ProxyOp of one (operation, peer, direction).
  struct Proxy {
    void* op;
    int peer;
    bool isSend;
    int planned;
    void* handle = nullptr;
    int steps = 0;
  };
  // How waiting for one message ended, before it becomes an NCCL result (failure()).
  struct Outcome {
    enum Kind { kLanded, kAborted, kTimedOut, kLost, kGlooEnforce, kOther } kind;
    std::string what;  // Gloo's text, for kLost, kGlooEnforce and kOther
  };
  size_t post(bool isSend, int peer, void* data, size_t bytes, uint64_t slot);
  // Blocks until message `p` landed or failed. Safe to call from a helper thread: it reads only
  // `p` and what the constructor set.
  Outcome waitFor(const Pending& p) const;
  ncclResult_t failure(const Pending& p, const Outcome& o);
  bool receivesFromSeveralPeers() const;
  ncclResult_t waitAsTheyLand();
  void abortWaitLocked(Pending& p);
  bool dropped(bool isSend, int peer, uint64_t slot) const;
  void* stepFor(bool isSend, int peer, size_t bytes);
  void completed(Pending& p);
  ncclResult_t failed(ncclResult_t code, const std::string& what);

  Comm& comm_;
  const char* opName_;
  uint32_t seq_;
  Deadline deadline_;
  // Guards pending_ and aborted_ against abortLocked(); lock order: Comm's lock, then this.
  std::mutex abortMu_;
  bool aborted_ = false;
  std::vector<Pending> pending_;  // appended only by the owning thread
  std::string postError_;         // a failure while posting, reported by wait()
  std::vector<Proxy> proxies_;    // the owning thread's only
};

}  // namespace ncclrec::hostnccl
