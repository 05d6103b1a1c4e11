// End-to-end tests of libncclrec.so: what it records. nccl_caller runs against the stub NCCL with
// the shim preloaded, and the black boxes and dumps it leaves are read back with the reader.
// Process life-cycle cases (fork, kill, signals, exit, watchdog, triggers) are in
// interpose_process_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "format/bbox_layout.h"
#include "format/reader.h"
#include "interpose/testing/shim_harness.h"

namespace ncclrec::interpose {
namespace {

using format::DumpReason;
using format::EventRecord;
using format::EventState;
using format::OpType;
using format::RankData;
using support::Process;
using support::ProcessResult;
using testing::Env;
using testing::eventsOf;
using testing::opsOf;
using testing::ShimHarness;

constexpr int kFloat = 7;  // ncclFloat32
constexpr int kSum = 0;    // ncclSum
constexpr uint64_t kCount = 1024;

// One process's script for the every-entry-point test; `peer` is the other rank of two.
std::vector<std::string> everyEntryPointScript(int rank) {
  const std::string r = std::to_string(rank);
  const std::string peer = std::to_string(1 - rank);
  return {"getuniqueid",
          "init:2:" + r,
          "allreduce:2",
          "broadcast:1:1",
          "bcast:1",
          "reduce:1:1",
          "allgather:1",
          "reducescatter:1",
          "alltoall:1",
          "gather:1:1",
          "scatter:1:0",
          "send:2:" + peer,
          "recv:1:" + peer,
          "group",
          "group",
          "allreduce:1",
          "send:1:" + peer,
          "recv:1:" + peer,
          "groupend",
          "groupend",
          "group",
          "allreduce:1",
          "groupsimend",
          "split:5:" + r,  // the same color on both ranks: one child
          "allreduce:2",
          "destroy",
          "split:" + std::to_string(7 + rank) + ":0",  // different colors: two children
          "destroy",
          "split:-1:0",
          "shrink:-1",
          "allreduce:1",
          "destroy",
          "initconfig:2:" + r,
          "premulsum",
          "redopdestroy",
          "finalize",
          "revoke",
          "destroy",
          "initscalable:2:" + r,
          "abort",
          "initall:2",
          "allreduce:1",
          "asyncerror",  // no async error: not recorded
          "exit:0"};
}

// What each event of that script must hold. `comm` and `child` are labels of communicators,
// resolved to ids per process; "" is no communicator (id 0).
struct Expected {
  OpType op;
  std::string comm;
  uint64_t seq = 0;
  int peer = -1;
  int redop = -1;
  bool data = false;  // 1024 floats
  int depth = 0;
  std::string child = "";  // the comm id in aux64 (split, shrink)
};

std::vector<Expected> everyEntryPointEvents() {
  using enum OpType;
  return {
      {kGetUniqueId, ""},
      {kCommInitRank, "world"},
      {kAllReduce, "world", 1, -1, kSum, true},
      {kAllReduce, "world", 2, -1, kSum, true},
      {kBroadcast, "world", 3, 1, -1, true},
      {kBcast, "world", 4, 0, -1, true},
      {kReduce, "world", 5, 1, kSum, true},
      {kAllGather, "world", 6, -1, -1, true},
      {kReduceScatter, "world", 7, -1, kSum, true},
      {kAlltoAll, "world", 8, -1, -1, true},
      {kGather, "world", 9, 1, -1, true},
      {kScatter, "world", 10, 0, -1, true},
      {kSend, "world", 1, -2, -1, true},  // peer -2: the other rank
      {kSend, "world", 2, -2, -1, true},
      {kRecv, "world", 1, -2, -1, true},
      {kGroupStart, "", 0, -1, -1, false, 0},
      {kGroupStart, "", 0, -1, -1, false, 1},
      {kAllReduce, "world", 11, -1, kSum, true, 2},
      {kSend, "world", 3, -2, -1, true, 2},
      {kRecv, "world", 2, -2, -1, true, 2},
      {kGroupEnd, "", 0, -1, -1, false, 2},
      {kGroupEnd, "", 0, -1, -1, false, 1},
      {kGroupStart, "", 0, -1, -1, false, 0},
      {kAllReduce, "world", 12, -1, kSum, true, 1},
      {kGroupSimulateEnd, "", 0, -1, -1, false, 1},
      {kCommSplit, "world", 0, -1, -1, false, 0, "child5"},
      {kAllReduce, "child5", 1, -1, kSum, true},
      {kAllReduce, "child5", 2, -1, kSum, true},
      {kCommDestroy, "child5"},
      {kCommSplit, "world", 0, -1, -1, false, 0, "childX"},
      {kCommDestroy, "childX"},
      {kCommSplit, "world", 0, -1, -1, false, 0, ""},  // NOCOLOR: no child
      {kCommShrink, "world", 0, -1, -1, false, 0, "shrunk"},
      {kAllReduce, "shrunk", 1, -1, kSum, true},
      {kCommDestroy, "shrunk"},
      {kCommInitRankConfig, "named"},
      {kRedOpCreatePreMulSum, "named"},
      {kRedOpDestroy, "named", 0, -1, 5},  // the op PreMulSum made: ncclNumOps + 0
      {kCommFinalize, "named"},
      {kCommRevoke, "named"},
      {kCommDestroy, "named"},
      {kCommInitRankScalable, "scalable"},
      {kCommAbort, "scalable"},
      {kCommInitAll, "all"},
      {kAllReduce, "all", 1, -1, kSum, true},
  };
}

// Checks one process's black box against the table; returns the label -> comm id map it found.
std::map<std::string, uint64_t> checkEveryEntryPoint(const RankData& box, int rank) {
  std::map<std::string, uint64_t> ids = {{"", 0}};
  const std::vector<Expected> expected = everyEntryPointEvents();
  std::vector<OpType> want_ops;
  for (const Expected& x : expected) want_ops.push_back(x.op);
  EXPECT_EQ(opsOf(box), want_ops) << "rank " << rank;
  if (box.events.size() != expected.size()) return ids;
  EXPECT_EQ(box.events_lost, 0u);
  EXPECT_EQ(box.events_total, expected.size());

  // The op-specific words of event i (RankData::event_aux holds the non-zero ones).
  auto aux = [&](uint64_t i) {
    for (const format::EventAux& a : box.event_aux) {
      if (a.index == i) return a;
    }
    return format::EventAux{i, 0, 0, 0};
  };
  auto resolve = [&](const std::string& label, uint64_t id, const EventRecord& e) {
    auto [it, inserted] = ids.emplace(label, id);
    EXPECT_EQ(it->second, id) << "label " << label << " at event " << e.index;
  };
  for (size_t i = 0; i < expected.size(); ++i) {
    const Expected& x = expected[i];
    const EventRecord& e = box.events[i];
    SCOPED_TRACE("rank " + std::to_string(rank) + " event " + std::to_string(i) + " " +
                 std::string(format::opName(x.op)));
    EXPECT_EQ(e.index, i);
    EXPECT_EQ(e.state, EventState::kCompleted);
    EXPECT_EQ(e.result, 0);
    EXPECT_EQ(e.tid(), static_cast<uint32_t>(box.pid));  // all from the main thread
    EXPECT_EQ(e.stream(), 0u);
    EXPECT_GT(e.enqueueNs(), 0);
    EXPECT_LE(e.enqueueNs(), e.startNs());
    EXPECT_LE(e.startNs(), e.endNs());
    resolve(x.comm, e.commId(), e);
    if (x.comm.empty()) {
      EXPECT_EQ(e.commId(), 0u);
    } else {
      EXPECT_NE(e.commId(), 0u);
    }
    // Rank and size: the communicator's, known before the call for the creating calls.
    const bool none = x.comm.empty();
    const bool init_all = x.op == OpType::kCommInitAll;
    const int want_rank = none || init_all ? -1 : x.comm == "all" ? 1 : rank;
    EXPECT_EQ(e.rank(), want_rank);
    EXPECT_EQ(e.nranks(), none ? 0 : 2);
    EXPECT_EQ(e.op_seq, x.seq);
    EXPECT_EQ(e.peer(), x.peer == -2 ? 1 - rank : x.peer);
    EXPECT_EQ(e.redop, x.redop);
    if (x.data) {
      EXPECT_EQ(e.count, kCount);
      EXPECT_EQ(e.dtype, kFloat);
      EXPECT_EQ(e.device(), x.comm == "all" ? 1 : rank);  // the stub's device: rank % 8
    }
    EXPECT_EQ(e.group_depth, x.depth);
    EXPECT_EQ((e.flags & format::kEventInGroup) != 0, x.depth > 0);
    if (x.op == OpType::kCommSplit || x.op == OpType::kCommShrink)
      resolve(x.child, aux(i).aux64, e);
  }
  // Op-specific words.
  const std::vector<EventRecord>& ev = box.events;
  EXPECT_NE(aux(0).aux64, 0u) << "GetUniqueId: the id's hash";
  EXPECT_EQ(aux(1).aux64, ids["world"]) << "InitRank: the new comm id";
  EXPECT_EQ(aux(25).aux, 5);
  EXPECT_EQ(aux(25).aux2, rank);
  EXPECT_EQ(aux(29).aux, 7 + rank);
  EXPECT_EQ(aux(31).aux, -1);
  EXPECT_EQ(aux(32).aux, 0) << "Shrink: exclude count";
  EXPECT_EQ(aux(36).aux64, 5u) << "PreMulSum: the op it made";
  EXPECT_EQ(ev[36].dtype, kFloat);
  EXPECT_EQ(aux(36).aux, 1) << "PreMulSum: ncclScalarHostImmediate";
  EXPECT_EQ(aux(43).aux64, ids["all"]);
  // Every label is a different communicator.
  std::set<uint64_t> distinct;
  for (const auto& [label, id] : ids) distinct.insert(id);
  EXPECT_EQ(distinct.size(), ids.size());
  return ids;
}

void checkEveryComm(const RankData& box, int rank, std::map<std::string, uint64_t> ids) {
  using namespace format;
  SCOPED_TRACE("rank " + std::to_string(rank));
  ASSERT_EQ(box.comms.size(), 8u);  // the NOCOLOR split made none
  struct Want {
    std::string label;
    OpType created_by;
    std::string parent;
    int color;
    int key;
    uint32_t state;
    uint64_t coll_seq;
  };
  // Every one was on record from the start of its creation (kCommCreating).
  constexpr uint32_t kMade = kCommCreating | kCommInitialized;
  const Want wants[] = {
      {"world", OpType::kCommInitRank, "", -1, -1, kMade, 12},
      {"child5", OpType::kCommSplit, "world", 5, rank, kMade | kCommDestroyed, 2},
      {"childX", OpType::kCommSplit, "world", 7 + rank, 0, kMade | kCommDestroyed, 0},
      {"shrunk", OpType::kCommShrink, "world", -1, -1, kMade | kCommDestroyed, 1},
      {"named", OpType::kCommInitRankConfig, "", -1, -1,
       kMade | kCommFinalized | kCommRevoked | kCommDestroyed, 0},
      {"scalable", OpType::kCommInitRankScalable, "", -1, -1, kMade | kCommAborted, 0},
  };
  for (const Want& w : wants) {
    SCOPED_TRACE(w.label);
    const Comm* c = testing::commById(box, ids[w.label]);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->created_by, w.created_by);
    EXPECT_EQ(c->parent_id, ids[w.parent]);
    EXPECT_EQ(c->rank, rank);
    EXPECT_EQ(c->nranks, 2);
    EXPECT_EQ(c->device, rank);
    EXPECT_EQ(c->global_rank, rank);
    EXPECT_EQ(c->color, w.color);
    EXPECT_EQ(c->key, w.key);
    EXPECT_EQ(c->state, w.state);
    EXPECT_EQ(c->coll_seq, w.coll_seq);
    EXPECT_EQ(c->init_result, 0);
    EXPECT_EQ(c->name, w.label == "named" ? "nccl_caller" : "");
    EXPECT_EQ(c->ended_ns != 0, (w.state & ~kMade) != 0);
  }
  std::vector<int> all_ranks;
  for (const Comm& c : box.comms) {
    if (c.comm_id != ids["all"]) continue;
    EXPECT_EQ(c.created_by, OpType::kCommInitAll);
    EXPECT_EQ(c.nranks, 2);
    all_ranks.push_back(c.rank);
  }
  EXPECT_EQ(all_ranks, (std::vector<int>{0, 1}));
}

TEST(ShimRecordTest, EveryEntryPointIsRecordedOnceWithItsFields) {
  ShimHarness h;
  const size_t script_size = everyEntryPointScript(0).size();
  std::unique_ptr<Process> procs[2] = {h.startCaller(everyEntryPointScript(0)),
                                       h.startCaller(everyEntryPointScript(1))};
  ASSERT_TRUE(procs[0] && procs[1]);
  std::map<std::string, uint64_t> ids[2];
  for (int rank = 0; rank < 2; ++rank) {
    const int pid = procs[rank]->pid();
    const ProcessResult r = procs[rank]->wait(testing::kRunTimeout);
    ASSERT_TRUE(r.exitedWith(0)) << r.describe();
    // One line per operation, every call succeeded.
    EXPECT_EQ(testing::lineCount(r.out), static_cast<int>(script_size)) << r.out;
    size_t ok = 0;
    for (size_t at = r.out.find(" rc=0"); at != std::string::npos; at = r.out.find(" rc=0", at + 1))
      ++ok;
    EXPECT_EQ(ok, script_size) << r.out;
    EXPECT_EQ(r.err, "");
    const RankData box = h.blackBox(pid);
    ASSERT_FALSE(HasFailure());
    EXPECT_EQ(box.global_rank, rank);
    EXPECT_EQ(box.world_size, 2);
    EXPECT_TRUE(box.exited);
    ids[rank] = checkEveryEntryPoint(box, rank);
    checkEveryComm(box, rank, ids[rank]);
  }
  ASSERT_FALSE(HasFailure());
  // Job-wide ids: equal on both ranks for the same communicator, different for the two children
  // of a split where the ranks chose different colors. InitAll ids are per process by design.
  for (const char* same : {"world", "child5", "shrunk", "named", "scalable"})
    EXPECT_EQ(ids[0][same], ids[1][same]) << same;
  EXPECT_NE(ids[0]["childX"], ids[1]["childX"]);
  // The abort dumped (before forwarding), and the exit dump holds what the black box holds.
  const std::vector<RankData> aborts = h.dumps(DumpReason::kAbort);
  EXPECT_EQ(aborts.size(), 2u);
  const std::vector<RankData> exits = h.dumps(DumpReason::kExit);
  ASSERT_EQ(exits.size(), 2u);
  for (const RankData& dump : exits) {
    const RankData box = h.blackBox(dump.pid);
    EXPECT_EQ(dump.events, box.events);
    EXPECT_EQ(dump.comms.size(), box.comms.size());
    EXPECT_TRUE(dump.exited);
  }
}

TEST(ShimRecordTest, AsyncErrorIsRecordedOnceWhenReported) {
  ShimHarness h;
  const ProcessResult r =
      h.runCaller({"init:1:0", "asyncerror", "asyncerror", "sleep:400", "exit:0"},
                  {{"STUB_NCCL_ASYNC_ERROR", "6"}});
  ASSERT_TRUE(r.exitedWith(0)) << r.describe();
  EXPECT_NE(r.out.find("asyncerror rc=0 async=6\nasyncerror rc=0 async=6\n"), std::string::npos);
  const RankData box = h.blackBox();
  const std::vector<EventRecord> events = eventsOf(box, OpType::kCommGetAsyncError);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].result, 6);
  const auto aux =
      std::find_if(box.event_aux.begin(), box.event_aux.end(),
                   [&](const format::EventAux& a) { return a.index == events[0].index; });
  ASSERT_NE(aux, box.event_aux.end());
  EXPECT_EQ(aux->aux, 6);  // the error code
  EXPECT_EQ(events[0].state, EventState::kFailed);
  EXPECT_NE(events[0].flags & format::kEventAsyncError, 0u);
  ASSERT_EQ(box.comms.size(), 1u);
  EXPECT_NE(box.comms[0].state & format::kCommAsyncErrorSeen, 0u);
  EXPECT_EQ(h.dumps(DumpReason::kNcclError).size(), 1u);
}

