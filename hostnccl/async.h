// Nonblocking communicators (ncclConfig_t::blocking = 0), as NCCL has them: a call that would
// block returns ncclInProgress at once and its work runs on a background thread; the program polls
// ncclCommGetAsyncError until it says ncclSuccess (the work is done: with host memory the data is
// in place) or an error. Until then the only calls allowed on the communicator are
// ncclCommGetAsyncError and ncclCommAbort; others are refused with ncclInvalidUsage.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

#include "third_party/nccl/nccl.h"

namespace ncclrec::hostnccl {

class Comm;

// One background call, shared by every communicator it involves (a group may span several).
class AsyncWork {
 public:
  void finish(ncclResult_t rc);
  bool done();
  void wait();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

// Runs `work` on a new thread for `comms` (all nonblocking) and returns ncclInProgress; a
// failure becomes the async error of each of them. ncclInvalidUsage when one of them still runs
// an earlier call; ncclSystemError when no thread can be started.
ncclResult_t launchAsync(const std::vector<Comm*>& comms, std::function<ncclResult_t()> work,
                         const char* name);

}  // namespace ncclrec::hostnccl
