// Ranks that disagree on the size of a communicator: the job makes an evaluation communicator of
// all ranks, sized by each rank from its own copy of the run config; rank 1's copy still says 3
// ranks. NCCL's bootstrap root keeps the first size it hears and stops at the first that differs:
// every member waits in ncclCommInitRank forever.
// Fix (healthy): pass the same nranks (the job's size, or the group's from one shared config) on
// every member.
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 3;

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) ncclComm_t buildEvalGroup(const samples::Job& job, int configured) {
  ncclUniqueId id{};
  try {
    id = samples::shareUniqueId(job.rank, samples::uniqueIdPath("init_world_size", "eval"));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: cannot share the NCCL unique id: %s\n", job.rank, e.what());
    std::exit(1);
  }
  ncclComm_t comm = nullptr;
  CHECK_NCCL(ncclCommInitRank(&comm, configured, id, job.rank));
  return comm;
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "init_world_size");
  // The size each rank's copy of the config gives; rank 1's copy predates the fourth rank.
  const int configured = job.healthy || job.rank != 1 ? job.world : job.world - 1;
  std::vector<float> grads(4096, 1.0f);
  trainStep(job.comm, grads);
  ncclComm_t eval = buildEvalGroup(job, configured);
  for (int step = 0; step < kSteps; ++step) trainStep(eval, grads);
  CHECK_NCCL(ncclCommDestroy(eval));
  samples::finish(job);
  return 0;
}
