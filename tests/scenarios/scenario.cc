// One small NCCL job per hang class, for recording the analyzer's golden data (tests/data/) and
// for its live end-to-end test. Every rank runs the same loop; the fault hits `culprit` at
// `step`. Run with RANK, WORLD_SIZE and NCCLREC_SAMPLE_ID_FILE set, under libncclrec.so.
//   argv[1]: gated | skipped | exited | crashed | size_mismatch | stuck_in_host | cross_comm |
//            no_hang
//   argv[2]: steps (default 4); argv[3]: the faulty step (default 2); argv[4]: culprit (default 3
//   for every class but gated, where it is 0)
#include <nccl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
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

// noinline: each function is a distinct call site in the recorded stacks.
__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads, size_t n) {
  CHECK_NCCL(ncclAllReduce(grads.data(), grads.data(), n, ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) void logLoss(ncclComm_t comm, float* loss) {
  CHECK_NCCL(ncclAllReduce(loss, loss, 1, ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) void syncMetrics(ncclComm_t comm, float* metric) {
  CHECK_NCCL(ncclAllReduce(metric, metric, 1, ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) void saveCheckpoint(ncclComm_t comm, float* checksum) {
  CHECK_NCCL(ncclAllReduce(checksum, checksum, 1, ncclFloat, ncclSum, comm, nullptr));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "no_hang";
  const int steps = argc > 2 ? std::atoi(argv[2]) : 4;
  const int fault_step = argc > 3 ? std::atoi(argv[3]) : 2;
  const int culprit = argc > 4 ? std::atoi(argv[4]) : (mode == "gated" ? 0 : 3);
  const int rank = samples::envInt("RANK", 0);
  const int world = samples::envInt("WORLD_SIZE", 1);
  const char* id_file = std::getenv("NCCLREC_SAMPLE_ID_FILE");
  const ncclUniqueId id =
      samples::shareUniqueId(rank, id_file != nullptr ? id_file : "/tmp/ncclrec-scenario.id");
  ncclComm_t comm = nullptr;
  CHECK_NCCL(ncclCommInitRank(&comm, world, id, rank));
  // cross_comm: a second communicator for metrics; the culprit syncs metrics before the
  // gradients at the faulty step while the others do it after: each side waits for the other.
  ncclComm_t metrics = nullptr;
  if (mode == "cross_comm") {
    const std::string path =
        std::string(id_file != nullptr ? id_file : "/tmp/ncclrec-scenario.id") + ".metrics";
    CHECK_NCCL(ncclCommInitRank(&metrics, world, samples::shareUniqueId(rank, path), rank));
  }
  std::vector<float> grads(1024, 1.0f);
  float loss = 1.0f;
  const bool me = rank == culprit;
  for (int step = 0; step < steps; ++step) {
    const bool fault = me && step == fault_step;
    if (fault && mode == "exited") return 0;  // an early return: the "uneven inputs" bug
    if (fault && mode == "crashed") raise(SIGKILL);
    if (fault && mode == "stuck_in_host") sleep(600);
    if (metrics != nullptr && fault) syncMetrics(metrics, &loss);
    trainStep(comm, grads, fault && mode == "size_mismatch" ? grads.size() / 2 : grads.size());
    if (metrics != nullptr && !fault) syncMetrics(metrics, &loss);
    if (mode == "skipped" && !fault) logLoss(comm, &loss);
    if (mode == "gated" && fault) saveCheckpoint(comm, &loss);
  }
  if (metrics != nullptr) CHECK_NCCL(ncclCommDestroy(metrics));
  CHECK_NCCL(ncclCommDestroy(comm));
  return 0;
}
