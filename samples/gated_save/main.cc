// A data-parallel loop whose rank 0 saves a checkpoint, and the save all-reduces a checksum: a
// collective gated on rank == 0. NCCL pairs collectives by issue order, so rank 0's extra
// all-reduce meets the other ranks' next gradient all-reduce, and the job hangs one step later,
// somewhere else. Run with RANK, WORLD_SIZE and NCCLREC_SAMPLE_ID_FILE set (scripts/demo.sh does).
//   argv[1]: steps (default 10); argv[2]: the step at which rank 0 saves (default 5, -1 = never)
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "samples/common/unique_id_file.h"

namespace {

#define CHECK_NCCL(call)                                                     \
  do {                                                                       \
    const ncclResult_t r = (call);                                           \
    if (r != ncclSuccess) {                                                  \
      std::fprintf(stderr, "%s failed: %s\n", #call, ncclGetErrorString(r)); \
      std::exit(1);                                                          \
    }                                                                        \
  } while (0)

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) void saveCheckpoint(ncclComm_t comm, int rank) {
  // The bug: the checksum all-reduce runs where only rank 0 goes.
  float checksum = static_cast<float>(rank);
  CHECK_NCCL(ncclAllReduce(&checksum, &checksum, 1, ncclFloat, ncclSum, comm, nullptr));
  std::printf("rank %d: checkpoint saved\n", rank);
}

}  // namespace

int main(int argc, char** argv) {
  const int rank = samples::envInt("RANK", 0);
  const int world = samples::envInt("WORLD_SIZE", 1);
  const int steps = argc > 1 ? std::atoi(argv[1]) : 10;
  const int save_step = argc > 2 ? std::atoi(argv[2]) : 5;
  const char* id_file = std::getenv("NCCLREC_SAMPLE_ID_FILE");
  const ncclUniqueId id =
      samples::shareUniqueId(rank, id_file != nullptr ? id_file : "/tmp/ncclrec-sample.id");
  ncclComm_t comm = nullptr;
  CHECK_NCCL(ncclCommInitRank(&comm, world, id, rank));
  std::vector<float> grads(4096, 1.0f);
  for (int step = 0; step < steps; ++step) {
    trainStep(comm, grads);
    if (rank == 0 && step == save_step) saveCheckpoint(comm, rank);
    std::printf("rank %d: step %d done\n", rank, step);
    std::fflush(stdout);
  }
  CHECK_NCCL(ncclCommDestroy(comm));
  std::printf("rank %d: finished\n", rank);
  return 0;
}
