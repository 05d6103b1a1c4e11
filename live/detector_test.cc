#include "live/detector.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <map>
#include <memory>

#include "live/analysis.h"

namespace ncclrec::live {
namespace {

using format::OpType;

constexpr int64_t kS = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kS;
constexpr uint64_t kWorld = 0xa11ce00000000001ull;
constexpr uint64_t kPair = 0xb0b0000000000002ull;

// A job built call by call: each rank's ops in issue order, its comms, its liveness.
class Job {
 public:
  explicit Job(int nranks)
      : ops_(nranks),
        comms_(nranks),
        stacks_(nranks),
        threads_(nranks),
        live_(nranks, Liveness::kAlive) {}
  // Rank `r` is member `comm_rank` of `comm` (of `nranks`).
  Job& member(int r, uint64_t comm, int comm_rank, int nranks) {
    comms_[r][comm] = {comm, comm_rank, nranks, 0};
    return *this;
  }
  // Rank `r` is in ncclCommInitRank of `comm` as `comm_rank` of `nranks` since `t`: its record
  // says it is being created.
  Job& joining(int r, uint64_t comm, int comm_rank, int nranks, int64_t t) {
    comms_[r][comm] = {comm, comm_rank, nranks, format::kCommCreating};
    return add(r, comm, OpType::kCommInitRank, 0, t, 0);
  }
  // The world size every rank reports (RANK/WORLD_SIZE).
  Job& worldSize(int n) {
    world_ = n;
    return *this;
  }
  // `n` all-reduces #1..n on `comm`, one per second from kT0 + 1 s, each done 10 ms later.
  Job& steps(int r, uint64_t comm, int n, int64_t every_ns = kS) {
    for (int i = 1; i <= n; ++i) {
      const int64_t t = kT0 + i * every_ns;
      add(r, comm, OpType::kAllReduce, i, t, t + 10'000'000);
    }
    return *this;
  }
  // One op entered at `t` (kT0-based ns), done at `end` (0: incomplete).
  Job& add(int r, uint64_t comm, OpType op, uint64_t seq, int64_t t, int64_t end,
           uint64_t count = 1024, int peer = -1) {
    OpView v;
    v.index = ops_[r].size();
    v.op = op;
    v.comm_id = comm;
    v.op_seq = seq;
    v.count = count;
    v.dtype = 7;
    v.peer = peer;
    v.enqueue_ns = t;
    v.end_ns = end;
    v.state = end > 0 ? format::EventState::kCompleted : format::EventState::kEnqueued;
    ops_[r].push_back(v);
    return *this;
  }
  // The newest op of rank `r` was called from Python `function` at `file`:`line`.
  Job& site(int r, const char* function, const char* file, int line) {
    format::Stack stack;
    stack.id = static_cast<uint32_t>(stacks_[r].size() + 1);
    format::Frame f;
    f.python = true;
    f.function = function;
    f.file = file;
    f.line = line;
    stack.frames.push_back(f);
    stacks_[r][stack.id] = stack;
    ops_[r].back().stack_id = stack.id;
    return *this;
  }
  // Rank `r`'s latest thread snapshot, taken at `taken_ns`: its main thread in Python
  // `function` at `file`:`line`.
  Job& threadsAt(int r, int64_t taken_ns, const char* function, const char* file, int line) {
    format::ThreadState t;
    t.tid = 100 + r;
    t.name = "python3";
    format::Frame f;
    f.python = true;
    f.function = function;
    f.file = file;
    f.line = line;
    t.frames.push_back(f);
    threads_[r] = makeThreadsView(100 + r, taken_ns, format::DumpReason::kSnapshot, {std::move(t)});
    return *this;
  }
  Job& liveness(int r, Liveness l) {
    live_[r] = l;
    return *this;
  }
  Snapshot at(int64_t now_ns) const {
    Snapshot s;
    s.now_ns = now_ns;
    for (size_t r = 0; r < ops_.size(); ++r) {
      auto h = std::make_shared<RankHistory>();
      h->ops = ops_[r];
      h->events_total = ops_[r].size();
      h->stacks = std::make_shared<const StackMap>(stacks_[r]);
      for (const auto& [id, c] : comms_[r]) {
        CommView v;
        v.comm_id = id;
        v.rank = c.comm_rank;
        v.nranks = c.nranks;
        v.state = c.state;
        for (const OpView& o : ops_[r]) {
          if (o.comm_id == id && format::isCollective(o.op)) v.coll_seq = o.op_seq;
        }
        h->comms.push_back(v);
      }
      RankEntry e;
      e.global_rank = static_cast<int>(r);
      e.world_size = world_;
      e.start_ns = ops_[r].empty() ? 0 : ops_[r].front().enqueue_ns;
      e.pid = 100 + static_cast<int>(r);
      e.liveness = live_[r];
      e.history = h;
      e.threads = threads_[r];
      s.ranks.push_back(e);
    }
    analyze(&s);
    return s;
  }

