// Two communicators used in opposite orders: ranks are paired (0-1, 2-3) and each pair shares two
// communicators, one for tensor-parallel all-reduces and one for metrics. From the first step,
// rank 1's metrics hook fires before its tensor-parallel all-reduce, while rank 0 does the
// tensor-parallel one first: rank 0 waits on the tensor communicator for rank 1, rank 1 waits on
// the metrics communicator for rank 0. Ranks 2 and 3 go on and wait for both in the next
// data-parallel all-reduce. (A rank that changes its order after earlier steps is named by its own
// history instead: skipped_collective, docs/analyzer.md.)
// Fix (healthy): the same order on every rank (issue collectives from one place, in program order).
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 5;

__attribute__((noinline)) void tensorParallelReduce(ncclComm_t tp, std::vector<float>& act) {
  CHECK_NCCL(ncclAllReduce(act.data(), act.data(), act.size(), ncclFloat, ncclSum, tp, nullptr));
}

__attribute__((noinline)) void reportMetrics(ncclComm_t metrics, float* value) {
  CHECK_NCCL(ncclAllReduce(value, value, 1, ncclFloat, ncclMax, metrics, nullptr));
}

__attribute__((noinline)) void dataParallelReduce(ncclComm_t dp, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, dp, nullptr));
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "cross_comm_deadlock");
  ncclComm_t tp = nullptr, metrics = nullptr;
  CHECK_NCCL(ncclCommSplit(job.comm, job.rank / 2, job.rank, &tp, nullptr));
  CHECK_NCCL(ncclCommSplit(job.comm, job.rank / 2, job.rank, &metrics, nullptr));
  std::vector<float> act(1024, 1.0f), grads(4096, 1.0f);
  for (int step = 0; step < kSteps; ++step) {
    float value = static_cast<float>(step);
    const bool metrics_first = !job.healthy && job.rank == 1;
    if (metrics_first) reportMetrics(metrics, &value);
    tensorParallelReduce(tp, act);
    if (!metrics_first) reportMetrics(metrics, &value);
    dataParallelReduce(job.comm, grads);
  }
  CHECK_NCCL(ncclCommDestroy(metrics));
  CHECK_NCCL(ncclCommDestroy(tp));
  samples::finish(job);
  return 0;
}
