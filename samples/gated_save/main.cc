// A data-parallel loop whose rank 0 saves a checkpoint, and the save all-reduces a checksum: a
// collective gated on rank == 0. NCCL pairs collectives by issue order, so rank 0's extra
// all-reduce meets the other ranks' next gradient all-reduce, and the job hangs one step later,
// somewhere else. Fix (healthy): every rank takes part in the checksum; only rank 0 writes.
//   sample_gated_save [faulty|healthy]: 10 steps, rank 0 saves at step 5 (healthy: every rank
//   computes the checksum)
//   sample_gated_save STEPS [SAVE_STEP]: the faulty program with another shape (SAVE_STEP -1:
//   never save)
#include <cstdlib>
#include <string>
#include <vector>

#include "samples/common/sample.h"

namespace {

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) void saveCheckpoint(ncclComm_t comm, int rank) {
  // The bug: the checksum all-reduce runs where only rank 0 goes.
  float checksum = static_cast<float>(rank);
  CHECK_NCCL(ncclAllReduce(&checksum, &checksum, 1, ncclFloat, ncclSum, comm, nullptr));
  if (rank == 0) std::printf("rank %d: checkpoint saved (checksum %.0f)\n", rank, checksum);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string first = argc > 1 ? argv[1] : "faulty";
  const bool named_mode = first == "faulty" || first == "healthy";
  const bool healthy = first == "healthy";
  const int steps = named_mode ? 10 : std::atoi(argv[1]);
  const int save_step = named_mode ? 5 : argc > 2 ? std::atoi(argv[2]) : 5;
  const int rank = samples::launcherRank();
  const int world = samples::launcherWorldSize();
  ncclComm_t comm = samples::initComm(rank, world, samples::uniqueIdPath("gated_save"));
  std::vector<float> grads(4096, 1.0f);
  for (int step = 0; step < steps; ++step) {
    trainStep(comm, grads);
    if (step == save_step && (healthy || rank == 0)) saveCheckpoint(comm, rank);
    std::printf("rank %d: step %d done\n", rank, step);
    std::fflush(stdout);
  }
  CHECK_NCCL(ncclCommDestroy(comm));
  std::printf("rank %d: finished\n", rank);
  return 0;
}
