// The hostnccl-only scenarios of the conformance worker: timeouts, dead peers, mismatches, bad
// input, ncclCommInitAll and forked ranks.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "hostnccl/tests/device_memory.h"
#include "hostnccl/tests/worker.h"

namespace ncclrec::hostnccl::testing {
namespace {

// Expects `call` to fail within `within`; returns its code.
ncclResult_t expectFailure(const char* what, const std::function<ncclResult_t()>& call,
                           std::chrono::seconds within) {
  auto start = std::chrono::steady_clock::now();
  ncclResult_t rc = call();
  auto took = std::chrono::steady_clock::now() - start;
  CHECK(rc != ncclSuccess, "%s succeeded", what);
  CHECK(took < within, "%s took %.1f s to fail", what, std::chrono::duration<double>(took).count());
  return rc;
}

// An all-reduce of `count` floats with a rank that died fails within 10 s with NCCL's error for a
// lost peer; then the communicator is aborted.
int allReduceFailsWithADeadPeer(ncclComm_t comm, size_t count) {
  std::vector<float> v(count, 1.0f);
  const ncclResult_t rc = expectFailure(
      "AllReduce with a dead rank",
      [&] {
        return ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat32, ncclSum, comm, gStream);
      },
      std::chrono::seconds(10));
  CHECK(rc == ncclRemoteError || rc == ncclSystemError, "dead peer gave %d", rc);
  NCCL_OK(ncclCommAbort(comm));
  return 0;
}

}  // namespace

// Run with HOSTNCCL_TIMEOUT=1: rank 1 skips the second collective.
int timeout() {
  ncclComm_t comm = initComm();
  float v[4] = {1, 2, 3, 4};
  NCCL_OK(ncclAllReduce(v, v, 4, ncclFloat32, ncclSum, comm, gStream));
  if (gRank != 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    return 0;
  }
  ncclResult_t rc = expectFailure(
      "AllReduce without its peer",
      [&] { return ncclAllReduce(v, v, 4, ncclFloat32, ncclSum, comm, gStream); },
      std::chrono::seconds(3));
  CHECK(rc == ncclSystemError, "timeout gave %d, expected ncclSystemError", rc);
  ncclResult_t async = ncclSuccess;
  NCCL_OK(ncclCommGetAsyncError(comm, &async));
  CHECK(async == ncclSystemError, "async error %d", async);
  std::string msg = ncclGetLastError(comm);
  for (const char* part : {"AllReduce", "seq 1", "timed out", "comm "}) {
    CHECK(msg.find(part) != std::string::npos, "last error '%s' lacks '%s'", msg.c_str(), part);
  }
  // The communicator stays in error: later calls fail at once.
  CHECK(ncclAllReduce(v, v, 4, ncclFloat32, ncclSum, comm, gStream) == ncclSystemError,
        "call after timeout");
  NCCL_OK(ncclCommAbort(comm));
  return 0;
}

// Run with HOSTNCCL_TIMEOUT=1 and 2 ranks: mismatched collectives must fail, never succeed.
int mismatch() {
  ncclComm_t byCount = initComm(0);
  ncclComm_t byKind = initComm(1);
  ncclComm_t byType = initComm(2);
  std::vector<float> buf(16, 1.0f);
  expectFailure(
      "AllReduce with different counts",
      [&] {
        return ncclAllReduce(buf.data(), buf.data(), 8 + gRank, ncclFloat32, ncclSum, byCount,
                             gStream);
      },
      std::chrono::seconds(4));
  expectFailure(
      "AllReduce against Broadcast",
      [&] {
        return gRank == 0
                   ? ncclAllReduce(buf.data(), buf.data(), 8, ncclFloat32, ncclSum, byKind, gStream)
                   : ncclBroadcast(buf.data(), buf.data(), 8, ncclFloat32, 0, byKind, gStream);
      },
      std::chrono::seconds(4));
  expectFailure(
      "AllReduce with different datatypes",
      [&] {
        return ncclAllReduce(buf.data(), buf.data(), 8, gRank == 0 ? ncclFloat32 : ncclInt32,
                             ncclSum, byType, gStream);
      },
      std::chrono::seconds(4));
  NCCL_OK(ncclCommAbort(byCount));
  NCCL_OK(ncclCommAbort(byKind));
  NCCL_OK(ncclCommAbort(byType));
  return 0;
}

