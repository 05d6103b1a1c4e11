// One rank of a conformance scenario: `conformance_worker <scenario> <rank> <nranks> <dir>`.
// Rank 0 writes the unique id(s) to <dir>; the others wait for them. Exit status 0 means every
// check passed; failures are printed to stderr, one line each, naming the rank and the check.
#include <nccl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "hostnccl/tests/device_memory.h"
#include "hostnccl/tests/values.h"
#include "hostnccl/tests/worker.h"

using namespace ncclrec::hostnccl::testing;

namespace ncclrec::hostnccl::testing {

int gRank = 0, gN = 1, gFailures = 0;
std::string gDir;
cudaStream_t gStream = nullptr;

ncclUniqueId shareId(int index) {
  ncclUniqueId id;
  std::string path = gDir + "/id" + std::to_string(index);
  if (gRank == 0) {
    NCCL_OK(ncclGetUniqueId(&id));
    std::string tmp = path + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(id.internal, sizeof(id.internal));
    std::rename(tmp.c_str(), path.c_str());
    return id;
  }
  for (int i = 0; i < 3000; ++i) {
    std::ifstream in(path, std::ios::binary);
    if (in.read(id.internal, sizeof(id.internal))) return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr, "rank %d: no unique id at %s\n", gRank, path.c_str());
  std::exit(4);
}

ncclComm_t initComm(int index) {
  ncclUniqueId id = shareId(index);
  ncclComm_t comm;
  NCCL_OK(ncclCommInitRank(&comm, gN, id, gRank));
  return comm;
}

const ncclDataType_t kTypes[] = {ncclInt8,    ncclUint8,    ncclInt32,      ncclUint32,
                                 ncclInt64,   ncclUint64,   ncclFloat16,    ncclFloat32,
                                 ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
enum Op { kSum, kProd, kMax, kMin, kAvg, kPreMulSum, kNumTestOps };
const char* const kOpNames[] = {"sum", "prod", "max", "min", "avg", "premulsum"};

// The input of `rank` at element i for a reduction `op`, chosen so every partial result is an
// integer the type holds (avg and fp8 aside, which get a tolerance).
double input(int op, ncclDataType_t t, int rank, size_t i) {
  switch (op) {
    case kProd:
      return (rank + i) % 4 == 0 ? 2 : 1;
    case kMax:
    case kMin:
      return static_cast<double>((rank * 7 + i * 3) % 11) - (isSigned(t) ? 5 : 0);
    default:
      return static_cast<double>((rank + i) % 3);
  }
}

double reference(int op, ncclDataType_t t, size_t i, int n) {
  double acc = input(op, t, 0, i);
  for (int r = 1; r < n; ++r) {
    double v = input(op, t, r, i);
    if (op == kProd)
      acc *= v;
    else if (op == kMax)
      acc = std::max(acc, v);
    else if (op == kMin)
      acc = std::min(acc, v);
    else
      acc += v;
  }
  if (op == kPreMulSum) acc *= 2;
  if (op == kAvg) acc = isFloat(t) ? acc / n : std::trunc(acc / n);
  return acc;
}

bool close(ncclDataType_t t, double got, double want) {
  double tol = epsilon(t) * (gN + 2) * std::max(1.0, std::fabs(want));
  return std::fabs(got - want) <= tol;
}

ncclRedOp_t makeOp(int op, ncclDataType_t t, ncclComm_t comm, bool* created) {
  *created = false;
  switch (op) {
    case kSum:
      return ncclSum;
    case kProd:
      return ncclProd;
    case kMax:
      return ncclMax;
    case kMin:
      return ncclMin;
    case kAvg:
      return ncclAvg;
    default: {
      unsigned char two[8];
      encode(t, 2.0, two);
      ncclRedOp_t r;
      NCCL_OK(ncclRedOpCreatePreMulSum(&r, two, t, ncclScalarHostImmediate, comm));
      *created = true;
      return r;
    }
  }
}

// Fills a device buffer of `count` elements: element i gets f(i).
void fill(const DevBuf& buf, ncclDataType_t t, size_t count, size_t offset,
          const std::function<double(size_t)>& f) {
  std::vector<unsigned char> host(count * typeSize(t));
  for (size_t i = 0; i < count; ++i) encode(t, f(i), host.data() + i * typeSize(t));
  toDevice(buf.at(offset * typeSize(t)), host.data(), host.size());
}

std::vector<double> read(const DevBuf& buf, ncclDataType_t t, size_t count, size_t offset = 0) {
  std::vector<unsigned char> host(count * typeSize(t));
  toHost(host.data(), buf.at(offset * typeSize(t)), host.size());
  std::vector<double> out(count);
  for (size_t i = 0; i < count; ++i) out[i] = decode(t, host.data() + i * typeSize(t));
  return out;
}

void expectValues(const char* what, ncclDataType_t t, int op, const std::vector<double>& got,
                  const std::function<double(size_t)>& want) {
  for (size_t i = 0; i < got.size(); ++i) {
    if (!close(t, got[i], want(i))) {
      CHECK(false, "%s type %d op %s: element %zu is %g, expected %g", what, static_cast<int>(t),
            op >= 0 ? kOpNames[op] : "-", i, got[i], want(i));
      return;  // one line per failing case is enough
    }
  }
}

void reductions(ncclComm_t comm, ncclDataType_t t, size_t count, bool inPlace) {
  const size_t es = typeSize(t);
  for (int op = 0; op < kNumTestOps; ++op) {
    bool created;
    ncclRedOp_t rop = makeOp(op, t, comm, &created);
    auto mine = [&](size_t i) { return input(op, t, gRank, i); };
    auto want = [&](size_t i) { return reference(op, t, i, gN); };
    if (isFp8(t) && (op == kAvg || op == kPreMulSum)) {
      // NCCL has no fp8 avg or premulsum (2.28.9 on an H100): every reduction refuses them.
      DevBuf buf(count * gN * es);
      CHECK(
          ncclAllReduce(buf.get(), buf.get(), count, t, rop, comm, gStream) == ncclInvalidArgument,
          "AllReduce type %d op %s: expected ncclInvalidArgument", static_cast<int>(t),
          kOpNames[op]);
      CHECK(
          ncclReduce(buf.get(), buf.get(), count, t, rop, 0, comm, gStream) == ncclInvalidArgument,
          "Reduce type %d op %s: expected ncclInvalidArgument", static_cast<int>(t), kOpNames[op]);
      CHECK(ncclReduceScatter(buf.get(), buf.get(), count, t, rop, comm, gStream) ==
                ncclInvalidArgument,
            "ReduceScatter type %d op %s: expected ncclInvalidArgument", static_cast<int>(t),
            kOpNames[op]);
      if (created) NCCL_OK(ncclRedOpDestroy(rop, comm));
      continue;
    }
    {  // AllReduce
      DevBuf send(count * es), recv(count * es);
      fill(send, t, count, 0, mine);
      const DevBuf& out = inPlace ? send : recv;
      NCCL_OK(ncclAllReduce(send.get(), out.get(), count, t, rop, comm, gStream));
      syncStream(gStream);
      expectValues(inPlace ? "AllReduce in-place" : "AllReduce", t, op, read(out, t, count), want);
    }
    {  // Reduce, root rotating with the type
      int root = static_cast<int>(t) % gN;
      DevBuf send(count * es), recv(count * es);
      fill(send, t, count, 0, mine);
      const DevBuf& out = inPlace ? send : recv;
      NCCL_OK(ncclReduce(send.get(), out.get(), count, t, rop, root, comm, gStream));
      syncStream(gStream);
      if (gRank == root) {
        expectValues(inPlace ? "Reduce in-place" : "Reduce", t, op, read(out, t, count), want);
      }
    }
    {  // ReduceScatter: rank r's output is elements [r*count, (r+1)*count) of the reduction
      DevBuf send(count * gN * es), recv(count * es);
      fill(send, t, count * gN, 0, mine);
      const DevBuf* out = &recv;
      void* outPtr = recv.get();
      if (inPlace) {
        out = &send;
        outPtr = send.at(gRank * count * es);
      }
      NCCL_OK(ncclReduceScatter(send.get(), outPtr, count, t, rop, comm, gStream));
      syncStream(gStream);
      size_t base = gRank * count;
      expectValues(inPlace ? "ReduceScatter in-place" : "ReduceScatter", t, op,
                   read(*out, t, count, inPlace ? base : 0),
                   [&](size_t i) { return reference(op, t, base + i, gN); });
    }
    if (created) NCCL_OK(ncclRedOpDestroy(rop, comm));
  }
}

double plain(int rank, size_t i) { return static_cast<double>((rank * 5 + i) % 8); }

void dataMovement(ncclComm_t comm, ncclDataType_t t, size_t count, bool inPlace) {
  const size_t es = typeSize(t);
  const int root = (static_cast<int>(t) + 1) % gN;
  {  // Broadcast / Bcast
    DevBuf send(count * es), recv(count * es);
    fill(send, t, count, 0, [&](size_t i) { return plain(gRank, i); });
    if (inPlace) {
      NCCL_OK(ncclBcast(send.get(), count, t, root, comm, gStream));
    } else {
      NCCL_OK(ncclBroadcast(send.get(), recv.get(), count, t, root, comm, gStream));
    }
    syncStream(gStream);
    expectValues(inPlace ? "Bcast" : "Broadcast", t, -1, read(inPlace ? send : recv, t, count),
                 [&](size_t i) { return plain(root, i); });
  }
  auto gathered = [&](size_t j) { return plain(static_cast<int>(j / count), j % count); };
  {  // AllGather
    DevBuf recv(count * gN * es), send(count * es);
    fill(inPlace ? recv : send, t, count, inPlace ? gRank * count : 0,
         [&](size_t i) { return plain(gRank, i); });
    const void* in = inPlace ? static_cast<const void*>(recv.at(gRank * count * es)) : send.get();
    NCCL_OK(ncclAllGather(in, recv.get(), count, t, comm, gStream));
    syncStream(gStream);
    expectValues(inPlace ? "AllGather in-place" : "AllGather", t, -1, read(recv, t, count * gN),
                 gathered);
  }
  {  // Gather
    DevBuf recv(count * gN * es), send(count * es);
    fill(inPlace ? recv : send, t, count, inPlace ? gRank * count : 0,
         [&](size_t i) { return plain(gRank, i); });
    const void* in = inPlace ? static_cast<const void*>(recv.at(gRank * count * es)) : send.get();
    NCCL_OK(ncclGather(in, recv.get(), count, t, root, comm, gStream));
    syncStream(gStream);
    if (gRank == root) {
      expectValues(inPlace ? "Gather in-place" : "Gather", t, -1, read(recv, t, count * gN),
                   gathered);
    }
  }
  {  // Scatter: block j of root's input goes to rank j
    DevBuf send(count * gN * es), recv(count * es);
    fill(send, t, count * gN, 0, [&](size_t j) { return plain(gRank, j); });
    void* out = inPlace ? send.at(gRank * count * es) : recv.get();
    NCCL_OK(ncclScatter(send.get(), out, count, t, root, comm, gStream));
    syncStream(gStream);
    expectValues(inPlace ? "Scatter in-place" : "Scatter", t, -1,
                 read(inPlace ? send : recv, t, count, inPlace ? gRank * count : 0),
                 [&](size_t i) { return plain(root, gRank * count + i); });
  }
  {  // AlltoAll: block j of rank r's input goes to block r of rank j
    DevBuf send(count * gN * es), recv(count * gN * es);
    fill(send, t, count * gN, 0, [&](size_t j) { return plain(gRank, j) + (j / count) % 2; });
    const DevBuf& out = inPlace ? send : recv;
    NCCL_OK(ncclAlltoAll(send.get(), out.get(), count, t, comm, gStream));
    syncStream(gStream);
    expectValues(inPlace ? "AlltoAll in-place" : "AlltoAll", t, -1, read(out, t, count * gN),
                 [&](size_t j) {
                   size_t from = j / count;
                   size_t src = gRank * count + j % count;
                   return plain(static_cast<int>(from), src) + (src / count) % 2;
                 });
  }
}

int collectives() {
  ncclComm_t comm = initComm();
  for (ncclDataType_t t : kTypes) {
    for (bool inPlace : {false, true}) {
      reductions(comm, t, 13, inPlace);
      dataMovement(comm, t, 5, inPlace);
    }
  }
  // A larger float reduction exercises uneven ring chunks; a zero count must be a no-op.
  reductions(comm, ncclFloat32, 1031, false);
  NCCL_OK(ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, comm, gStream));
  NCCL_OK(ncclCommDestroy(comm));
  return 0;
}

int p2p() {
  ncclComm_t comm = initComm();
  const size_t count = 257;
  const int right = (gRank + 1) % gN, left = (gRank + gN - 1) % gN;
  auto val = [](int from, int to, size_t i) {
    return static_cast<double>((from * 3 + to + i) % 100);
  };
  for (int round = 0; round < 2; ++round) {  // ring, twice, so per-peer sequences advance
    DevBuf send(count * 4), recv(count * 4);
    fill(send, ncclInt32, count, 0, [&](size_t i) { return val(gRank, right, i) + round; });
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclSend(send.get(), count, ncclInt32, right, comm, gStream));
    NCCL_OK(ncclRecv(recv.get(), count, ncclInt32, left, comm, gStream));
    NCCL_OK(ncclGroupEnd());
    syncStream(gStream);
    expectValues("p2p ring", ncclInt32, -1, read(recv, ncclInt32, count),
                 [&](size_t i) { return val(left, gRank, i) + round; });
  }
  {  // pairwise exchange with every rank, self included, receives posted before sends
    DevBuf send(count * 4 * gN), recv(count * 4 * gN);
    fill(send, ncclInt32, count * gN, 0,
         [&](size_t j) { return val(gRank, static_cast<int>(j / count), j % count); });
    NCCL_OK(ncclGroupStart());
    for (int p = 0; p < gN; ++p) {
      NCCL_OK(ncclRecv(recv.at(p * count * 4), count, ncclInt32, p, comm, gStream));
    }
    for (int p = 0; p < gN; ++p) {
      NCCL_OK(ncclSend(send.at(p * count * 4), count, ncclInt32, p, comm, gStream));
    }
    NCCL_OK(ncclGroupEnd());
    syncStream(gStream);
    expectValues("p2p pairwise", ncclInt32, -1, read(recv, ncclInt32, count * gN),
                 [&](size_t j) { return val(static_cast<int>(j / count), gRank, j % count); });
  }
  {  // a collective and p2p in one group, issued in different orders on odd and even ranks
    DevBuf a(4 * 4), s(4), r(4);
    fill(a, ncclInt32, 4, 0, [&](size_t) { return 1; });
    fill(s, ncclInt32, 1, 0, [&](size_t) { return gRank; });
    NCCL_OK(ncclGroupStart());
    if (gRank % 2 == 0)
      NCCL_OK(ncclAllReduce(a.get(), a.get(), 4, ncclInt32, ncclSum, comm, gStream));
    NCCL_OK(ncclSend(s.get(), 1, ncclInt32, right, comm, gStream));
    NCCL_OK(ncclRecv(r.get(), 1, ncclInt32, left, comm, gStream));
    if (gRank % 2 == 1)
      NCCL_OK(ncclAllReduce(a.get(), a.get(), 4, ncclInt32, ncclSum, comm, gStream));
    NCCL_OK(ncclGroupEnd());
    syncStream(gStream);
    expectValues("group allreduce", ncclInt32, -1, read(a, ncclInt32, 4),
                 [&](size_t) { return gN; });
    expectValues("group recv", ncclInt32, -1, read(r, ncclInt32, 1), [&](size_t) { return left; });
  }
  NCCL_OK(ncclCommDestroy(comm));
  return 0;
}

