// One rank of the completion tests (interpose/completion_test.cc): hostnccl under the preloaded
// shim with the fake CUDA driver (NCCLREC_CUDA_LIBRARY), counting the end markers (cuEventRecord)
// each op costs and reading its own live black box to see when ops complete.
//
// usage: completion_worker <scenario> <rank> <nranks> <dir>
//   nonblocking  a nonblocking communicator: all-reduces and grouped send/recv; rank 1 is late
//                now and then, so rank 0's op stays in progress. Each op must stay enqueued,
//                with no marker, until ncclCommGetAsyncError settles; then cost
//                $MARKERS_PER_OP markers (1 with CUDA markers, 0 when the plugin times it).
//   auto         blocking communicators: a 2-rank one (ops cost $MARKERS_PER_OP markers) and a
//                1-rank one per rank (NCCL gives it no kernel channel: always 1 marker per op).
// Exit 0 when every check held; a failed check prints one line on stderr.
#include <dlfcn.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "format/model.h"
#include "format/reader.h"

namespace {

using ncclrec::format::EventRecord;
using ncclrec::format::EventState;
using ncclrec::format::OpType;

int gRank = 0, gN = 1, gBad = 0;
long long gPerOp = 1;
std::string gDir;

#define OK(call)                                                           \
  do {                                                                     \
    ncclResult_t rc_ = (call);                                             \
    if (rc_ != ncclSuccess && rc_ != ncclInProgress) {                     \
      std::fprintf(stderr, "rank %d: %s failed: %d\n", gRank, #call, rc_); \
      std::exit(3);                                                        \
    }                                                                      \
  } while (0)

#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) {                                         \
      std::fprintf(stderr, "rank %d: ", gRank);            \
      std::fprintf(stderr, __VA_ARGS__);                   \
      std::fprintf(stderr, " (%s:%d)\n", #cond, __LINE__); \
      ++gBad;                                              \
    }                                                      \
  } while (0)

// cuEventRecord calls of this process so far: the fake driver the shim opened (same path, so the
// same loaded object).
long long markers() {
  static auto count = [] {
    const char* path = std::getenv("NCCLREC_CUDA_LIBRARY");
    void* h = path != nullptr ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
    return h != nullptr
               ? reinterpret_cast<long long (*)(const char*)>(dlsym(h, "fakeCudaCallCount"))
               : nullptr;
  }();
  if (count == nullptr) {
    std::fprintf(stderr, "rank %d: no fake CUDA driver in NCCLREC_CUDA_LIBRARY\n", gRank);
    std::exit(4);
  }
  return count("cuEventRecord");
}

// The newest event of `op` in this process's live black box.
EventRecord newest(OpType op) {
  auto loaded = ncclrec::format::loadPaths({std::getenv("NCCLREC_DIR")});
  EventRecord found{};
  if (!loaded.ok()) return found;
  for (const auto& rank : loaded.value().ranks) {
    if (rank.pid != getpid()) continue;
    for (const EventRecord& e : rank.events)
      if (e.op == op) found = e;
  }
  return found;
}

// The newest communicator record of this process's live black box with id `comm_id`.
ncclrec::format::Comm newestComm(uint64_t comm_id) {
  auto loaded = ncclrec::format::loadPaths({std::getenv("NCCLREC_DIR")});
  ncclrec::format::Comm found{};
  if (!loaded.ok()) return found;
  for (const auto& rank : loaded.value().ranks) {
    if (rank.pid != getpid()) continue;
    for (const ncclrec::format::Comm& c : rank.comms)
      if (c.comm_id == comm_id) found = c;
  }
  return found;
}

bool completesSoon(OpType op) {
  for (int i = 0; i < 600; ++i) {
    if (newest(op).state == EventState::kCompleted) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

ncclUniqueId shareId(const std::string& name, bool create) {
  ncclUniqueId id;
  const std::string path = gDir + "/" + name;
  if (create) {
    OK(ncclGetUniqueId(&id));
    std::ofstream(path + ".tmp", std::ios::binary).write(id.internal, sizeof id.internal);
    std::rename((path + ".tmp").c_str(), path.c_str());
    return id;
  }
  for (int i = 0; i < 3000; ++i) {
    std::ifstream in(path, std::ios::binary);
    if (in.read(id.internal, sizeof id.internal)) return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::exit(5);
}

// Polls ncclCommGetAsyncError until the communicator settles; how many polls said in progress.
int settle(ncclComm_t comm) {
  ncclResult_t state = ncclInProgress;
  int polls = 0;
  for (; state == ncclInProgress; ++polls) {
    OK(ncclCommGetAsyncError(comm, &state));
    if (state == ncclInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(state == ncclSuccess, "settled at %d", state);
  return polls - 1;
}

// Checks a nonblocking op of `op`, issued with `markers_before`, that returned `rc`.
void checkHeld(OpType op, ncclResult_t rc, ncclComm_t comm, long long markers_before, int ops,
               const char* what) {
  if (rc == ncclInProgress) {
    CHECK(markers() == markers_before, "%s: a marker was recorded before NCCL's launch", what);
    // With markers nothing else can move it; the plugin may start and complete it from its
    // kernel channels before the settle, which is real progress.
    if (gPerOp > 0) {
      CHECK(newest(op).state == EventState::kEnqueued, "%s: not enqueued before the settle (%d)",
            what, static_cast<int>(newest(op).state));
    }
  }
  settle(comm);
  CHECK(markers() - markers_before == gPerOp * ops, "%s: %lld markers, want %lld", what,
        markers() - markers_before, gPerOp * ops);
  CHECK(completesSoon(op), "%s: never completed", what);
}

int nonblocking() {
  const ncclUniqueId id = shareId("id0", gRank == 0);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  // Rank 1 comes late: rank 0's creation stays in progress until it does.
  if (gRank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const ncclResult_t init = ncclCommInitRankConfig(&comm, gN, id, gRank, &config);
  OK(init);
  const uint64_t comm_id = newest(OpType::kCommInitRankConfig).commId();
  if (init == ncclInProgress && gRank == 0) {
    // The creation is on record while it runs: its call pending, its record being created, with
    // the config's blocking = 0; both settle only when the program's polling sees it settle.
    CHECK(newest(OpType::kCommInitRankConfig).state == EventState::kEnqueued,
          "nonblocking init: not pending before the settle (%d)",
          static_cast<int>(newest(OpType::kCommInitRankConfig).state));
    CHECK(ncclrec::format::inCreation(newestComm(comm_id)),
          "nonblocking init: its record is not in creation (state %u)", newestComm(comm_id).state);
    CHECK(newestComm(comm_id).blocking == 0, "nonblocking init: blocking %d recorded",
          newestComm(comm_id).blocking);
    CHECK(!newestComm(comm_id).root.empty(), "nonblocking init: no bootstrap root recorded");
  }
  settle(comm);
  CHECK(completesSoon(OpType::kCommInitRankConfig), "nonblocking init: never completed");
  CHECK((newestComm(comm_id).state & ncclrec::format::kCommInitialized) != 0,
        "nonblocking init: its record is not initialized after the settle (state %u)",
        newestComm(comm_id).state);
  // The first op is timed by its marker whatever the choice: under auto the plugin takes ops only
  // once NCCL has reported a kernel channel done.
  {
    float v[4] = {1, 1, 1, 1};
    const long long before = markers();
    const ncclResult_t rc = ncclAllReduce(v, v, 4, ncclFloat32, ncclSum, comm, nullptr);
    OK(rc);
    if (rc == ncclInProgress) {
      CHECK(markers() == before, "first all-reduce: a marker was recorded before NCCL's launch");
    }
    settle(comm);
    CHECK(markers() - before == 1, "first all-reduce: %lld markers, want 1", markers() - before);
    CHECK(completesSoon(OpType::kAllReduce), "first all-reduce: never completed");
  }
  int held = 0;
  for (int i = 0; i < 12; ++i) {
    if (gRank == 1 && i % 3 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(80));
    float v[4] = {1, 1, 1, 1};
    const long long before = markers();
    const ncclResult_t rc = ncclAllReduce(v, v, 4, ncclFloat32, ncclSum, comm, nullptr);
    OK(rc);
    held += rc == ncclInProgress;
    checkHeld(OpType::kAllReduce, rc, comm, before, 1, "all-reduce");
    CHECK(v[3] == gN, "all-reduce gave %g", v[3]);
  }
  for (int i = 0; i < 4; ++i) {
    if (gRank == 1 && i % 2 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(80));
    float out = static_cast<float>(gRank), in = -1;
    const long long before = markers();
    OK(ncclGroupStart());
    OK(ncclSend(&out, 1, ncclFloat32, (gRank + 1) % gN, comm, nullptr));
    OK(ncclRecv(&in, 1, ncclFloat32, (gRank + gN - 1) % gN, comm, nullptr));
    const ncclResult_t rc = ncclGroupEnd();
    OK(rc);
    held += rc == ncclInProgress;
    checkHeld(OpType::kRecv, rc, comm, before, 2, "grouped send/recv");
    CHECK(in == static_cast<float>((gRank + gN - 1) % gN), "received %g", in);
  }
  CHECK(held > 0, "no call returned ncclInProgress: nothing was tested");
  OK(ncclCommDestroy(comm));
  return 0;
}

int autoCompletion() {
  ncclComm_t comm = nullptr, solo = nullptr;
  OK(ncclCommInitRank(&comm, gN, shareId("id0", gRank == 0), gRank));
  OK(ncclCommInitRank(&solo, 1, shareId("solo" + std::to_string(gRank), true), 0));
  {  // the first op: its marker times it, until NCCL has reported a kernel channel done
    float v[4] = {1, 1, 1, 1};
    const long long before = markers();
    OK(ncclAllReduce(v, v, 4, ncclFloat32, ncclSum, comm, nullptr));
    CHECK(markers() - before == 1, "first all-reduce: %lld markers, want 1", markers() - before);
  }
  for (int i = 0; i < 20; ++i) {
    float v[4] = {1, 1, 1, 1};
    long long before = markers();
    OK(ncclAllReduce(v, v, 4, ncclFloat32, ncclSum, comm, nullptr));
    CHECK(markers() - before == gPerOp, "all-reduce %d: %lld markers, want %lld", i,
          markers() - before, gPerOp);
    before = markers();
    OK(ncclBroadcast(v, v, 4, ncclFloat32, 0, solo, nullptr));
    CHECK(markers() - before == 1, "1-rank broadcast %d: %lld markers, want 1", i,
          markers() - before);
    float out = 1, in = 0;
    before = markers();
    OK(ncclGroupStart());
    OK(ncclSend(&out, 1, ncclFloat32, (gRank + 1) % gN, comm, nullptr));
    OK(ncclRecv(&in, 1, ncclFloat32, (gRank + gN - 1) % gN, comm, nullptr));
    OK(ncclGroupEnd());
    CHECK(markers() - before == 2 * gPerOp, "group %d: %lld markers, want %lld", i,
          markers() - before, 2 * gPerOp);
  }
  for (OpType op : {OpType::kAllReduce, OpType::kBroadcast, OpType::kRecv})
    CHECK(completesSoon(op), "op %d never completed", static_cast<int>(op));
  OK(ncclCommDestroy(solo));
  OK(ncclCommDestroy(comm));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s <nonblocking|auto> <rank> <nranks> <dir>\n", argv[0]);
    return 2;
  }
  const std::string scenario = argv[1];
  gRank = std::atoi(argv[2]);
  gN = std::atoi(argv[3]);
  gDir = argv[4];
  if (const char* per_op = std::getenv("MARKERS_PER_OP")) gPerOp = std::atoll(per_op);
  const int rc = scenario == "nonblocking" ? nonblocking()
                 : scenario == "auto"      ? autoCompletion()
                                           : 2;
  return rc != 0 ? rc : (gBad == 0 ? 0 : 1);
}
