#include "hostnccl/transfer.h"

#include <gloo/common/error.h>
#include <gloo/common/logging.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

#include "hostnccl/config.h"
#include "hostnccl/errors.h"
#include "hostnccl/profiler.h"

namespace ncclrec::hostnccl {
namespace {

// "No timeout" for Gloo's waits: long enough to never fire, short enough that Gloo's
// now() + timeout cannot overflow.
constexpr auto kForever = std::chrono::hours(24 * 365);

}  // namespace

uint64_t makeSlot(bool p2p, uint32_t signature, uint32_t seq, uint8_t step) {
  return (static_cast<uint64_t>(p2p) << 63) | (static_cast<uint64_t>(signature & 0x7fffff) << 40) |
         (static_cast<uint64_t>(seq) << 8) | step;
}

Transfer::Transfer(Comm& comm, const char* opName, uint32_t seq)
    : comm_(comm), opName_(opName), seq_(seq), deadline_(deadlineAfter(config().timeout)) {
  comm_.addTransfer(this);
}

Transfer::~Transfer() {
  comm_.removeTransfer(this);
  for (const Proxy& x : proxies_) prof::proxyStop(x.handle);
}

void Transfer::plan(int peer, bool isSend, int messages) {
  void* op = prof::currentOp();
  if (op == nullptr) return;
  for (Proxy& x : proxies_) {
    if (x.op == op && x.peer == peer && x.isSend == isSend) {
      x.planned = messages;
      return;
    }
  }
  proxies_.push_back(Proxy{op, peer, isSend, messages});
}

void* Transfer::stepFor(bool isSend, int peer, size_t bytes) {
  void* op = prof::currentOp();
  if (op == nullptr) return nullptr;
  Proxy* x = nullptr;
  for (Proxy& p : proxies_) {
    if (p.op == op && p.peer == peer && p.isSend == isSend) x = &p;
  }
  if (x == nullptr) {
    proxies_.push_back(Proxy{op, peer, isSend, 1});
    x = &proxies_.back();
  }
  if (x->handle == nullptr && x->steps == 0) {
    x->handle = prof::proxyOpStart(comm_, op, peer, isSend, std::max(x->planned, 1), bytes);
  }
  void* step = prof::proxyStepStart(comm_, x->handle, x->steps++);
  if (isSend) prof::proxyStepMoved(step, true);
  return step;
}

void Transfer::completed(Pending& p) {
  p.done = true;
  if (p.step == nullptr) return;
  if (!p.isSend) prof::proxyStepMoved(p.step, false);
  prof::proxyStop(p.step);
  p.step = nullptr;
}

bool Transfer::dropped(bool isSend, int peer, uint64_t slot) const {
  const Config& cfg = config();
  const bool p2p = (slot >> 63) != 0;
  return isSend && !p2p && cfg.dropSrc == comm_.rank && cfg.dropDst == peer &&
         seq_ + 1 >= cfg.dropFrom;
}

size_t Transfer::send(int peer, const void* data, size_t bytes, uint64_t slot) {
  // Gloo's buffer API is not const-correct; a send only reads.
  return post(true, peer, const_cast<void*>(data), bytes, slot);
}

size_t Transfer::recv(int peer, void* data, size_t bytes, uint64_t slot) {
  return post(false, peer, data, bytes, slot);
}

size_t Transfer::post(bool isSend, int peer, void* data, size_t bytes, uint64_t slot) {
  if (bytes == 0 || !postError_.empty()) return kNone;
  std::lock_guard<std::mutex> lock(abortMu_);
  if (aborted_) {
    postError_ = "aborted by ncclCommAbort";
    return kNone;
  }
  try {
    if (dropped(isSend, peer, slot)) {
      // Taken as sent (the step moved), never delivered: the receiver waits forever.
      pending_.push_back(Pending{nullptr, peer, isSend, false, stepFor(isSend, peer, bytes)});
      return pending_.size() - 1;
    }
    auto buf = comm_.context->createUnboundBuffer(data, bytes);
    if (isSend) {
      buf->send(peer, slot);
    } else {
      buf->recv(peer, slot);
    }
    pending_.push_back(Pending{std::move(buf), peer, isSend, false, stepFor(isSend, peer, bytes)});
    return pending_.size() - 1;
  } catch (const std::exception& e) {
    postError_ =
        std::string("cannot post a message to rank ") + std::to_string(peer) + ": " + e.what();
    return kNone;
  }
}

void Transfer::abortWaitLocked(Pending& p) {
  if (p.buffer == nullptr) return;
  if (p.isSend) {
    p.buffer->abortWaitSend();
  } else {
    p.buffer->abortWaitRecv();
  }
}

void Transfer::abortLocked() {
  std::lock_guard<std::mutex> lock(abortMu_);
  aborted_ = true;
  for (auto& p : pending_) abortWaitLocked(p);
}

ncclResult_t Transfer::failed(ncclResult_t code, const std::string& what) {
  char text[768];
  std::snprintf(text, sizeof(text), "hostnccl: comm %016llx rank %d/%d: %s seq %u: %s",
                static_cast<unsigned long long>(comm_.hash), comm_.rank, comm_.nranks, opName_,
                seq_, what.c_str());
  comm_.setAsyncError(code, text);
  return fail(code, "%s", text);
}

ncclResult_t Transfer::wait() {
  if (postError_.empty() && receivesFromSeveralPeers()) return waitAsTheyLand();
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (ncclResult_t rc = wait(i); rc != ncclSuccess) return rc;
  }
  return wait(kNone);
}

