// An all-to-all built from grouped sends and receives that skips a peer: a mixture-of-experts
// layer exchanges fixed-capacity token buckets with every other rank inside one
// ncclGroupStart/End. Rank 2 "optimizes" the exchange by skipping the peers it routed no token
// to, and skips its receive from them too. At step 2 its router sends nothing to rank 0: rank 2's
// group has no send to and no receive from rank 0, while rank 0's group sends to and receives
// from rank 2. Rank 0 waits in its group; the others wait for it in the loss all-reduce.
// Fix (healthy): exchange with every peer every time (an empty bucket is still sent), or
// exchange the counts first and skip a peer only when both sides agree.
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 4;
constexpr size_t kCapacity = 256;

// Tokens this rank routes to `peer` at `step`.
int routedTokens(int rank, int peer, int step) {
  return rank == 2 && peer == 0 && step == 2 ? 0 : 8;
}

__attribute__((noinline)) void dispatchTokens(ncclComm_t comm, int rank, int world, int step,
                                              bool skip_empty, std::vector<float>& send,
                                              std::vector<float>& recv) {
  CHECK_NCCL(ncclGroupStart());
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank || (skip_empty && routedTokens(rank, peer, step) == 0)) continue;
    CHECK_NCCL(ncclSend(send.data() + peer * kCapacity, kCapacity, ncclFloat, peer, comm, nullptr));
    CHECK_NCCL(ncclRecv(recv.data() + peer * kCapacity, kCapacity, ncclFloat, peer, comm, nullptr));
  }
  CHECK_NCCL(ncclGroupEnd());
}

__attribute__((noinline)) void logLoss(ncclComm_t comm, float* loss) {
  CHECK_NCCL(ncclAllReduce(loss, loss, 1, ncclFloat, ncclSum, comm, nullptr));
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "alltoall_skip");
  std::vector<float> send(kCapacity * job.world, 1.0f), recv(kCapacity * job.world, 0.0f);
  for (int step = 0; step < kSteps; ++step) {
    dispatchTokens(job.comm, job.rank, job.world, step, !job.healthy, send, recv);
    float loss = 1.0f;
    logLoss(job.comm, &loss);
  }
  samples::finish(job);
  return 0;
}
