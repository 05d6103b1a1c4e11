#include "recorder/recorder.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <csignal>
#include <set>
#include <thread>

#include "format/bbox_ring.h"
#include "recorder/testing/recorder_fixture.h"

namespace ncclrec::recorder {
namespace {

using format::EventState;
using format::OpType;
using testing::beginOp;
using testing::RecorderTest;
using testing::registerComm;

TEST_F(RecorderTest, EightThreadsTimesTenThousandCallsLoseNothing) {
  constexpr int kThreads = 8, kCalls = 10000;
#if defined(__SANITIZE_THREAD__)
  // libunwind's per-thread cache teardown at thread exit crashes TSan's runtime (not ours).
  const char* unwind = "fp";
#else
  const char* unwind = "auto";
#endif
  runInChild(
      {{"NCCLREC_BUFFER", "131072"}, {"NCCLREC_STACK_DEPTH", "8"}, {"NCCLREC_UNWIND", unwind}}, [] {
        Recorder* r = Recorder::get();
        ASSERT_NE(r, nullptr);
        int comm = 0;
        registerComm(r, &comm, 7, 0, 2);
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
          threads.emplace_back([r, t, &comm] {
            for (int i = 0; i < kCalls; ++i) {
              CallHandle c = beginOp(r, OpType::kAllReduce, &comm, uint64_t(t) * 1000000 + i);
              r->end(c, 0);
            }
          });
        }
        for (auto& th : threads) th.join();
      });
  const format::RankData data = loadOnly(".bbox");
  ASSERT_EQ(data.events.size(), size_t{kThreads * kCalls});
  EXPECT_EQ(data.events_lost, 0u);
  std::set<uint64_t> seqs, counts;
  std::map<uint64_t, std::set<uint32_t>> tids_of_thread;
  for (const auto& e : data.events) {
    EXPECT_EQ(e.op, OpType::kAllReduce);
    EXPECT_EQ(e.state, EventState::kCompleted);
    EXPECT_EQ(e.commId(), 7u);
    EXPECT_GE(e.endNs(), e.enqueueNs());
    seqs.insert(e.op_seq);
    counts.insert(e.count);
    tids_of_thread[e.count / 1000000].insert(e.tid());
  }
  EXPECT_EQ(seqs.size(), size_t{kThreads * kCalls});  // every seq once: no lost or torn event
  EXPECT_EQ(*seqs.begin(), 1u);
  EXPECT_EQ(*seqs.rbegin(), uint64_t{kThreads * kCalls});
  EXPECT_EQ(counts.size(), size_t{kThreads * kCalls});
  for (const auto& [thread, tids] : tids_of_thread) EXPECT_EQ(tids.size(), 1u);  // not torn
}

TEST_F(RecorderTest, RingWrapKeepsTheNewest) {
  runInChild({{"NCCLREC_BUFFER", "64"}}, [] {
    Recorder* r = Recorder::get();
    ASSERT_NE(r, nullptr);
    int comm = 0;
    registerComm(r, &comm, 9, 1, 2);
    for (int i = 0; i < 1000; ++i) {
      CallHandle c = beginOp(r, OpType::kBroadcast, &comm, i);
      r->end(c, 0);
    }
  });
  const format::RankData data = loadOnly(".bbox");
  ASSERT_EQ(data.events.size(), 64u);
  EXPECT_EQ(data.events_total, 1000u);
  EXPECT_EQ(data.events_lost, 936u);
  for (size_t i = 0; i < 64; ++i) {
    EXPECT_EQ(data.events[i].index, 936 + i);
    EXPECT_EQ(data.events[i].count, 936 + i);
    EXPECT_EQ(data.events[i].op_seq, 937 + i);
  }
}

TEST_F(RecorderTest, SendRecvCountPerPeerAndGroupOpsCompleteAtOutermostGroupEnd) {
  runInChild({}, [] {
    Recorder* r = Recorder::get();
    ASSERT_NE(r, nullptr);
    int comm = 0;
    registerComm(r, &comm, 11, 0, 4);
    r->groupStarted();
    r->groupStarted();
    CallHandle s1 = beginOp(r, OpType::kSend, &comm, 1, nullptr, 1);
    r->end(s1, 0);
    CallHandle s2 = beginOp(r, OpType::kSend, &comm, 1, nullptr, 2);
    r->end(s2, 0);
    CallHandle s3 = beginOp(r, OpType::kSend, &comm, 1, nullptr, 1);
    r->end(s3, 0);
    CallHandle v1 = beginOp(r, OpType::kRecv, &comm, 1, nullptr, 1);
    r->end(v1, 0);
    EXPECT_FALSE(r->groupEnding());  // inner GroupEnd
    r->groupEnded(0, false);
    format::Event e;
    ASSERT_TRUE(format::readEvent(r->header(), s1.index, &e));
    EXPECT_EQ(e.state, uint8_t(EventState::kEnqueued));  // still deferred
    EXPECT_NE(e.flags & format::kEventInGroup, 0u);
    EXPECT_EQ(e.group_depth, 2);
    EXPECT_TRUE(r->groupEnding());
    r->groupEnded(0, false);
  });
  const format::RankData data = loadOnly(".bbox");
  ASSERT_EQ(data.events.size(), 4u);
  const uint64_t expected_seq[] = {1, 1, 2, 1};  // send->1, send->2, send->1, recv<-1
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(data.events[i].state, EventState::kCompleted) << i;
    EXPECT_EQ(data.events[i].op_seq, expected_seq[i]) << i;
  }
}