ncclResult_t Transfer::wait(size_t message) {
  if (!postError_.empty()) {
    bool aborted;
    {
      std::lock_guard<std::mutex> lock(abortMu_);
      aborted = aborted_;
    }
    return failed(aborted ? ncclSystemError : ncclRemoteError, postError_);
  }
  if (message == kNone || pending_[message].done) return ncclSuccess;
  // Only this thread appends to pending_, so the element stays put while we wait.
  Pending* p = &pending_[message];
  if (p->buffer != nullptr) {
    if (Outcome o = waitFor(*p); o.kind != Outcome::kLanded) return failure(*p, o);
  }
  completed(*p);
  return ncclSuccess;
}

Transfer::Outcome Transfer::waitFor(const Pending& p) const {
  std::chrono::milliseconds budget = kForever;
  if (deadline_) {
    // Rounded up, so that when Gloo gives up our deadline has passed too.
    budget =
        std::chrono::ceil<std::chrono::milliseconds>(*deadline_ - std::chrono::steady_clock::now());
    if (budget.count() < 1) budget = std::chrono::milliseconds(1);
  }
  try {
    bool landed = p.isSend ? p.buffer->waitSend(budget) : p.buffer->waitRecv(budget);
    return Outcome{landed ? Outcome::kLanded : Outcome::kAborted, {}};
  } catch (const gloo::IoException& e) {
    // Gloo's own timeout says "Timed out"; other pairs it closes on that occasion report
    // "Application timeout caused pair closure".
    bool timedOut = deadline_ && (std::chrono::steady_clock::now() >= *deadline_ ||
                                  std::strstr(e.what(), "Timed out") != nullptr ||
                                  std::strstr(e.what(), "Application timeout") != nullptr);
    return Outcome{timedOut ? Outcome::kTimedOut : Outcome::kLost, e.what()};
  } catch (const gloo::EnforceNotMet& e) {
    return Outcome{Outcome::kGlooEnforce, e.what()};
  } catch (const std::exception& e) {
    return Outcome{Outcome::kOther, e.what()};
  } catch (...) {
    return Outcome{Outcome::kOther, "an exception of unknown type"};
  }
}

