// A bootstrap that cannot connect: the job runs on two nodes, and node 0's launch script still
// exports NCCL_SOCKET_IFNAME=lo from a single-node debugging session. Rank 0 makes the unique id,
// which then names its loopback address as the bootstrap root; the ranks of node 1 connect to
// their own loopback, where nobody listens: they retry (about a minute, as NCCL does) and fail,
// while the ranks of node 0 wait in ncclCommInitRank for them. Every member joined with the same
// arguments: only the network path to the root is wrong.
// Run it on two hosts (or two network namespaces: tests/netns/bootstrap_iface_test.sh); on one
// host the loopback is everyone's and it does not hang.
// Fix (healthy): leave NCCL_SOCKET_IFNAME unset, or set it to an interface every node reaches the
// others on.
#include <cstdlib>
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 3;

__attribute__((noinline)) ncclComm_t initProcessGroup(const samples::Job& job) {
  ncclUniqueId id{};
  try {
    id = samples::shareUniqueId(job.rank, samples::uniqueIdPath("bootstrap_iface"));
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
  // Node 0's stale environment (GROUP_RANK: the node rank torchrun and cxxrun give workers).
  if (!job.healthy && samples::envInt("GROUP_RANK", 0) == 0) setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  job.comm = initProcessGroup(job);
  std::vector<float> grads(4096, 1.0f);
  for (int step = 0; step < kSteps; ++step) trainStep(job.comm, grads);
  samples::finish(job);
  return 0;
}