// ncclBcast calls ncclBroadcast through the PLT (as NCCL does), which lands in the shim again:
// the re-entry guard must pass it through, so one user call stays one event.
TEST(ShimRecordTest, NestedCallsThroughThePltAreNotRecordedTwice) {
  ShimHarness h;
  const ProcessResult r = h.runCaller({"init:1:0", "bcast:5", "stubcounts", "exit:0"});
  ASSERT_TRUE(r.exitedWith(0)) << r.describe();
  // The stub saw both levels of every call.
  EXPECT_NE(r.out.find("stubcounts rc=0 ncclBcast=5 ncclBroadcast=5 ncclCommInitRank=1 "
                       "ncclCommInitRankConfig=1\n"),
            std::string::npos)
      << r.out;
  const RankData box = h.blackBox();
  EXPECT_EQ(opsOf(box), (std::vector<OpType>{OpType::kCommInitRank, OpType::kBcast, OpType::kBcast,
                                             OpType::kBcast, OpType::kBcast, OpType::kBcast}));
  uint64_t seq = 0;
  for (const EventRecord& e : eventsOf(box, OpType::kBcast)) EXPECT_EQ(e.op_seq, ++seq);
}

TEST(ShimRecordTest, ResultOfANestedCallIsTheOuterEventsResult) {
  ShimHarness h;
  const ProcessResult r =
      h.runCaller({"init:1:0", "bcast:2"}, {{"STUB_NCCL_RESULT", "ncclBroadcast:3"}});
  EXPECT_TRUE(r.exitedWith(1)) << r.describe();
  EXPECT_NE(r.out.find("bcast:2 rc=3\n"), std::string::npos) << r.out;
  const RankData box = h.blackBox();
  EXPECT_EQ(eventsOf(box, OpType::kBroadcast).size(), 0u);
  const std::vector<EventRecord> bcasts = eventsOf(box, OpType::kBcast);
  ASSERT_EQ(bcasts.size(), 2u);
  for (const EventRecord& e : bcasts) {
    EXPECT_EQ(e.result, 3);
    EXPECT_EQ(e.state, EventState::kFailed);
  }
}

