// A rank stuck in host code, deadlocked on two mutexes: at one step the last rank updates its
// statistics (stats lock, then log lock) while its logger thread flushes (log lock, then stats
// lock). Each holds one lock and waits for the other; the rank never reaches its next NCCL call,
// the others wait in the gradient all-reduce. Its thread snapshot shows both threads asleep in
// their lock calls, the rank's own thread in updateStats().
// Fix (healthy): both take the locks in one order (std::scoped_lock). In real jobs: one lock order,
// or std::scoped_lock for several.
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 6;
constexpr int kBadStep = 3;

std::mutex g_stats_mu;
std::mutex g_log_mu;

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

// Both threads hold their first lock before either takes its second, so the cycle always closes
// in the faulty mode (a step of the bug made deterministic).
struct Rendezvous {
  std::mutex m;
  std::condition_variable cv;
  int arrived = 0;
  void meet() {
    std::unique_lock<std::mutex> lock(m);
    if (++arrived == 2) cv.notify_all();
    cv.wait(lock, [&] { return arrived == 2; });
  }
};

__attribute__((noinline)) void flushLog(bool wrong_order, Rendezvous* both) {
  if (!wrong_order) {
    const std::scoped_lock lock(g_stats_mu, g_log_mu);
    return;
  }
  const std::lock_guard<std::mutex> log(g_log_mu);
  both->meet();
  const std::lock_guard<std::mutex> stats(g_stats_mu);  // the bug: the other order
}

__attribute__((noinline)) void updateStats(bool wrong_order) {
  Rendezvous both;
  std::thread logger(flushLog, wrong_order, &both);
  if (!wrong_order) {
    { const std::scoped_lock lock(g_stats_mu, g_log_mu); }
  } else {
    const std::lock_guard<std::mutex> stats(g_stats_mu);
    both.meet();
    const std::lock_guard<std::mutex> log(g_log_mu);
  }
  logger.join();
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "host_lock_cycle");
  std::vector<float> grads(4096, 1.0f);
  for (int step = 0; step < kSteps; ++step) {
    updateStats(!job.healthy && job.rank == job.world - 1 && step == kBadStep);
    trainStep(job.comm, grads);
  }
  samples::finish(job);
  return 0;
}
