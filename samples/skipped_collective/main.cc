// A collective behind a data-dependent condition: each rank all-reduces its loss for the log only
// while its own loss is above a threshold ("nothing interesting to report below it"). Rank 3 gets
// easier batches; its loss drops under the threshold first and it skips the all-reduce the others
// issue. Its next gradient all-reduce meets their loss all-reduce (other shape): every rank waits.
// Fix (healthy): the condition is decided on a value every rank shares (all-reduce first), or the
// collective is issued unconditionally.
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 6;
constexpr float kReportAbove = 0.3f;

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) void logLoss(ncclComm_t comm, float* loss) {
  CHECK_NCCL(ncclAllReduce(loss, loss, 1, ncclFloat, ncclSum, comm, nullptr));
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "skipped_collective");
  const float difficulty = job.rank == job.world - 1 ? 0.5f : 1.0f;
  std::vector<float> grads(4096, 1.0f);
  for (int step = 0; step < kSteps; ++step) {
    trainStep(job.comm, grads);
    float loss = difficulty / static_cast<float>(step + 1);
    if (job.healthy || loss > kReportAbove) logLoss(job.comm, &loss);
  }
  samples::finish(job);
  return 0;
}
