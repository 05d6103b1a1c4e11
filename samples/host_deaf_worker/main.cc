// A rank stuck in host code, waiting for a worker that cannot be asked where it is: the last rank
// joins its data loader thread, which blocks every signal (as some I/O libraries do in their
// threads) and then waits for a shard that never comes. The rank's own thread answers the thread
// snapshot from waitForLoader(); the loader cannot (the snapshot signal is blocked), so it is
// listed with its kernel state instead of a stack. The others wait in the gradient all-reduce.
// Fix (healthy): the shard arrives. In real jobs: join with a deadline, and report a worker that
// waits for longer than it should.
#include <pthread.h>
#include <signal.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 6;
constexpr int kBadStep = 3;

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) void loaderMain(bool shard_lost) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::mutex m;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(m);
  cv.wait(lock, [&] { return !shard_lost; });  // the bug: the shard never arrives
}

__attribute__((noinline)) void waitForLoader(bool shard_lost) {
  std::thread loader(loaderMain, shard_lost);
  loader.join();
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "host_deaf_worker");
  std::vector<float> grads(4096, 1.0f);
  for (int step = 0; step < kSteps; ++step) {
    waitForLoader(!job.healthy && job.rank == job.world - 1 && step == kBadStep);
    trainStep(job.comm, grads);
  }
  samples::finish(job);
  return 0;
}
