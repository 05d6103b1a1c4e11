#include "hostnccl/comm.h"

#include <algorithm>
#include <mutex>
#include <unordered_set>
#include <utility>

#include "hostnccl/errors.h"
#include "hostnccl/profiler.h"
#include "hostnccl/transfer.h"

namespace ncclrec::hostnccl {
namespace {

struct LiveComms {
  std::mutex mu;
  std::unordered_set<const Comm*> set;
};

LiveComms& liveComms() {
  static LiveComms* l = new LiveComms;  // leaked: used by atexit-time destroys
  return *l;
}

void closeQuietly(const std::shared_ptr<gloo::rendezvous::Context>& context) {
  if (!context) return;
  try {
    context->closeConnections();
  } catch (...) {
    // A pair that never connected has nothing to close.
  }
}

}  // namespace

Comm::~Comm() {
  prof::commFinalize(*this);
  magic = 0;
  try {
    context.reset();
  } catch (...) {
  }
}

ncclResult_t Comm::enter(const char* opName) {
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_) {
    return fail(ncclInvalidUsage, "%s: communicator %016llx was aborted or revoked", opName,
                static_cast<unsigned long long>(hash));
  }
  ncclResult_t err = asyncError_.load();
  if (err != ncclSuccess) {
    return fail(err, "%s: communicator %016llx is in error state: %s", opName,
                static_cast<unsigned long long>(hash), asyncMessage_.c_str());
  }
  ++active_;
  return ncclSuccess;
}

void Comm::leave() {
  std::lock_guard<std::mutex> lock(mu_);
  --active_;
  cv_.notify_all();
}

void Comm::addTransfer(Transfer* t) {
  std::lock_guard<std::mutex> lock(mu_);
  transfers_.push_back(t);
}

void Comm::removeTransfer(Transfer* t) {
  std::lock_guard<std::mutex> lock(mu_);
  transfers_.erase(std::remove(transfers_.begin(), transfers_.end(), t), transfers_.end());
}

bool Comm::aborted() {
  std::lock_guard<std::mutex> lock(mu_);
  return aborted_;
}

void Comm::setAsyncError(ncclResult_t code, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ncclResult_t expected = ncclSuccess;
    if (asyncError_.compare_exchange_strong(expected, code)) asyncMessage_ = message;
  }
  closeQuietly(context);
}

std::string Comm::asyncErrorMessage() {
  std::lock_guard<std::mutex> lock(mu_);
  return asyncMessage_;
}

void Comm::abortAll(const char* why) {
  std::unique_lock<std::mutex> lock(mu_);
  aborted_ = true;
  for (Transfer* t : transfers_) t->abortLocked();
  lock.unlock();
  closeQuietly(context);
  lock.lock();
  // The aborted calls return promptly (their waits were interrupted); wait for them to leave so
  // the caller may free the communicator.
  cv_.wait(lock, [this] { return active_ == 0; });
  logInfo("communicator %016llx rank %d: %s", static_cast<unsigned long long>(hash), rank, why);
}

void Comm::setWork(std::shared_ptr<AsyncWork> work) {
  std::lock_guard<std::mutex> lock(mu_);
  work_ = std::move(work);
}

bool Comm::busy() {
  std::shared_ptr<AsyncWork> w;
  {
    std::lock_guard<std::mutex> lock(mu_);
    w = work_;
  }
  return w && !w->done();
}

void Comm::waitWork() {
  std::shared_ptr<AsyncWork> w;
  {
    std::lock_guard<std::mutex> lock(mu_);
    w = work_;
  }
  if (w) w->wait();
}

ncclResult_t Comm::asyncState() {
  const ncclResult_t err = asyncError_.load();
  if (err != ncclSuccess) return err;
  return busy() ? ncclInProgress : ncclSuccess;
}

void registerComm(Comm* c) {
  LiveComms& l = liveComms();
  std::lock_guard<std::mutex> lock(l.mu);
  l.set.insert(c);
}

void unregisterComm(Comm* c) {
  LiveComms& l = liveComms();
  std::lock_guard<std::mutex> lock(l.mu);
  l.set.erase(c);
}

bool isLiveComm(const Comm* c) {
  if (c == nullptr) return false;
  LiveComms& l = liveComms();
  std::lock_guard<std::mutex> lock(l.mu);
  return l.set.count(c) != 0 && c->magic == Comm::kMagic;
}

}  // namespace ncclrec::hostnccl