 private:
  struct Member {
    uint64_t id;
    int comm_rank, nranks;
    uint32_t state;
  };
  int world_ = -1;
  std::vector<std::vector<OpView>> ops_;
  std::vector<std::map<uint64_t, Member>> comms_;
  std::vector<StackMap> stacks_;
  std::vector<std::shared_ptr<const ThreadsView>> threads_;
  std::vector<Liveness> live_;
};

// Ranks 0..n-1 on kWorld, each with 4 all-reduces done.
Job world(int n) {
  Job j(n);
  for (int r = 0; r < n; ++r) j.member(r, kWorld, r, n).steps(r, kWorld, 4);
  return j;
}

constexpr int64_t kStall = kT0 + 5 * kS;  // where the tests' stalls begin

TEST(DetectorTest, NothingPendingIsNoStall) {
  const Assessment a = assess(world(4).at(kT0 + 100 * kS), DetectorParams{});
  EXPECT_EQ(a.kind, StallKind::kNone);
}

TEST(DetectorTest, DifferentShapesAtOneSequenceNumberAreCertain) {
  Job j = world(2);
  j.add(0, kWorld, OpType::kAllReduce, 5, kStall, 0, 1024);
  j.add(1, kWorld, OpType::kAllReduce, 5, kStall, 0, 2048);
  const Assessment a = assess(j.at(kStall + 2 * kS), DetectorParams{});
  EXPECT_EQ(a.kind, StallKind::kCertain);
  EXPECT_EQ(a.since_ns, kStall);
  EXPECT_DOUBLE_EQ(a.hang_after_s, 1);
  EXPECT_EQ(a.waiting, (std::vector<int>{0, 1}));
  EXPECT_NE(a.why.find("rank 0 and rank 1 issued different ops as #5 (ncclAllReduce 1024 "
                       "float32 vs ncclAllReduce 2048 float32)"),
            std::string::npos)
      << a.why;
}

TEST(DetectorTest, AnExitedPeerIsCertainAndAwaited) {
  Job j = world(3);
  j.add(0, kWorld, OpType::kAllReduce, 5, kStall, 0)
      .add(1, kWorld, OpType::kAllReduce, 5, kStall, 0);
  j.liveness(2, Liveness::kExited);
  const Assessment a = assess(j.at(kStall + 2 * kS), DetectorParams{});
  EXPECT_EQ(a.kind, StallKind::kCertain);
  EXPECT_EQ(a.awaited, (std::vector<int>{2}));
  EXPECT_NE(a.why.find("rank 2 exited"), std::string::npos) << a.why;
}

TEST(DetectorTest, AWaitCycleAcrossCommunicatorsIsCertain) {
  // Rank 0 skipped world #5 and waits in the pair's #5; rank 1 waits in world #5.
  Job j = world(2);
  j.member(0, kPair, 0, 2).member(1, kPair, 1, 2).steps(0, kPair, 4).steps(1, kPair, 4);
  j.add(0, kPair, OpType::kAllReduce, 5, kStall, 0);
  j.add(1, kWorld, OpType::kAllReduce, 5, kStall, 0);
  const Assessment a = assess(j.at(kStall + 2 * kS), DetectorParams{});
  EXPECT_EQ(a.kind, StallKind::kCertain);
  EXPECT_EQ(a.awaited, (std::vector<int>{0, 1}));
}

TEST(DetectorTest, ARankInHostCodeGetsAWarningThenAHangAtTheHostThreshold) {
  Job j = world(4);
  for (int r = 1; r < 4; ++r) j.add(r, kWorld, OpType::kAllReduce, 5, kStall, 0);
  DetectorParams p;
  const Assessment a = assess(j.at(kStall + 6 * kS), p);
  EXPECT_EQ(a.kind, StallKind::kWaitHost);
  EXPECT_EQ(a.waiting, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(a.awaited, (std::vector<int>{0}));
  EXPECT_DOUBLE_EQ(a.warn_after_s, 5);  // no long host gap learnt: the floors
  EXPECT_DOUBLE_EQ(a.hang_after_s, 30);
  EXPECT_NE(a.why.find("for rank 0, in host code since its ncclAllReduce #4 returned"),
            std::string::npos)
      << a.why;

  Detector d(p);
  EXPECT_TRUE(d.step(j.at(kStall + 3 * kS)).empty());
  auto events = d.step(j.at(kStall + 4 * kS));  // a second before the warning: ask for threads
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, DetectorEvent::Type::kSnapshot);
  EXPECT_TRUE(d.step(j.at(kStall + 4.5 * kS)).empty());  // asked once
  events = d.step(j.at(kStall + 6 * kS));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, DetectorEvent::Type::kWarning);
  EXPECT_NE(events[0].line.find("stalled 6.0 s: ranks 1-3 wait"), std::string::npos)
      << events[0].line;
  EXPECT_TRUE(d.step(j.at(kStall + 8 * kS)).empty());  // said once
  events = d.step(j.at(kStall + 31 * kS));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, DetectorEvent::Type::kHang);
  EXPECT_TRUE(d.step(j.at(kStall + 40 * kS)).empty());  // one hang per stall
}