// Sums each member's parent rank over `comm` and checks the result is `expected`.
void checkSum(ncclComm_t comm, double expected, const char* what) {
  DevBuf b(8);
  fill(b, ncclFloat64, 1, 0, [&](size_t) { return gRank; });
  NCCL_OK(ncclAllReduce(b.get(), b.get(), 1, ncclFloat64, ncclSum, comm, gStream));
  syncStream(gStream);
  expectValues(what, ncclFloat64, -1, read(b, ncclFloat64, 1), [&](size_t) { return expected; });
}

int split() {
  ncclComm_t comm = initComm();
  // The last rank (of 3 or more) opts out; the others split by parity, keys reversing the order.
  bool optOut = gN >= 3 && gRank == gN - 1;
  int color = optOut ? NCCL_SPLIT_NOCOLOR : gRank % 2;
  ncclComm_t sub = nullptr;
  NCCL_OK(ncclCommSplit(comm, color, -gRank, &sub, nullptr));
  if (optOut) {
    CHECK(sub == nullptr, "NCCL_SPLIT_NOCOLOR must give a NULL communicator");
  } else {
    std::vector<int> members;
    for (int r = 0; r < gN; ++r) {
      if (r % 2 == color && !(gN >= 3 && r == gN - 1)) members.push_back(r);
    }
    int count = -1, rank = -1;
    NCCL_OK(ncclCommCount(sub, &count));
    NCCL_OK(ncclCommUserRank(sub, &rank));
    CHECK(count == static_cast<int>(members.size()), "split count %d", count);
    int expectedRank = 0;
    for (int r : members) expectedRank += r > gRank;  // keys reverse the order
    CHECK(rank == expectedRank, "split rank %d, expected %d", rank, expectedRank);
    double sum = 0;
    for (int r : members) sum += r;
    checkSum(sub, sum, "AllReduce on split comm");
    NCCL_OK(ncclCommDestroy(sub));
  }
  checkSum(comm, gN * (gN - 1) / 2.0, "AllReduce on parent after split");
  NCCL_OK(ncclCommDestroy(comm));
  return 0;
}

