// Two processes that claim one rank: the job runs on two nodes of two ranks each (played here on
// one machine: ranks 0-1 are node 0, ranks 2-3 node 1), and the set-up code passes LOCAL_RANK
// where the global RANK was meant. The second node's ranks join as ranks 0 and 1 again; NCCL's
// bootstrap root stops at the second claim of a rank, nobody joins as ranks 2 and 3, and every
// member waits in ncclCommInitRank forever.
// Fix (healthy): the communicator rank is the global rank (RANK), not the node-local one.
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kRanksPerNode = 2;
constexpr int kSteps = 3;

__attribute__((noinline)) ncclComm_t initProcessGroup(const samples::Job& job) {
  const int local_rank = job.rank % kRanksPerNode;
  ncclUniqueId id{};
  try {
    id = samples::shareUniqueId(job.rank, samples::uniqueIdPath("local_rank_as_rank"));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: cannot share the NCCL unique id: %s\n", job.rank, e.what());
    std::exit(1);
  }
  ncclComm_t comm = nullptr;
  CHECK_NCCL(ncclCommInitRank(&comm, job.world, id, job.healthy ? job.rank : local_rank));
  return comm;
}

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::parse(argc, argv);
  job.comm = initProcessGroup(job);
  std::vector<float> grads(4096, 1.0f);
  for (int step = 0; step < kSteps; ++step) trainStep(job.comm, grads);
  samples::finish(job);
  return 0;
}
