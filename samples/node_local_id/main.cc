// One communicator given two unique ids: the job runs on two nodes of two ranks each (played here
// on one machine: ranks 0-1 are node 0, ranks 2-3 node 1). The set-up code makes the id where the
// node-local rank is 0 and shares it through a node-local file, where the global rank 0 was
// meant: each node makes its own id, and each half waits in ncclCommInitRank for the two ranks of
// a 4-rank communicator that joined the other id. Neither id can ever fill.
// Fix (healthy): the job's rank 0 alone makes the id, and every rank reads that one (through the
// launcher's store or a shared file system).
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kRanksPerNode = 2;
constexpr int kSteps = 3;

__attribute__((noinline)) ncclComm_t initProcessGroup(const samples::Job& job) {
  const int node = job.rank / kRanksPerNode;
  const int local_rank = job.rank % kRanksPerNode;
  const bool maker = job.healthy ? job.rank == 0 : local_rank == 0;
  const std::string path =
      job.healthy ? samples::uniqueIdPath("node_local_id", "job")
                  : samples::uniqueIdPath("node_local_id", "node" + std::to_string(node));
  ncclUniqueId id{};
  try {
    id = samples::shareUniqueIdFrom(maker, job.rank, path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: cannot share the NCCL unique id: %s\n", job.rank, e.what());
    std::exit(1);
  }
  ncclComm_t comm = nullptr;
  CHECK_NCCL(ncclCommInitRank(&comm, job.world, id, job.rank));
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