// Run with HOSTNCCL_TIMEOUT=20 and 3 ranks: the last rank dies before the second collective.
int killedPeer() {
  ncclComm_t comm = initComm();
  checkSum(comm, gN * (gN - 1) / 2.0, "AllReduce before the kill");
  if (gRank == gN - 1) raise(SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  return allReduceFailsWithADeadPeer(comm, 1 << 16);
}

// Run with HOSTNCCL_TIMEOUT=20 and 2 ranks, SIGPIPE at its default: after the first init it is
// ignored (hostnccl does so unless the program chose), and when rank 1 dies right after the
// first collective, rank 0's large all-reduce to it fails with an error, as on NCCL, instead of
// SIGPIPE killing rank 0 (which a write to the dead peer's socket raises only with some timings).
int killedWhileWriting() {
  signal(SIGPIPE, SIG_DFL);
  ncclComm_t comm = initComm();
  struct sigaction now {};
  CHECK(sigaction(SIGPIPE, nullptr, &now) == 0 && now.sa_handler == SIG_IGN,
        "SIGPIPE still at its default after the first init");
  checkSum(comm, gN * (gN - 1) / 2.0, "AllReduce before the kill");
  if (gRank == gN - 1) raise(SIGKILL);
  return allReduceFailsWithADeadPeer(comm, 1 << 20);
}

int badInput() {
  int version = 0;
  NCCL_OK(ncclGetVersion(&version));
  CHECK(version == NCCL_VERSION_CODE, "version %d", version);
  ncclComm_t comm = initComm();
  int v = 0;
  float f[4] = {};
  CHECK(ncclCommCount(comm, &v) == ncclSuccess && v == 1, "count %d", v);
  CHECK(ncclCommUserRank(comm, &v) == ncclSuccess && v == 0, "rank %d", v);
  CHECK(ncclCommCuDevice(comm, &v) == ncclSuccess && v == 0, "device %d", v);
  ncclResult_t async = ncclInternalError;
  CHECK(ncclCommGetAsyncError(comm, &async) == ncclSuccess && async == ncclSuccess, "async");
  auto expect = [&](ncclResult_t got, ncclResult_t want, const char* what) {
    CHECK(got == want, "%s gave %d, expected %d", what, got, want);
    if (got != ncclSuccess) {
      CHECK(std::strlen(ncclGetLastError(nullptr)) > 0, "%s left no last error", what);
    }
  };
  expect(ncclAllReduce(f, f, 4, ncclFloat32, ncclSum, nullptr, gStream), ncclInvalidArgument,
         "null comm");
  expect(ncclAllReduce(f, f, 4, static_cast<ncclDataType_t>(42), ncclSum, comm, gStream),
         ncclInvalidArgument, "bad datatype");
  expect(ncclAllReduce(f, f, 4, ncclFloat32, static_cast<ncclRedOp_t>(77), comm, gStream),
         ncclInvalidArgument, "bad op");
  expect(ncclBroadcast(f, f, 4, ncclFloat32, 5, comm, gStream), ncclInvalidArgument, "bad root");
  expect(ncclSend(f, 4, ncclFloat32, 3, comm, gStream), ncclInvalidArgument, "bad peer");
  expect(ncclAllReduce(f, f, SIZE_MAX / 2, ncclFloat32, ncclSum, comm, gStream),
         ncclInvalidArgument, "count overflow");
  expect(ncclAllReduce(nullptr, f, 4, ncclFloat32, ncclSum, comm, gStream), ncclInvalidArgument,
         "null sendbuff");
  expect(ncclGroupEnd(), ncclInvalidUsage, "GroupEnd without GroupStart");
  double two = 2;
  ncclRedOp_t op;
  NCCL_OK(ncclRedOpCreatePreMulSum(&op, &two, ncclFloat64, ncclScalarHostImmediate, comm));
  expect(ncclAllReduce(f, f, 4, ncclFloat32, op, comm, gStream), ncclInvalidArgument,
         "premulsum of another datatype");
  NCCL_OK(ncclRedOpDestroy(op, comm));
  expect(ncclRedOpDestroy(op, comm), ncclInvalidArgument, "double RedOpDestroy");
  expect(ncclRedOpDestroy(ncclSum, comm), ncclInvalidArgument, "RedOpDestroy of a builtin");
  ncclUniqueId zero;
  std::memset(&zero, 0, sizeof(zero));
  ncclComm_t other = nullptr;
  expect(ncclCommInitRank(&other, 1, zero, 0), ncclInvalidArgument, "foreign unique id");
  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  expect(ncclCommInitRank(&other, 0, id, 0), ncclInvalidArgument, "nranks 0");
  expect(ncclCommInitRank(&other, 2, id, 2), ncclInvalidArgument, "rank out of range");
  id.internal[40] ^= 1;  // inside the secret
  expect(ncclCommInitRank(&other, 1, id, 0), ncclSystemError, "wrong secret");
  CHECK(std::strlen(ncclGetErrorString(ncclRemoteError)) > 0, "error string");
  void* mem = nullptr;
  NCCL_OK(ncclMemAlloc(&mem, 1000));
  CHECK(mem != nullptr, "ncclMemAlloc");
  NCCL_OK(ncclMemFree(mem));
  NCCL_OK(ncclCommFinalize(comm));
  NCCL_OK(ncclCommDestroy(comm));
  expect(ncclCommCount(comm, &v), ncclInvalidArgument, "destroyed comm");
  expect(ncclAllReduce(f, f, 4, ncclFloat32, ncclSum, comm, gStream), ncclInvalidArgument,
         "collective on a destroyed comm");
  return 0;
}

// One process drives four ranks, as with ncclCommInitAll on a multi-GPU node.
int initAll() {
  const int n = 4;
  ncclComm_t comms[n];
  NCCL_OK(ncclCommInitAll(comms, n, nullptr));
  std::vector<std::vector<int>> bufs(n, std::vector<int>(10));
  for (int i = 0; i < n; ++i) std::fill(bufs[i].begin(), bufs[i].end(), i + 1);
  NCCL_OK(ncclGroupStart());
  for (int i = 0; i < n; ++i) {
    NCCL_OK(
        ncclAllReduce(bufs[i].data(), bufs[i].data(), 10, ncclInt32, ncclSum, comms[i], gStream));
  }
  NCCL_OK(ncclGroupEnd());
  for (int i = 0; i < n; ++i) {
    CHECK(bufs[i][9] == n * (n + 1) / 2, "comm %d got %d", i, bufs[i][9]);
    int dev = -1;
    NCCL_OK(ncclCommCuDevice(comms[i], &dev));
    CHECK(dev == i, "comm %d device %d", i, dev);
    NCCL_OK(ncclCommDestroy(comms[i]));
  }
  return 0;
}

// The multiprocessing pattern: a launcher makes the id, then forks the ranks, which then split
// (so each child must serve rendezvous from its own listener, not the inherited one).
int forkedRanks() {
  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  const int n = 2;
  std::vector<pid_t> children;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      gRank = r;
      gN = n;
      selectDevice(r);  // else both would be on the launcher's device
      ncclComm_t comm, sub;
      NCCL_OK(ncclCommInitRank(&comm, n, id, r));
      NCCL_OK(ncclCommSplit(comm, 0, r, &sub, nullptr));
      checkSum(sub, 1, "AllReduce on a split made in forked ranks");
      NCCL_OK(ncclCommDestroy(sub));
      NCCL_OK(ncclCommDestroy(comm));
      _exit(gFailures == 0 ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "forked rank failed (status %d)", status);
  }
  return 0;
}

}  // namespace ncclrec::hostnccl::testing