TEST_F(RecorderTest, InProgressOpsStayEnqueuedUntilTheCommunicatorSettles) {
  // A nonblocking communicator on a host backend: a call that returns ncclInProgress (7) is
  // enqueued, not done and not failed, until ncclCommGetAsyncError reports ncclSuccess; a grouped
  // op whose GroupEnd returns ncclInProgress likewise; one settled with an error fails.
  runInChild({}, [] {
    Recorder* r = Recorder::get();
    ASSERT_NE(r, nullptr);
    int comm = 0, other = 0;
    registerComm(r, &comm, 21, 0, 2);
    registerComm(r, &other, 22, 0, 2);
    CallHandle a = beginOp(r, OpType::kAllReduce, &comm, 4);
    r->end(a, 7);
    r->groupStarted();
    CallHandle s = beginOp(r, OpType::kSend, &comm, 1, nullptr, 1);
    r->end(s, 0);
    EXPECT_TRUE(r->groupEnding());
    r->groupEnded(7, false);
    CallHandle b = beginOp(r, OpType::kAllReduce, &other, 4);
    r->end(b, 7);
    format::Event e;
    for (const CallHandle* h : {&a, &s, &b}) {
      ASSERT_TRUE(format::readEvent(r->header(), h->index, &e));
      EXPECT_EQ(e.state, uint8_t(EventState::kEnqueued));
    }
    r->asyncSettled(&other, 7);  // still in progress: nothing changes (the shim never passes 7)
    r->asyncSettled(&comm, 0);
    r->asyncSettled(&other, 6);  // ncclRemoteError
  });
  const format::RankData data = loadOnly(".bbox");
  ASSERT_EQ(data.events.size(), 3u);
  EXPECT_EQ(data.events[0].state, EventState::kCompleted);
  EXPECT_EQ(data.events[0].result, 0);
  EXPECT_EQ(data.events[1].state, EventState::kCompleted);
  EXPECT_EQ(data.events[2].state, EventState::kFailed);
  EXPECT_EQ(data.events[2].result, 6);
}

TEST_F(RecorderTest, ErrorResultMarksTheEventFailedAndDumps) {
  runInChild({{"NCCLREC_POLL_MS", "20"}}, [this] {
    Recorder* r = Recorder::get();
    ASSERT_NE(r, nullptr);
    int comm = 0;
    registerComm(r, &comm, 12, 0, 2);
    CallHandle c = beginOp(r, OpType::kAllGather, &comm, 3);
    r->end(c, 2);  // ncclSystemError
    EXPECT_NE(waitForFile(".nccl_error.ncclrec.pb", 3), "");
  });
  const format::RankData dump = loadOnly(".nccl_error.ncclrec.pb");
  EXPECT_EQ(dump.dump_reason, format::DumpReason::kNcclError);
  ASSERT_EQ(dump.events.size(), 1u);
  EXPECT_EQ(dump.events[0].state, EventState::kFailed);
  EXPECT_EQ(dump.events[0].result, 2);
}