ncclResult_t Transfer::failure(const Pending& p, const Outcome& o) {
  const std::string where =
      std::string(p.isSend ? "send to" : "receive from") + " rank " + std::to_string(p.peer);
  switch (o.kind) {
    case Outcome::kLanded:
      return ncclSuccess;
    case Outcome::kAborted:
      return failed(ncclSystemError, "aborted by ncclCommAbort while waiting to " + where);
    case Outcome::kTimedOut: {
      char secs[32];
      std::snprintf(secs, sizeof(secs), "%.3g", config().timeout.count() / 1000.0);
      return failed(ncclSystemError, std::string("timed out after ") + secs +
                                         " s (HOSTNCCL_TIMEOUT) waiting to " + where);
    }
    case Outcome::kLost:
      return failed(ncclRemoteError, "connection lost while waiting to " + where + ": " + o.what);
    case Outcome::kGlooEnforce:
      return failed(ncclInternalError, "transport error: " + o.what);
    case Outcome::kOther:
      break;
  }
  return failed(ncclSystemError, "transport error: " + o.what);
}

bool Transfer::receivesFromSeveralPeers() const {
  int first = -1;
  for (const Pending& p : pending_) {
    if (p.done || p.isSend || p.buffer == nullptr) continue;
    if (first == -1) {
      first = p.peer;
    } else if (p.peer != first) {
      return true;
    }
  }
  return false;
}

// One helper thread per receive waits for it and hands its outcome to this thread, which
// completes the receives (and sends their profiler events) in the order they land; then the sends,
// in post order (a send's step moved when it was posted). At the first failure the other waits
// are aborted: the communicator is unusable from then on. A timeout is reported for the first
// receive in post order that did not land, as the post-order wait would (every pending wait fails
// with it, in no fixed order); any other failure for its own message.
ncclResult_t Transfer::waitAsTheyLand() {
  std::vector<size_t> open;
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (!pending_[i].done && !pending_[i].isSend && pending_[i].buffer != nullptr) {
      open.push_back(i);
    }
  }
  // Nothing below allocates while helpers run (`landed` has room for every outcome and is never
  // reallocated), so nothing can throw out of this frame before they are joined.
  struct Landing {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::pair<size_t, Outcome>> landed;
  } landing;
  landing.landed.reserve(open.size());
  std::vector<bool> reported(pending_.size(), false);
  std::vector<std::thread> helpers;
  helpers.reserve(open.size());
  for (size_t i : open) {
    try {
      helpers.emplace_back([this, &landing, i] {
        Outcome o{Outcome::kOther, {}};
        try {
          o = waitFor(pending_[i]);
        } catch (...) {
          // waitFor catches everything; only building its text could fail here
        }
        std::lock_guard<std::mutex> lock(landing.mu);
        landing.landed.emplace_back(i, std::move(o));
        landing.cv.notify_one();
      });
    } catch (const std::system_error&) {
      break;  // no thread to be had: this thread waits for the rest itself, below
    }
  }
  std::optional<std::pair<size_t, Outcome>> first;
  for (size_t seen = 0; seen < helpers.size(); ++seen) {
    std::pair<size_t, Outcome> item;
    {
      std::unique_lock<std::mutex> lock(landing.mu);
      landing.cv.wait(lock, [&] { return landing.landed.size() > seen; });
      item = std::move(landing.landed[seen]);
    }
    const size_t i = item.first;
    reported[i] = true;
    if (item.second.kind == Outcome::kLanded) {
      completed(pending_[i]);
    } else if (!first) {
      first.emplace(std::move(item));
      std::lock_guard<std::mutex> lock(abortMu_);
      for (size_t j : open) {
        if (!reported[j]) abortWaitLocked(pending_[j]);
      }
    }
  }
  for (std::thread& t : helpers) t.join();
  if (first) {
    if (first->second.kind == Outcome::kTimedOut) {
      for (size_t j : open) {
        if (!pending_[j].done) return failure(pending_[j], first->second);
      }
    }
    return failure(pending_[first->first], first->second);
  }
  // The sends, and any receive no thread could be had for.
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (ncclResult_t rc = wait(i); rc != ncclSuccess) return rc;
  }
  return ncclSuccess;
}

}  // namespace ncclrec::hostnccl