// Each init records the rank's device: the new comm's (ncclCommCuDevice) when it succeeds; when it
// fails there is no comm, yet the attempt is recorded (an init-failed comm record), with what can
// be known: here nothing (the stub is not hostnccl, and no CUDA driver is loaded).
TEST(ShimRecordTest, InitsRecordTheDeviceAndAFailedInitItsAttempt) {
  ShimHarness ok;
  ProcessResult r = ok.runCaller({"init:8:3", "exit:0"});
  ASSERT_TRUE(r.exitedWith(0)) << r.describe();
  RankData box = ok.blackBox();
  ASSERT_EQ(box.comms.size(), 1u);
  EXPECT_EQ(box.comms[0].device, 3);  // the stub puts rank r on device r % 8
  EXPECT_EQ(box.comms[0].device_source, format::kDeviceFromComm);
  EXPECT_EQ(box.comms[0].bus_id, "");
  ASSERT_EQ(eventsOf(box, OpType::kCommInitRank).size(), 1u);
  EXPECT_EQ(eventsOf(box, OpType::kCommInitRank)[0].device(), 3);

  ShimHarness failed;
  r = failed.runCaller({"init:8:3", "exit:0"}, {{"STUB_NCCL_RESULT", "ncclCommInitRank:5"}});
  EXPECT_NE(r.out.find("init:8:3 rc=5\n"), std::string::npos) << r.describe();
  box = failed.blackBox();
  ASSERT_EQ(box.comms.size(), 1u);
  const format::Comm& c = box.comms[0];
  EXPECT_EQ(c.state, format::kCommCreating | format::kCommInitFailed);
  EXPECT_EQ(c.handle, 0u);
  EXPECT_EQ(c.init_result, 5);
  EXPECT_EQ(c.rank, 3);
  EXPECT_EQ(c.nranks, 8);
  EXPECT_EQ(c.device, -1);
  EXPECT_EQ(c.device_source, format::kDeviceUnknown);
  const std::vector<EventRecord> inits = eventsOf(box, OpType::kCommInitRank);
  ASSERT_EQ(inits.size(), 1u);
  EXPECT_EQ(inits[0].state, EventState::kFailed);
  EXPECT_EQ(inits[0].commId(), c.comm_id);
  EXPECT_EQ(box.global_rank, 3);
}