TEST(DetectorTest, TheHostStallNamesTheCallSitesThatTheBlackBoxesName) {
  Job j = world(2);
  j.site(0, "train_step", "/job/train.py", 40);
  j.add(1, kWorld, OpType::kAllReduce, 5, kStall, 0).site(1, "Trainer.save", "/job/ckpt.py", 57);
  const Assessment a = assess(j.at(kStall + 6 * kS), DetectorParams{});
  EXPECT_NE(a.why.find("rank 1 waits in ncclAllReduce #5 on comm a11ce000 from Trainer.save() "
                       "ckpt.py:57 for rank 0, in host code since its ncclAllReduce #4 from "
                       "train_step() train.py:40 returned"),
            std::string::npos)
      << a.why;
}

TEST(DetectorTest, TheHostStallSaysWhereTheAwaitedRankIsNowWhenASnapshotSince) {
  Job j = world(2);
  j.add(1, kWorld, OpType::kAllReduce, 5, kStall, 0);
  j.threadsAt(0, kStall + 4 * kS, "load_shard", "/job/data.py", 81);
  EXPECT_NE(assess(j.at(kStall + 6 * kS), DetectorParams{})
                .why.find("returned; it is now in load_shard() data.py:81"),
            std::string::npos);
  Job old = world(2);  // a snapshot from before the stall says nothing about now
  old.add(1, kWorld, OpType::kAllReduce, 5, kStall, 0);
  old.threadsAt(0, kStall - kS, "load_shard", "/job/data.py", 81);
  EXPECT_EQ(assess(old.at(kStall + 6 * kS), DetectorParams{}).why.find("now in"),
            std::string::npos);
}

TEST(DetectorTest, AStallThatResolvesSaysResumed) {
  Job j = world(2);
  j.add(1, kWorld, OpType::kAllReduce, 5, kStall, 0);
  Detector d(DetectorParams{});
  EXPECT_EQ(d.last().kind, StallKind::kNone);
  ASSERT_EQ(d.step(j.at(kStall + 7 * kS)).size(), 2u);  // the request for threads, the warning
  EXPECT_EQ(d.last().kind, StallKind::kWaitHost);  // what the steps said is kept for the caller
  EXPECT_DOUBLE_EQ(d.last().stalled_s, 7);
  Job later = world(2);
  later.add(0, kWorld, OpType::kAllReduce, 5, kStall + 23 * kS, kStall + 23 * kS + 1000);
  later.add(1, kWorld, OpType::kAllReduce, 5, kStall, kStall + 23 * kS + 1000);
  const auto events = d.step(later.at(kStall + 24 * kS));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, DetectorEvent::Type::kResumed);
  EXPECT_EQ(events[0].line, "resumed after 23 s");
  EXPECT_EQ(d.last().kind, StallKind::kNone);
}