// A refused init leaves no comm, but a record of the attempt with the rank's device, in the
// black box and in the dump: the evidence for two ranks on one GPU.
TEST_F(RecorderTest, FailedInitIsRecordedWithItsDevice) {
  runInChild({{"NCCLREC_POLL_MS", "20"}}, [this] {
    Recorder* r = Recorder::get();
    ASSERT_NE(r, nullptr);
    OpArgs a;
    a.op = OpType::kCommInitRank;
    a.comm_id = 0x5eed;
    a.aux64 = 0x5eed;
    a.rank = 2;
    a.nranks = 4;
    CallHandle c = r->begin(a, 0);
    DeviceIdentity device;
    device.device = 0;
    device.source = format::kDeviceFromCudaContext;
    snprintf(device.bus_id, sizeof(device.bus_id), "0000:3b:00.0");
    for (uint8_t i = 0; i < 16; ++i) device.uuid[i] = i;
    r->commInitFailed(a, c.index, 5, device, format::kNoComm);  // ncclInvalidUsage
    r->end(c, 5);
    EXPECT_EQ(r->findComm(nullptr), nullptr);  // nothing to find by handle
    EXPECT_EQ(r->header()->global_rank, 2);
    EXPECT_NE(waitForFile(".nccl_error.ncclrec.pb", 3), "");
  });
  for (const char* suffix : {".bbox", ".nccl_error.ncclrec.pb"}) {
    const format::RankData d = loadOnly(suffix);
    ASSERT_EQ(d.comms.size(), 1u) << suffix;
    const format::Comm& c = d.comms[0];
    EXPECT_EQ(c.comm_id, 0x5eedu);
    EXPECT_EQ(c.handle, 0u);
    EXPECT_EQ(c.state, format::kCommInitFailed);
    EXPECT_EQ(c.init_result, 5);
    EXPECT_EQ(c.rank, 2);
    EXPECT_EQ(c.nranks, 4);
    EXPECT_EQ(c.device, 0);
    EXPECT_EQ(c.bus_id, "0000:3b:00.0");
    EXPECT_EQ(c.uuid, "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f");
    EXPECT_EQ(c.device_source, format::kDeviceFromCudaContext);
    EXPECT_EQ(c.created_by, OpType::kCommInitRank);
    ASSERT_EQ(d.events.size(), 1u);
    EXPECT_EQ(d.events[0].state, EventState::kFailed);
  }
}

// An absurd nranks in a failed init costs nothing: no per-peer counters are made for it.
TEST_F(RecorderTest, FailedInitWithHugeNranksAllocatesNothing) {
  runInChild({}, [] {
    Recorder* r = Recorder::get();
    ASSERT_NE(r, nullptr);
    OpArgs a;
    a.op = OpType::kCommInitRank;
    a.comm_id = 0x77;
    a.rank = 5;
    a.nranks = 2000000000;
    r->commInitFailed(a, 0, 4, DeviceIdentity{}, format::kNoComm);
    EXPECT_EQ(r->header()->global_rank, 5);
    EXPECT_EQ(r->header()->comm_count, 1u);
    a.rank = -1;  // a bad rank is not adopted as the process's
    a.nranks = 4;
    r->commInitFailed(a, 0, 4, DeviceIdentity{}, format::kNoComm);
    EXPECT_EQ(r->header()->comm_count, 2u);
  });
}

// A program that fails an NCCL call and exits at once still leaves the error dump (the request is
// drained on the exit path), besides its exit dump.
TEST_F(RecorderTest, ErrorRightBeforeExitStillLeavesItsDump) {
  const int status = inChild(
      {},
      [] {
        Recorder* r = Recorder::get();
        ASSERT_NE(r, nullptr);
        int comm = 0;
        registerComm(r, &comm, 17, 0, 2);
        CallHandle c = beginOp(r, OpType::kAllReduce, &comm, 3);
        r->end(c, 5);  // ncclInvalidUsage
      },
      /*use_exit=*/true);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(filesEndingWith(".nccl_error.ncclrec.pb").size(), 1u);
  EXPECT_EQ(filesEndingWith(".exit.ncclrec.pb").size(), 1u);
}

__attribute__((noinline)) void saveCheckpointForTest(Recorder* r, const void* comm) {
  OpArgs a;
  a.op = OpType::kAllReduce;
  a.comm = comm;
  a.count = 1;
  CallHandle c = r->begin(a, 0);  // no shim frames: the caller of begin is this function
  r->end(c, 0);
  asm volatile("" ::: "memory");  // keep the call out of tail position
}