TEST(ShimRecordTest, ForcedErrorComesBackUnchangedAndIsDumped) {
  // The sleep lets the watchdog write the error dump before the process exits.
  const std::vector<std::string> ops = {"init:2:0", "allreduce:2", "bcast:1", "sleep:500"};
  const Env env = {{"STUB_NCCL_RESULT", "ncclAllReduce:6"}};
  ShimHarness plain;
  const ProcessResult without = plain.runCaller(ops, env, /*preload=*/false);
  ShimHarness h;
  const ProcessResult with = h.runCaller(ops, env);
  EXPECT_TRUE(without.exitedWith(1)) << without.describe();
  EXPECT_TRUE(with.exitedWith(1)) << with.describe();
  EXPECT_EQ(with.out, without.out);
  EXPECT_NE(with.out.find("allreduce:2 rc=6\n"), std::string::npos);
  EXPECT_EQ(with.err, "");

  const RankData box = h.blackBox();
  const std::vector<EventRecord> failed = eventsOf(box, OpType::kAllReduce);
  ASSERT_EQ(failed.size(), 2u);
  for (const EventRecord& e : failed) {
    EXPECT_EQ(e.result, 6);
    EXPECT_EQ(e.state, EventState::kFailed);
    EXPECT_GT(e.endNs(), 0);
  }
  const std::vector<EventRecord> bcast = eventsOf(box, OpType::kBcast);
  ASSERT_EQ(bcast.size(), 1u);
  EXPECT_EQ(bcast[0].state, EventState::kCompleted);
  const std::vector<RankData> dumps = h.dumps(DumpReason::kNcclError);
  ASSERT_GE(dumps.size(), 1u);
  const std::vector<EventRecord> dumped = eventsOf(dumps[0], OpType::kAllReduce);
  ASSERT_FALSE(dumped.empty());
  EXPECT_EQ(dumped[0].result, 6);
}