TEST(DetectorTest, LongHostGapsOfTheJobRaiseTheHostThresholds) {
  // A job that already spent 20 s in host code between two calls (a checkpoint).
  Job j(2);
  for (int r = 0; r < 2; ++r) {
    j.member(r, kWorld, r, 2).steps(r, kWorld, 3);
    j.add(r, kWorld, OpType::kAllReduce, 4, kT0 + 23 * kS, kT0 + 23 * kS + 1000);
  }
  j.add(1, kWorld, OpType::kAllReduce, 5, kT0 + 24 * kS, 0);
  const Assessment a = assess(j.at(kT0 + 30 * kS), DetectorParams{});
  EXPECT_EQ(a.kind, StallKind::kWaitHost);
  EXPECT_NEAR(a.warn_after_s, 30, 0.1);  // 2 x 20 s, at most half the hang threshold
  EXPECT_NEAR(a.hang_after_s, 60, 0.1);  // 3 x 20 s, NCCLREC_TIMEOUT at most
}

TEST(DetectorTest, OpsEveryRankIssuedThatDoNotCompleteWaitForTheCadence) {
  Job j = world(2);
  j.add(0, kWorld, OpType::kAllReduce, 5, kStall, 0)
      .add(1, kWorld, OpType::kAllReduce, 5, kStall, 0);
  const Assessment a = assess(j.at(kStall + 1 * kS), DetectorParams{});
  EXPECT_EQ(a.kind, StallKind::kSlow);
  EXPECT_DOUBLE_EQ(a.hang_after_s, 4);  // 4 x the 1 s between completions

  Job big = world(2);  // a first 8 GB all-reduce (2 G floats, 2 ranks): its size sets the pace
  big.add(0, kWorld, OpType::kAllReduce, 5, kStall, 0, 2'000'000'000);
  big.add(1, kWorld, OpType::kAllReduce, 5, kStall, 0, 2'000'000'000);
  EXPECT_DOUBLE_EQ(assess(big.at(kStall + kS), DetectorParams{}).hang_after_s, 60);  // 4 x 16 s

  Job fast(2);  // 10 ms steps: the floor
  for (int r = 0; r < 2; ++r) fast.member(r, kWorld, r, 2).steps(r, kWorld, 4, kS / 100);
  fast.add(0, kWorld, OpType::kAllReduce, 5, kT0 + kS, 0)
      .add(1, kWorld, OpType::kAllReduce, 5, kT0 + kS, 0);
  EXPECT_DOUBLE_EQ(assess(fast.at(kT0 + 2 * kS), DetectorParams{}).hang_after_s, 2);
}

TEST(DetectorTest, AnUnmatchedReceiveFromAPeerBlockedElsewhereIsCertain) {
  // Rank 1 waits for a send rank 0 never posts: rank 0 is in world #5, which rank 1 will not
  // reach before its receive completes.
  Job j = world(2);
  j.add(0, kWorld, OpType::kAllReduce, 5, kStall, 0);
  j.add(1, kWorld, OpType::kRecv, 1, kStall, 0, 1024, 0);
  EXPECT_EQ(assess(j.at(kStall + 2 * kS), DetectorParams{}).kind, StallKind::kCertain);

  Job posted = world(2);  // the send is posted: only slow
  posted.add(0, kWorld, OpType::kSend, 1, kStall, 0, 1024, 1);
  posted.add(1, kWorld, OpType::kRecv, 1, kStall, 0, 1024, 0);
  EXPECT_EQ(assess(posted.at(kStall + 2 * kS), DetectorParams{}).kind, StallKind::kSlow);
}

TEST(DetectorTest, ASplitAPeerWillNotReachIsCertain) {
  // Ranks 0-2 split the world; rank 3 skipped the split and waits in the next all-reduce.
  Job j = world(4);
  for (int r = 0; r < 3; ++r) j.add(r, kWorld, OpType::kCommSplit, 0, kStall, 0);
  j.add(3, kWorld, OpType::kAllReduce, 5, kStall, 0);
  const Assessment a = assess(j.at(kStall + 2 * kS), DetectorParams{});
  EXPECT_EQ(a.kind, StallKind::kCertain);
  EXPECT_EQ(a.awaited, (std::vector<int>{0, 1, 2, 3}));

  Job arriving = world(4);  // rank 3 is in host code: it may still split
  for (int r = 0; r < 3; ++r) arriving.add(r, kWorld, OpType::kCommSplit, 0, kStall, 0);
  EXPECT_EQ(assess(arriving.at(kStall + 2 * kS), DetectorParams{}).kind, StallKind::kWaitHost);
}

TEST(DetectorTest, RanksThisViewDoesNotShowAreWaitedForLikeHostCode) {
  Job j(2);  // two ranks of a world of four: the other node's are not here
  for (int r = 0; r < 2; ++r) j.member(r, kWorld, r, 4).steps(r, kWorld, 4);
  j.add(0, kWorld, OpType::kAllReduce, 5, kStall, 0)
      .add(1, kWorld, OpType::kAllReduce, 5, kStall, 0);
  const Assessment a = assess(j.at(kStall + 2 * kS), DetectorParams{});
  EXPECT_EQ(a.kind, StallKind::kWaitUnknown);
  EXPECT_DOUBLE_EQ(a.hang_after_s, 60);
  EXPECT_DOUBLE_EQ(a.warn_after_s, 5);
  EXPECT_NE(a.why.find("for ranks this view does not show"), std::string::npos) << a.why;
}

TEST(DetectorTest, RanksWaitingInInitForALateRankAreGivenTheUpperBound) {
  Job j(2);  // rank 2 of 3 has not called NCCL yet: no black box
  j.worldSize(3).joining(0, kWorld, 0, 3, kT0).joining(1, kWorld, 1, 3, kT0);
  const Assessment a = assess(j.at(kT0 + 10 * kS), DetectorParams{});
  EXPECT_EQ(a.kind, StallKind::kWaitUnknown);
  EXPECT_DOUBLE_EQ(a.hang_after_s, 60);
  EXPECT_DOUBLE_EQ(a.warn_after_s, 5);
  // The start-up stall's warning names the rank that made no NCCL call yet.
  EXPECT_NE(a.why.find("ranks 0-1 wait (rank 0 in ncclCommInitRank on comm a11ce000) for rank "
                       "2, which has made no NCCL call 10.0 s after the others' first (no black "
                       "box): not started, or still starting"),
            std::string::npos)
      << a.why;
}

constexpr uint64_t kEval = 0xe7a1000000000003ull;

TEST(DetectorTest, AMemberOfACreationBlockedElsewhereIsCertain) {
  // Ranks 0-2 create kEval; rank 3 skipped it and waits in the world's all-reduce #5, which
  // ranks 0-2 never reach: no pending op can complete.
  Job j = world(4);
  for (int r = 0; r < 3; ++r) j.joining(r, kEval, r, 4, kStall);
  j.add(3, kWorld, OpType::kAllReduce, 5, kStall, 0);
  const Assessment a = assess(j.worldSize(4).at(kStall + 2 * kS), DetectorParams{});
  EXPECT_EQ(a.kind, StallKind::kCertain) << a.why;
  EXPECT_EQ(a.waiting, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_DOUBLE_EQ(a.hang_after_s, 1);
}

TEST(DetectorTest, ACreationWhoseMembersDisagreeOnItsSizeIsCertain) {
  Job j = world(4);
  for (int r = 0; r < 4; ++r) j.joining(r, kEval, r, r == 1 ? 3 : 4, kStall);
  const Assessment a = assess(j.worldSize(4).at(kStall + 2 * kS), DetectorParams{});
  EXPECT_EQ(a.kind, StallKind::kCertain) << a.why;
  EXPECT_EQ(a.awaited, (std::vector<int>{1}));
  EXPECT_NE(a.why.find("rank 1 joins comm e7a10000 as rank 1 of 3, the others of 4"),
            std::string::npos)
      << a.why;
}

TEST(DetectorTest, TwoIdsForOneCommunicatorThatCanNeverFillAreCertain) {
  // Ranks 0-1 joined one id, ranks 2-3 another, each for a communicator of 4: each half waits
  // for the other, which waits in its own creation.
  Job j = world(4);
  for (int r = 0; r < 4; ++r) j.joining(r, r < 2 ? kEval : kPair, r, 4, kStall);
  const Assessment a = assess(j.worldSize(4).at(kStall + 2 * kS), DetectorParams{});
  EXPECT_EQ(a.kind, StallKind::kCertain) << a.why;
}

TEST(DetectorTest, ACreationEveryMemberJoinedWaitsForTheInitStall) {
  Job j = world(4);
  for (int r = 0; r < 4; ++r) j.joining(r, kEval, r, 4, kStall);
  DetectorParams p;
  p.init_stall_s = 12;
  const Assessment a = assess(j.worldSize(4).at(kStall + 2 * kS), p);
  EXPECT_EQ(a.kind, StallKind::kWaitUnknown);
  EXPECT_DOUBLE_EQ(a.hang_after_s, 12);
  EXPECT_NE(a.why.find("every member joined and the creation does not finish"), std::string::npos)
      << a.why;
}

TEST(DetectorTest, AMemberInHostCodeIsWaitedForLikeHostCode) {
  Job j = world(4);
  for (int r = 0; r < 3; ++r) j.joining(r, kEval, r, 4, kStall);
  const Assessment a = assess(j.worldSize(4).at(kStall + 2 * kS), DetectorParams{});
  EXPECT_EQ(a.kind, StallKind::kWaitHost) << a.why;
  EXPECT_EQ(a.awaited, (std::vector<int>{3}));
  EXPECT_NE(a.why.find("ranks 0-2 wait in ncclCommInitRank on comm e7a10000 for rank 3, in host "
                       "code since its ncclAllReduce #4"),
            std::string::npos)
      << a.why;
}

TEST(DetectorTest, WaitingForARankThatHasNotStartedIsGivenTheUpperBound) {
  // Rank 0 loads the data alone before the first collective; rank 1 waits in it.
  Job j(2);
  j.member(0, kWorld, 0, 2).member(1, kWorld, 1, 2);
  j.add(0, kWorld, OpType::kCommInitRank, 0, kT0, kT0 + kS);
  j.add(1, kWorld, OpType::kCommInitRank, 0, kT0, kT0 + kS);
  j.add(1, kWorld, OpType::kAllReduce, 1, kT0 + 2 * kS, 0);
  const Assessment a = assess(j.at(kT0 + 10 * kS), DetectorParams{});
  EXPECT_EQ(a.kind, StallKind::kWaitHost);
  EXPECT_DOUBLE_EQ(a.hang_after_s, 60);
}

TEST(DetectorTest, AnExplicitTimeoutIsTheRuleForWhatIsNotCertain) {
  Job j = world(2);
  j.add(1, kWorld, OpType::kAllReduce, 5, kStall, 0);
  DetectorParams p;
  p.timeout_s = 2;
  p.timeout_set = true;
  EXPECT_DOUBLE_EQ(assess(j.at(kStall + kS), p).hang_after_s, 2);
}

TEST(DetectorTest, KnobsComeFromTheEnvironmentAndABadOneIsNamed) {
  setenv("NCCLREC_HOST_STALL", "45", 1);
  setenv("NCCLREC_STALL_FLOOR", "soon", 1);
  unsetenv("NCCLREC_TIMEOUT");
  std::string problem;
  const DetectorParams p = DetectorParams::fromEnvironment(&problem);
  EXPECT_DOUBLE_EQ(p.host_stall_s, 45);
  EXPECT_DOUBLE_EQ(p.floor_s, 2);
  EXPECT_FALSE(p.timeout_set);
  EXPECT_EQ(problem, "NCCLREC_STALL_FLOOR='soon' is not a number of seconds; using 2.0 s");
  unsetenv("NCCLREC_HOST_STALL");
  unsetenv("NCCLREC_STALL_FLOOR");
}

}  // namespace
}  // namespace ncclrec::live
