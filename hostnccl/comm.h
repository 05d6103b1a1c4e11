// A communicator: one Gloo context (a full TCP mesh) plus NCCL's per-communicator state.
//
// Threads: NCCL lets a program use one communicator from one thread at a time, except that
// ncclCommAbort (and ncclCommRevoke) may be called from another thread to unblock it. State used
// by both sides (in-flight transfers, abort, async error) is guarded by mu_; everything else is
// owned by the calling thread.
#pragma once

#include <gloo/rendezvous/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hostnccl/async.h"
#include "hostnccl/net.h"
#include "hostnccl/unique_id.h"
#include "third_party/nccl/nccl.h"

namespace ncclrec::hostnccl {

class Transfer;

struct PreMulSumOp {
  bool inUse = false;
  ncclDataType_t dtype = ncclFloat32;
  ncclScalarResidence_t residence = ncclScalarHostImmediate;
  alignas(8) unsigned char value[8] = {};  // the scalar, for ncclScalarHostImmediate
  const void* pointer = nullptr;           // read at each call, for ncclScalarDevice
};

class Comm {
 public:
  static constexpr uint64_t kMagic = 0x4c43434e54534f48ull;  // "HOSTNCCL"
  Comm() = default;
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  uint64_t magic = kMagic;
  int rank = 0;
  int nranks = 0;
  int cudaDev = 0;
  // ncclConfig_t::blocking at creation: false makes calls return ncclInProgress (async.h).
  bool blocking = true;
  // False while a nonblocking init joins in the background (it writes the fields above and the
  // connections): Abort waits for it instead of racing it.
  std::atomic<bool> joined{true};
  // Equal on all ranks of the communicator (hash of its secret); names it in messages.
  uint64_t hash = 0;
  Secret secret{};
  // Each rank's rendezvous service address, learned at init: where a split or shrink child's
  // root can be reached without the parent's root.
  std::vector<SockAddr> serviceAddrs;
  std::shared_ptr<gloo::rendezvous::Context> context;

  // Issue-order counters: collectives share one; p2p has one per peer and direction.
  uint32_t collSeq = 0;
  std::vector<uint32_t> sendSeq;
  std::vector<uint32_t> recvSeq;
  uint32_t splitCount = 0;
  uint32_t shrinkCount = 0;
  std::vector<PreMulSumOp> preMulSumOps;
  // Reused temporary space of the collectives (one operation at a time per communicator).
  std::vector<unsigned char> scratch;
  // The profiler plugin's state for this communicator (profiler.h): its context and event mask
  // from init, and the per-collective-type sequence numbers of Coll events.
  void* profContext = nullptr;
  int profMask = 0;
  bool profInited = false;
  uint64_t profCollSeq[16] = {};

  // --- shared with ncclCommAbort / ncclCommRevoke, guarded by mu_ ---
  // Called by an operation before it posts transfers; false (with an error set) if the
  // communicator is aborted, revoked or already failed.
  ncclResult_t enter(const char* opName);
  void leave();
  void addTransfer(Transfer* t);
  void removeTransfer(Transfer* t);
  // Records the first asynchronous error; later ones are dropped. Closes the connections so no
  // transfer still in flight can touch a buffer the program gets back.
  void setAsyncError(ncclResult_t code, const std::string& message);
  ncclResult_t asyncError() const { return asyncError_.load(); }
  std::string asyncErrorMessage();
  // Aborts every in-flight transfer, closes the connections and waits until no call is inside
  // the communicator; later calls fail. The caller decides whether to free it (Abort) or not
  // (Revoke, Shrink with NCCL_SHRINK_ABORT).
  void abortAll(const char* why);
  bool aborted();

  // Nonblocking communicators (async.h): the background call in flight, if any.
  void setWork(std::shared_ptr<AsyncWork> work);
  bool busy();
  // Waits until no background call runs.
  void waitWork();
  // What ncclCommGetAsyncError reports: the async error, else ncclInProgress while a background
  // call runs, else ncclSuccess.
  ncclResult_t asyncState();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int active_ = 0;
  bool aborted_ = false;
  std::vector<Transfer*> transfers_;
  std::atomic<ncclResult_t> asyncError_{ncclSuccess};
  std::string asyncMessage_;
  std::shared_ptr<AsyncWork> work_;
};

// The validity check for a ncclComm_t a program hands us: non-null and live (created here and
// not yet destroyed). Lookups take a process-wide lock; never on a per-element path.
void registerComm(Comm* c);
void unregisterComm(Comm* c);
bool isLiveComm(const Comm* c);

}  // namespace ncclrec::hostnccl

// ncclComm_t is `struct ncclComm*` in the C API.
struct ncclComm final : public ncclrec::hostnccl::Comm {};