// A one-rank communicator copies the send buffer into the receive buffer for every collective:
// the checksums of the receive buffer (zeroed after each) must not change under the shim.
TEST(ShimRecordTest, BuffersAndCountsAreForwardedUnchanged) {
  const std::vector<std::string> ops = {
      "init:1:0",        "checksum", "allreduce:1", "checksum", "broadcast:1:0", "checksum",
      "bcast:1",         "checksum", "reduce:1:0",  "checksum", "allgather:1",   "checksum",
      "reducescatter:1", "checksum", "alltoall:1",  "checksum", "gather:1:0",    "checksum",
      "scatter:1:0",     "checksum", "exit:0"};
  ShimHarness plain;
  const ProcessResult without = plain.runCaller(ops, {}, /*preload=*/false);
  ShimHarness h;
  const ProcessResult with = h.runCaller(ops);
  ASSERT_TRUE(without.exitedWith(0)) << without.describe();
  ASSERT_TRUE(with.exitedWith(0)) << with.describe();
  EXPECT_EQ(with.out, without.out);
  // The first checksum is of zeros, the others of the copied pattern (bcast copies in place:
  // its buffer is the zeroed receive buffer).
  std::vector<std::string> sums;
  for (size_t at = with.out.find(" sum="); at != std::string::npos;
       at = with.out.find(" sum=", at + 1))
    sums.push_back(with.out.substr(at + 5, 16));
  ASSERT_EQ(sums.size(), 10u) << with.out;
  EXPECT_NE(sums[1], sums[0]);
  for (size_t i : {2u, 4u, 5u, 6u, 7u, 8u, 9u}) EXPECT_EQ(sums[i], sums[1]) << i;
  EXPECT_EQ(sums[3], sums[0]);
  EXPECT_EQ(h.blackBox().events.size(), 10u);
}

