// A nonblocking communicator (ncclConfig_t blocking = 0) whose op never completes: every call
// returns ncclInProgress at once and the program polls ncclCommGetAsyncError until the
// communicator settles, as frameworks do to stay responsive. Each step all-reduces the gradients,
// then the metrics; rank 3 has no metrics to report (its data loader yields no labelled batch at
// step 2) and skips that all-reduce. The others' metrics all-reduce stays in progress forever:
// no call blocks, no error comes, the poll loop spins and the job hangs.
// Fix (healthy): a collective is issued by every rank (an empty metric is still all-reduced).
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 4;

// Polls until the communicator's pending work is done; a failure ends the process like
// CHECK_NCCL.
void settle(ncclComm_t comm, ncclResult_t returned) {
  ncclResult_t state = returned;
  while (state == ncclInProgress) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK_NCCL(ncclCommGetAsyncError(comm, &state));
  }
  CHECK_NCCL(state);
}

ncclComm_t initNonblocking(int rank, int world, const std::string& key) {
  ncclUniqueId id{};
  try {
    id = samples::shareUniqueId(rank, key);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: cannot share the NCCL unique id: %s\n", rank, e.what());
    std::exit(1);
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  const ncclResult_t rc = ncclCommInitRankConfig(&comm, world, id, rank, &config);
  if (rc != ncclInProgress) CHECK_NCCL(rc);
  settle(comm, rc);
  return comm;
}

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  settle(comm, ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm,
                             nullptr));
}

__attribute__((noinline)) void logMetrics(ncclComm_t comm, std::vector<float>& metrics) {
  settle(comm, ncclAllReduce(metrics.data(), metrics.data(), metrics.size(), ncclFloat, ncclMax,
                             comm, nullptr));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "faulty";
  if (argc > 2 || (mode != "faulty" && mode != "healthy")) {
    std::fprintf(stderr, "usage: %s [faulty|healthy] (got '%s')\n", argv[0], mode.c_str());
    return 2;
  }
  const int rank = samples::launcherRank(), world = samples::launcherWorldSize();
  ncclComm_t comm = initNonblocking(rank, world, samples::uniqueIdPath("nonblocking_hang"));
  std::vector<float> grads(4096, 1.0f), metrics(8, 1.0f);
  for (int step = 0; step < kSteps; ++step) {
    trainStep(comm, grads);
    const bool has_metrics = mode == "healthy" || rank != 3 || step != 2;
    if (has_metrics) logMetrics(comm, metrics);
  }
  settle(comm, ncclCommFinalize(comm));
  CHECK_NCCL(ncclCommDestroy(comm));
  std::printf("rank %d: finished\n", rank);
  return 0;
}
