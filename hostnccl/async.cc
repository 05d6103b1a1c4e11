#include "hostnccl/async.h"

#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "hostnccl/comm.h"
#include "hostnccl/errors.h"

namespace ncclrec::hostnccl {

void AsyncWork::finish(ncclResult_t /*rc*/) {
  std::lock_guard<std::mutex> lock(mu_);
  done_ = true;
  cv_.notify_all();
}

bool AsyncWork::done() {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void AsyncWork::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return done_; });
}

ncclResult_t launchAsync(const std::vector<Comm*>& comms, std::function<ncclResult_t()> work,
                         const char* name) {
  for (Comm* c : comms) {
    if (c->busy()) {
      return fail(ncclInvalidUsage,
                  "%s: communicator %016llx still runs an earlier nonblocking call; poll "
                  "ncclCommGetAsyncError until it is no longer ncclInProgress",
                  name, static_cast<unsigned long long>(c->hash));
    }
  }
  auto token = std::make_shared<AsyncWork>();
  for (Comm* c : comms) c->setWork(token);
  try {
    // The communicators outlive the thread: Destroy and Abort wait for their work to finish.
    std::thread([token, comms, work = std::move(work)] {
      ncclResult_t rc = ncclInternalError;
      try {
        rc = work();
      } catch (...) {
        rc = ncclInternalError;
      }
      if (rc != ncclSuccess) {
        const std::string why = lastError();
        for (Comm* c : comms) c->setAsyncError(rc, why);
      }
      token->finish(rc);
    }).detach();
  } catch (const std::system_error& e) {
    token->finish(ncclSystemError);
    return fail(ncclSystemError, "%s: cannot start a thread: %s", name, e.what());
  }
  return ncclInProgress;
}

}  // namespace ncclrec::hostnccl
