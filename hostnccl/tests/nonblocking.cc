// Nonblocking communicators (ncclConfig_t::blocking = 0) as NCCL documents them: init,
// collectives, groups and finalize return ncclInProgress (or ncclSuccess) and progress in the
// background; ncclCommGetAsyncError says ncclInProgress until the work is done, then ncclSuccess;
// a second call while one is in progress is refused; ncclCommAbort ends a call that never
// completes.
#include <chrono>
#include <thread>

#include "hostnccl/tests/worker.h"

namespace ncclrec::hostnccl::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Polls ncclCommGetAsyncError until it leaves ncclInProgress or `limit` passes; its last state.
ncclResult_t settle(ncclComm_t comm, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  ncclResult_t state = ncclInProgress;
  while (true) {
    NCCL_OK(ncclCommGetAsyncError(comm, &state));
    if (state != ncclInProgress || Clock::now() > deadline) return state;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// A call of a nonblocking communicator: ncclInProgress, then ncclSuccess once settled.
void done(const char* what, ncclResult_t rc, ncclComm_t comm) {
  CHECK(rc == ncclInProgress || rc == ncclSuccess, "%s returned %d", what, rc);
  const ncclResult_t state = settle(comm, std::chrono::seconds(30));
  CHECK(state == ncclSuccess, "%s settled at %d", what, state);
}

}  // namespace

int nonblocking() {
  const ncclUniqueId id = shareId(0);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  const ncclResult_t init = ncclCommInitRankConfig(&comm, gN, id, gRank, &config);
  CHECK(init == ncclInProgress, "a nonblocking init returned %d, not ncclInProgress", init);
  CHECK(comm != nullptr, "no communicator handed back");
  done("ncclCommInitRankConfig", init, comm);
  int count = 0;
  NCCL_OK(ncclCommCount(comm, &count));
  CHECK(count == gN, "count %d", count);

  float v[4];
  for (float& x : v) x = static_cast<float>(gRank + 1);
  done("ncclAllReduce", ncclAllReduce(v, v, 4, ncclFloat32, ncclSum, comm, gStream), comm);
  CHECK(v[3] == gN * (gN + 1) / 2.0f, "all-reduce gave %g", v[3]);

  // A ring of grouped sends and receives: ncclGroupEnd is what returns ncclInProgress.
  float out = static_cast<float>(gRank), in = -1;
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclSend(&out, 1, ncclFloat32, (gRank + 1) % gN, comm, gStream));
  NCCL_OK(ncclRecv(&in, 1, ncclFloat32, (gRank + gN - 1) % gN, comm, gStream));
  done("ncclGroupEnd", ncclGroupEnd(), comm);
  CHECK(in == static_cast<float>((gRank + gN - 1) % gN), "ring received %g", in);

  if (gRank == 0 && gN > 1) {
    // An all-reduce no other rank issues: it stays in progress, a second call is refused, and
    // ncclCommAbort ends it.
    const ncclResult_t rc = ncclAllReduce(v, v, 4, ncclFloat32, ncclSum, comm, gStream);
    CHECK(rc == ncclInProgress, "unmatched all-reduce returned %d", rc);
    CHECK(settle(comm, std::chrono::milliseconds(300)) == ncclInProgress,
          "unmatched all-reduce did not stay in progress");
    CHECK(ncclAllReduce(v, v, 4, ncclFloat32, ncclSum, comm, gStream) == ncclInvalidUsage,
          "a call while one is in progress was not refused");
    const auto start = Clock::now();
    NCCL_OK(ncclCommAbort(comm));
    CHECK(Clock::now() - start < std::chrono::seconds(5), "abort took too long");
    return 0;
  }
  // The others leave once rank 0 has seen its all-reduce stay in progress.
  std::this_thread::sleep_for(std::chrono::milliseconds(gN > 1 ? 1000 : 0));
  done("ncclCommFinalize", ncclCommFinalize(comm), comm);
  NCCL_OK(ncclCommDestroy(comm));
  return 0;
}

}  // namespace ncclrec::hostnccl::testing