TEST_F(RecorderTest, ExitMarksTheBlackBoxAndDumpsWithSymbolizedStacks) {
  const int status = inChild(
      {},
      [] {
        Recorder* r = Recorder::get();
        ASSERT_NE(r, nullptr);
        int comm = 0;
        registerComm(r, &comm, 13, 0, 1);
        saveCheckpointForTest(r, &comm);
      },
      /*use_exit=*/true);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const format::RankData box = loadOnly(".bbox");
  EXPECT_TRUE(box.exited);
  EXPECT_GT(box.exit_ns, 0);
  const format::RankData dump = loadOnly(".exit.ncclrec.pb");
  EXPECT_EQ(dump.dump_reason, format::DumpReason::kExit);
  EXPECT_TRUE(dump.exited);
  ASSERT_EQ(dump.events.size(), 1u);
  const auto it = dump.stacks.find(dump.events[0].stackId());
  ASSERT_NE(it, dump.stacks.end());
  ASSERT_FALSE(it->second.frames.empty());
  EXPECT_NE(it->second.frames[0].function.find("saveCheckpointForTest"), std::string::npos)
      << "innermost frame: " << it->second.frames[0].function;
  struct stat st {};
  ASSERT_EQ(stat(filesEndingWith(".exit.ncclrec.pb")[0].c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

// SIGABRT (an assertion): sanitizers take SIGSEGV over for themselves; the handler path is the
// same for every fatal signal.
TEST_F(RecorderTest, FatalSignalMarksTheBlackBoxAndStillKills) {
  const int status = inChild({}, [] {
    Recorder* r = Recorder::get();
    if (r == nullptr) _exit(3);
    int comm = 0;
    registerComm(r, &comm, 14, 0, 1);
    CallHandle c = beginOp(r, OpType::kAllReduce, &comm, 1);
    (void)c;
    abort();
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
  const format::RankData box = loadOnly(".bbox");
  EXPECT_EQ(box.fatal_signal, SIGABRT);
  EXPECT_FALSE(box.exited);
  ASSERT_EQ(box.events.size(), 1u);
  EXPECT_EQ(box.events[0].state, EventState::kEnqueued);
}

TEST_F(RecorderTest, UnwritableDirectoryMeansPassThrough) {
  runInChild({{"NCCLREC_DIR", "/proc/ncclrec-cannot-exist/dumps"}},
             [] { EXPECT_EQ(Recorder::get(), nullptr); });
  runInChild({{"NCCLREC_DISABLE", "1"}}, [] { EXPECT_EQ(Recorder::get(), nullptr); });
}

TEST_F(RecorderTest, ForkedChildGetsItsOwnBlackBox) {
  runInChild({}, [] {
    Recorder* r = Recorder::get();
    ASSERT_NE(r, nullptr);
    int comm = 0;
    registerComm(r, &comm, 15, 0, 1);
    for (int i = 0; i < 5; ++i) {
      CallHandle h = beginOp(r, OpType::kReduce, &comm, 1);
      r->end(h, 0);
    }
    const pid_t child = fork();
    if (child == 0) {
      Recorder* c = Recorder::get();
      if (c == nullptr || c == r) _exit(2);
      int child_comm = 0;
      registerComm(c, &child_comm, 16, 0, 1);
      for (int i = 0; i < 3; ++i) {
        CallHandle h = beginOp(c, OpType::kGather, &child_comm, 1);
        c->end(h, 0);
      }
      _exit(0);
    }
    int st = 0;
    waitpid(child, &st, 0);
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
    for (int i = 0; i < 2; ++i) {
      CallHandle h = beginOp(r, OpType::kReduce, &comm, 1);
      r->end(h, 0);
    }
  });
  const auto boxes = filesEndingWith(".bbox");
  ASSERT_EQ(boxes.size(), 2u);
  std::map<std::string, size_t> events_by_op;
  for (const auto& path : boxes) {
    auto loaded = format::loadBlackBox(path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    const auto& d = loaded.value();
    ASSERT_FALSE(d.events.empty());
    const std::string op(format::opName(d.events[0].op));
    for (const auto& e : d.events) EXPECT_EQ(e.op, d.events[0].op) << "mixed parent/child events";
    events_by_op[op] = d.events.size();
  }
  EXPECT_EQ(events_by_op["ncclReduce"], 7u);
  EXPECT_EQ(events_by_op["ncclGather"], 3u);
}

}  // namespace
}  // namespace ncclrec::recorder
