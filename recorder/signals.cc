#include "recorder/signals.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <ctime>

#include "format/bbox_ring.h"
#include "recorder/clock.h"

namespace ncclrec::recorder {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL};

std::atomic<format::BboxHeader*> g_header{nullptr};
std::atomic<int> g_wake_fd{-1};
std::atomic<bool> g_dump_pending{false};
struct sigaction g_prev_dump;
struct sigaction g_prev_fatal[NSIG];
int g_dump_signal = 0;
bool g_installed = false;

void wake() {
  const int fd = g_wake_fd.load(std::memory_order_relaxed);
  const uint64_t one = 1;
  if (fd >= 0) (void)!write(fd, &one, sizeof(one));
}

void chain(const struct sigaction& prev, int sig, siginfo_t* info, void* ctx) {
  if ((prev.sa_flags & SA_SIGINFO) != 0) {
    if (prev.sa_sigaction != nullptr) prev.sa_sigaction(sig, info, ctx);
  } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN &&
             prev.sa_handler != nullptr) {
    prev.sa_handler(sig);
  }
}

void onDumpSignal(int sig, siginfo_t* info, void* ctx) {
  const int saved_errno = errno;
  g_dump_pending.store(true, std::memory_order_relaxed);
  wake();
  chain(g_prev_dump, sig, info, ctx);
  errno = saved_errno;
}

void onFatalSignal(int sig, siginfo_t* info, void* ctx) {
  format::BboxHeader* h = g_header.load(std::memory_order_relaxed);
  if (h != nullptr) {
    format::atomicField(h->fatal_ns).store(realtimeNs(), std::memory_order_relaxed);
    int32_t none = 0;
    format::atomicField(h->fatal_signal)
        .compare_exchange_strong(none, sig, std::memory_order_release);
  }
  const struct sigaction& prev = g_prev_fatal[sig];
  const bool prev_is_function = (prev.sa_flags & SA_SIGINFO) != 0
                                    ? prev.sa_sigaction != nullptr
                                    : (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN);
  if (prev_is_function) {
    chain(prev, sig, info, ctx);
    return;
  }
  // Default action: restore it and re-deliver. A fault re-executes the faulting instruction on
  // return; a sent signal is pending (blocked during this handler) and is delivered on return.
  sigaction(sig, &prev, nullptr);
  raise(sig);
}

}  // namespace

void installSignalHandlers(format::BboxHeader* header, int wake_fd, int dump_signal,
                           bool fatal_signals) {
  g_header.store(header, std::memory_order_relaxed);
  g_wake_fd.store(wake_fd, std::memory_order_relaxed);
  if (g_installed) return;
  g_installed = true;
  if (dump_signal > 0) {
    struct sigaction sa {};
    sa.sa_sigaction = onDumpSignal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(dump_signal, &sa, &g_prev_dump) == 0) g_dump_signal = dump_signal;
  }
  if (fatal_signals) {
    for (int sig : kFatalSignals) {
      struct sigaction sa {};
      sa.sa_sigaction = onFatalSignal;
      sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
      sigemptyset(&sa.sa_mask);
      sigaction(sig, &sa, &g_prev_fatal[sig]);
    }
  }
}

void forgetSignalTargets() {
  g_header.store(nullptr, std::memory_order_relaxed);
  g_wake_fd.store(-1, std::memory_order_relaxed);
  g_dump_pending.store(false, std::memory_order_relaxed);
}

bool takeSignalDumpRequest() { return g_dump_pending.exchange(false, std::memory_order_relaxed); }

}  // namespace ncclrec::recorder