TEST(ShimRecordTest, ConcurrentThreadsGetUniqueSequenceNumbers) {
  // Under ThreadSanitizer 80000 recorded calls take ~30 s on two cores: fewer keep it short.
  const int calls = testing::sanitizedWith("thread") ? 2500 : 10000;
  const uint64_t total = 8u * calls;
  ShimHarness h;
  const ProcessResult r = h.runCaller({"init:1:0", "threads:8:" + std::to_string(calls), "exit:0"},
                                      {{"NCCLREC_BUFFER", "131072"}});
  ASSERT_TRUE(r.exitedWith(0)) << r.describe();
  const RankData box = h.blackBox();
  EXPECT_EQ(box.events_total, total + 1);
  EXPECT_EQ(box.events_lost, 0u);
  const std::vector<EventRecord> events = eventsOf(box, OpType::kAllReduce);
  ASSERT_EQ(events.size(), total);
  std::vector<uint64_t> seqs;
  std::map<uint32_t, int> per_thread;
  for (const EventRecord& e : events) {
    seqs.push_back(e.op_seq);
    ++per_thread[e.tid()];
    EXPECT_EQ(e.state, EventState::kCompleted);
  }
  std::sort(seqs.begin(), seqs.end());
  for (size_t i = 0; i < seqs.size(); ++i) ASSERT_EQ(seqs[i], i + 1) << "seq missing or repeated";
  EXPECT_EQ(per_thread.size(), 8u);
  for (const auto& [tid, n] : per_thread) EXPECT_EQ(n, calls) << tid;
  ASSERT_EQ(box.comms.size(), 1u);
  EXPECT_EQ(box.comms[0].coll_seq, total);
}

TEST(ShimRecordTest, RingKeepsTheNewestEvents) {
  ShimHarness h;
  const ProcessResult r =
      h.runCaller({"init:1:0", "allreduce:1000", "exit:0"}, {{"NCCLREC_BUFFER", "64"}});
  ASSERT_TRUE(r.exitedWith(0)) << r.describe();
  const RankData box = h.blackBox();
  EXPECT_EQ(box.events_total, 1001u);
  EXPECT_EQ(box.events_lost, 1001u - 64);
  ASSERT_EQ(box.events.size(), 64u);
  for (size_t i = 0; i < 64; ++i) {
    const EventRecord& e = box.events[i];
    EXPECT_EQ(e.index, 937 + i);
    EXPECT_EQ(e.op, OpType::kAllReduce);
    EXPECT_EQ(e.op_seq, 937 + i);  // index 0 was the init
  }
  // The creating event is gone from the ring, not the communicator.
  ASSERT_EQ(box.comms.size(), 1u);
  EXPECT_EQ(box.comms[0].coll_seq, 1000u);
}

}  // namespace
}  // namespace ncclrec::interpose