int shrink() {
  ncclComm_t comm = initComm();
  checkSum(comm, gN * (gN - 1) / 2.0, "AllReduce before shrink");
  if (gRank == 0) _exit(0);  // the parent's root leaves: shrink must not need it
  int excluded[] = {0};
  ncclComm_t sub = nullptr;
  NCCL_OK(ncclCommShrink(comm, excluded, 1, &sub, nullptr, NCCL_SHRINK_DEFAULT));
  int count = -1, rank = -1;
  NCCL_OK(ncclCommCount(sub, &count));
  NCCL_OK(ncclCommUserRank(sub, &rank));
  CHECK(count == gN - 1 && rank == gRank - 1, "shrunk comm: rank %d of %d", rank, count);
  checkSum(sub, gN * (gN - 1) / 2.0, "AllReduce after shrink");
  NCCL_OK(ncclCommDestroy(sub));
  NCCL_OK(ncclCommAbort(comm));
  return 0;
}

int abortBlocked() {
  ncclComm_t comm = initComm();
  if (gRank == 1) {
    // Never sends; stays alive well past the abort so rank 0 sees the abort, not our exit.
    std::this_thread::sleep_for(std::chrono::seconds(3));
    NCCL_OK(ncclCommDestroy(comm));
    return 0;
  }
  std::atomic<int> result{-1};
  std::thread blocked([&] {
    int v = 0;
    result = ncclRecv(&v, 1, ncclInt32, 1, comm, gStream);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(result.load() == -1, "the receive returned before anything was sent");
  auto start = std::chrono::steady_clock::now();
  NCCL_OK(ncclCommAbort(comm));
  blocked.join();
  auto took = std::chrono::steady_clock::now() - start;
  CHECK(result.load() != ncclSuccess && result.load() != -1, "blocked call returned %d",
        result.load());
  CHECK(took < std::chrono::seconds(2), "abort took too long");
  return 0;
}

}  // namespace ncclrec::hostnccl::testing

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s <scenario> <rank> <nranks> <dir>\n", argv[0]);
    return 2;
  }
  std::string scenario = argv[1];
  gRank = std::atoi(argv[2]);
  gN = std::atoi(argv[3]);
  gDir = argv[4];
  if (!selectDevice(gRank)) return 77;  // no GPU for the CUDA build: the harness skips
  gStream = makeStream();
  std::map<std::string, std::function<int()>> scenarios = {{"collectives", collectives},
                                                           {"p2p", p2p},
                                                           {"split", split},
                                                           {"shrink", shrink},
                                                           {"abort", abortBlocked},
                                                           {"timeout", timeout},
                                                           {"mismatch", mismatch},
                                                           {"kill", killedPeer},
                                                           {"killwrite", killedWhileWriting},
                                                           {"errors", badInput},
                                                           {"initall", initAll},
                                                           {"fork", forkedRanks},
                                                           {"duplicate_device", duplicateDevice},
                                                           {"placement", placement},
                                                           {"nonblocking", nonblocking},
                                                           {"init_nranks", initNranksMismatch},
                                                           {"init_rank_twice", initRankTwice}};
  auto it = scenarios.find(scenario);
  if (it == scenarios.end()) {
    std::fprintf(stderr, "unknown scenario %s\n", scenario.c_str());
    return 2;
  }
  int rc = it->second();
  return rc != 0 ? rc : (gFailures == 0 ? 0 : 1);
}
