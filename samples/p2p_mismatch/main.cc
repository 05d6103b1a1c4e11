// A pipeline send with no matching receive: four pipeline stages, one per rank, pass activations
// forward micro-batch by micro-batch. The last batch of the epoch is partial (10 samples, micro-
// batches of 4): the first stage rounds the micro-batch count up and sends 3, the next stage
// rounds down and receives 2. The third send never completes (NCCL may finish a small send
// eagerly, but the receiver never gets it either); the other stages wait in the loss all-reduce.
// Fix (healthy): one function computes the micro-batch count for every stage.
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 3;
constexpr int kMicroBatch = 4;

__attribute__((noinline)) void sendActivations(ncclComm_t comm, std::vector<float>& act, int peer) {
  CHECK_NCCL(ncclSend(act.data(), act.size(), ncclFloat, peer, comm, nullptr));
}

__attribute__((noinline)) void recvActivations(ncclComm_t comm, std::vector<float>& act, int peer) {
  CHECK_NCCL(ncclRecv(act.data(), act.size(), ncclFloat, peer, comm, nullptr));
}

__attribute__((noinline)) void logLoss(ncclComm_t comm, float* loss) {
  CHECK_NCCL(ncclAllReduce(loss, loss, 1, ncclFloat, ncclSum, comm, nullptr));
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "p2p_mismatch");
  const bool round_up = !job.healthy && job.rank == 0;
  std::vector<float> act(1024, 1.0f);
  for (int step = 0; step < kSteps; ++step) {
    const int batch = step == kSteps - 1 ? 10 : 16;
    const int micro_batches =
        round_up ? (batch + kMicroBatch - 1) / kMicroBatch : batch / kMicroBatch;
    for (int m = 0; m < micro_batches; ++m) {
      if (job.rank > 0) recvActivations(job.comm, act, job.rank - 1);
      if (job.rank < job.world - 1) sendActivations(job.comm, act, job.rank + 1);
    }
    float loss = 1.0f;
    logLoss(job.comm, &loss);
  }
  samples::finish(job);
  return 0;
}
