// One rank of the profiler-plugin tests (profiler_test.cc): runs a fixed sequence of NCCL calls
// on hostnccl with whatever NCCL_PROFILER_PLUGIN the test set, and checks the results' data
// (a plugin must never change what the program gets).
//
// usage: profiler_worker <scenario> <rank> <nranks> <dir>
//   stream: collectives, a group with send/recv and a collective, a nested group
//   two:    one all-reduce on each of two communicators (the plugin is loaded once)
//   gather: a gather to rank 0 that must fail there (the test drops rank 1's messages to it);
//           the other ranks stay 1 s before they leave, so that rank 0 sees their data land
//           before it sees rank 1 go
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace {

int gRank = 0, gN = 1, gBad = 0;
std::string gDir;

#define OK(call)                                                           \
  do {                                                                     \
    ncclResult_t rc_ = (call);                                             \
    if (rc_ != ncclSuccess) {                                              \
      std::fprintf(stderr, "rank %d: %s failed: %d\n", gRank, #call, rc_); \
      std::exit(3);                                                        \
    }                                                                      \
  } while (0)

ncclComm_t initComm(int index) {
  ncclUniqueId id;
  std::string path = gDir + "/id" + std::to_string(index);
  if (gRank == 0) {
    OK(ncclGetUniqueId(&id));
    std::ofstream(path + ".tmp", std::ios::binary).write(id.internal, sizeof id.internal);
    std::rename((path + ".tmp").c_str(), path.c_str());
  } else {
    bool got = false;
    for (int i = 0; i < 3000 && !got; ++i) {
      std::ifstream in(path, std::ios::binary);
      got = static_cast<bool>(in.read(id.internal, sizeof id.internal));
      if (!got) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!got) std::exit(4);
  }
  ncclComm_t comm;
  OK(ncclCommInitRank(&comm, gN, id, gRank));
  return comm;
}

void expectEq(double got, double want, const char* what) {
  if (got == want) return;
  std::fprintf(stderr, "rank %d: %s = %g, want %g\n", gRank, what, got, want);
  ++gBad;
}

// Sum over ranks of (rank + 1).
double rankSum() { return gN * (gN + 1) / 2.0; }

void allReduceChecked(ncclComm_t comm) {
  float v[4] = {1.0f * (gRank + 1), 1.0f * (gRank + 1), 1.0f * (gRank + 1), 1.0f * (gRank + 1)};
  OK(ncclAllReduce(v, v, 4, ncclFloat32, ncclSum, comm, nullptr));
  expectEq(v[3], rankSum(), "all-reduce");
}

int stream() {
  ncclComm_t comm = initComm(0);
  allReduceChecked(comm);
  int32_t ints[2] = {gRank, gRank};
  OK(ncclAllReduce(ints, ints, 2, ncclInt32, ncclSum, comm, nullptr));
  expectEq(ints[1], gN * (gN - 1) / 2.0, "int all-reduce");
  double d[3] = {1.0 * gRank, 0, 0};
  OK(ncclBroadcast(d, d, 3, ncclFloat64, 1 % gN, comm, nullptr));
  expectEq(d[0], 1 % gN, "broadcast");
  const int peer = (gRank + 1) % gN, from = (gRank + gN - 1) % gN;
  float out[2] = {1.0f * gRank, 1.0f * gRank}, in[2] = {-1, -1}, one = 1;
  OK(ncclGroupStart());
  OK(ncclSend(out, 2, ncclFloat32, peer, comm, nullptr));
  OK(ncclRecv(in, 2, ncclFloat32, from, comm, nullptr));
  OK(ncclAllReduce(&one, &one, 1, ncclFloat32, ncclSum, comm, nullptr));
  OK(ncclGroupEnd());
  expectEq(in[1], from, "recv");
  expectEq(one, gN, "grouped all-reduce");
  float mine = gRank, all[8] = {};
  OK(ncclGroupStart());
  OK(ncclGroupStart());
  OK(ncclAllGather(&mine, all, 1, ncclFloat32, comm, nullptr));
  OK(ncclGroupEnd());
  OK(ncclGroupEnd());
  expectEq(all[gN - 1], gN - 1, "all-gather");
  OK(ncclCommDestroy(comm));
  return 0;
}

int two() {
  ncclComm_t a = initComm(0), b = initComm(1);
  allReduceChecked(a);
  allReduceChecked(b);
  OK(ncclCommDestroy(b));
  OK(ncclCommDestroy(a));
  return 0;
}

int gather() {
  ncclComm_t comm = initComm(0);
  float mine = gRank, all[8] = {};
  ncclResult_t rc = ncclGather(&mine, all, 1, ncclFloat32, 0, comm, nullptr);
  if (gRank == 0) {
    if (rc == ncclSuccess) {
      std::fprintf(stderr, "rank 0: the gather succeeded although rank 1's data was dropped\n");
      ++gBad;
    } else {
      std::fprintf(stderr, "rank 0: gather failed: %s\n", ncclGetLastError(comm));
    }
    for (int r = 2; r < gN; ++r) expectEq(all[r], r, "gathered value");
  } else {
    OK(rc);
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  ncclCommAbort(comm);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s <stream|two|gather> <rank> <nranks> <dir>\n", argv[0]);
    return 2;
  }
  std::string scenario = argv[1];
  gRank = std::atoi(argv[2]);
  gN = std::atoi(argv[3]);
  gDir = argv[4];
  int rc = scenario == "stream"   ? stream()
           : scenario == "two"    ? two()
           : scenario == "gather" ? gather()
                                  : 2;
  return rc != 0 ? rc : (gBad == 0 ? 0 : 1);
}