namespace ncclrec::hostnccl::testing {

// Run with HOSTNCCL_TIMEOUT=1 and 3 ranks: the last rank disagrees with the others at init (it
// passes another nranks, or claims rank 0 again). As at NCCL's bootstrap root, the mismatch stops
// the rendezvous: no rank's init succeeds; each fails at the timeout (the ranks inside with
// ncclSystemError, those that find the root gone with ncclRemoteError), and none fails at once.
int initDisagrees(bool claim_twice) {
  const ncclUniqueId id = shareId(0);
  // The last rank arrives after the others, so that the mismatch is its own.
  if (gRank == gN - 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int nranks = !claim_twice && gRank == gN - 1 ? gN + 1 : gN;
  const int rank = claim_twice && gRank == gN - 1 ? 0 : gRank;
  ncclComm_t comm = nullptr;
  const auto start = std::chrono::steady_clock::now();
  const ncclResult_t rc = ncclCommInitRank(&comm, nranks, id, rank);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(rc == ncclSystemError || rc == ncclRemoteError, "init gave %d", rc);
  CHECK(took > 0.8, "init failed after %.2f s: a mismatch must block, as NCCL's does", took);
  return 0;
}

int initNranksMismatch() { return initDisagrees(false); }
int initRankTwice() { return initDisagrees(true); }

}  // namespace ncclrec::hostnccl::testing
