#include "analyzer/whereabouts.h"

#include <gtest/gtest.h>

#include <sstream>

#include "format/bbox_layout.h"

namespace ncclrec::analyzer {
namespace {

format::Frame py(const std::string& function, const std::string& file, int line) {
  format::Frame f;
  f.python = true;
  f.function = function;
  f.file = file;
  f.line = line;
  return f;
}

format::Frame native(const std::string& function, const std::string& module, uint64_t offset) {
  format::Frame f;
  f.address = 0x400000 + offset;
  f.function = function;
  f.module = module;
  f.module_offset = offset;
  return f;
}

format::ThreadState thread(int tid, char state, std::vector<format::Frame> frames) {
  format::ThreadState t;
  t.tid = tid;
  t.name = "python3";
  t.status = format::kThreadAnswered;
  t.kernel_state = state;
  t.frames = std::move(frames);
  return t;
}

// A rank whose NCCL thread (tid 100) made its last call at 1 s and was snapshotted at 43 s.
format::RankData rankWith(int rank, std::vector<format::ThreadState> threads) {
  format::RankData rd;
  rd.global_rank = rank;
  rd.pid = 99;
  format::EventRecord e;
  e.setTid(100);
  e.setEnqueueNs(1'000'000'000);
  rd.events.push_back(e);
  rd.threads = std::move(threads);
  rd.threads_ns = 43'000'000'000;
  return rd;
}

std::vector<format::Frame> dataLoaderStack() {
  return {py("Condition.wait", "/usr/lib/python3.11/threading.py", 320),
          py("Queue.get", "/usr/lib/python3.11/queue.py", 171),
          py("load_shard", "/job/data.py", 81), py("<module>", "/job/train.py", 10),
          native("clock_nanosleep", "/lib/x86_64-linux-gnu/libc.so.6", 0x100)};
}

TEST(WhereaboutsTest, PythonThreadsAreAtTheirInnermostUserFrame) {
  const CallSites sites;
  const ThreadPlace p = placeOf(thread(100, 'S', dataLoaderStack()), sites);
  EXPECT_EQ(p.site.frame, 2);
  EXPECT_EQ(describeCallSite(p.site), "load_shard() data.py:81");
  EXPECT_EQ(p.doing, "sleeping in Condition.wait");
}

TEST(WhereaboutsTest, NativeThreadsSkipRuntimesAndStdTemplates) {
  const CallSites sites;
  const ThreadPlace p = placeOf(
      thread(7, 'S',
             {native("futex_wait", "/lib/x86_64-linux-gnu/libc.so.6", 0x10),
              native("std::condition_variable::wait(std::unique_lock<std::mutex>&)",
                     "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", 0x20),
              native("void std::condition_variable::wait<F>(std::unique_lock<std::mutex>&, F)",
                     "/job/train", 0x30),
              native("(anonymous namespace)::nextBatch(bool)", "/job/train", 0x40),
              native("main", "/job/train", 0x50)}),
      sites);
  EXPECT_EQ(p.site.frame, 3);
  EXPECT_EQ(p.site.function, "(anonymous namespace)::nextBatch(bool)");
  EXPECT_EQ(p.doing, "sleeping in futex_wait");
}

TEST(WhereaboutsTest, AThreadThatDidNotAnswerSaysWhy) {
  format::ThreadState t = thread(8, 'S', {});
  t.status = format::kThreadNoAnswer;
  t.flags = format::kThreadSignalBlocked;
  t.wchan = "hrtimer_nanosleep";
  const ThreadPlace p = placeOf(t, CallSites());
  EXPECT_EQ(p.site.frame, -1);
  EXPECT_EQ(p.doing, "no answer (signal blocked), sleeping in kernel hrtimer_nanosleep");
}

TEST(WhereaboutsTest, ASilentThreadWithListedPythonFramesIsPlacedAtItsUserFrame) {
  format::ThreadState t = thread(9, 'S',
                                 {py("wait", "/usr/lib/python3.11/threading.py", 320),
                                  py("deaf_waiter", "/job/threads_check.py", 44)});
  t.status = format::kThreadNoAnswer;
  t.flags = format::kThreadSignalBlocked | format::kThreadPythonListed;
  t.wchan = "futex_wait_queue";
  const ThreadPlace p = placeOf(t, CallSites());
  EXPECT_EQ(p.site.frame, 1);
  EXPECT_EQ(p.site.function, "deaf_waiter");
  EXPECT_EQ(p.doing,
            "no answer (signal blocked), sleeping in kernel futex_wait_queue; Python frames from "
            "the interpreter's thread list");
}

TEST(WhereaboutsTest, StuckHeadlineSaysWhereAndHowLongAfterTheLastCall) {
  format::LoadedSet set;
  set.ranks.push_back(rankWith(0, {thread(100, 'S', {py("train_step", "/job/train.py", 40)})}));
  set.ranks.push_back(rankWith(1, {thread(99, 'S', {py("<module>", "/job/train.py", 5)}),
                                   thread(100, 'R', {py("busy", "/job/data.py", 12)}),
                                   thread(101, 'S', dataLoaderStack())}));
  Verdict v;
  v.cls = VerdictClass::kRankStuckInHost;
  v.ranks = {1};
  v.waiting = {0};
  v.headline = "rank 1 is alive but stuck in host code";
  addWhereabouts(set, CallSites(), v);
  EXPECT_EQ(v.headline,
            "rank 1 is alive but stuck in host code; rank 1 is now in busy() data.py:12 (thread "
            "100 \"python3\", running), 42.0 s after its last NCCL call");
  ASSERT_EQ(v.threads.size(), 1u);
  EXPECT_EQ(v.threads[0].rank, 1);
  ASSERT_EQ(v.threads[0].threads.size(), 3u);
  EXPECT_EQ(v.threads[0].threads[0].tid, 100);  // the NCCL thread first
  std::ostringstream text;
  printThreadsText(v, text);
  EXPECT_NE(text.str().find("threads of rank 1 (42.0 s after its last NCCL call):"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("thread 101 \"python3\" in load_shard() data.py:81"), std::string::npos)
      << text.str();
}

TEST(WhereaboutsTest, OtherVerdictsAndRanksWithoutSnapshotsAreLeftAlone) {
  format::LoadedSet set;
  set.ranks.push_back(rankWith(0, {thread(100, 'R', {py("busy", "/job/data.py", 12)})}));
  Verdict v;
  v.cls = VerdictClass::kSizeMismatch;
  v.ranks = {0};
  v.headline = "h";
  addWhereabouts(set, CallSites(), v);
  EXPECT_EQ(v.headline, "h");
  v.cls = VerdictClass::kRankStuckInHost;
  set.ranks[0].threads.clear();
  addWhereabouts(set, CallSites(), v);
  EXPECT_EQ(v.headline, "h");
  EXPECT_TRUE(v.threads.empty());
}

TEST(WhereaboutsTest, StacksCollapseAcrossRanksOddOneOutFirst) {
  format::LoadedSet set;
  for (int r : {0, 1, 2, 3}) {
    set.ranks.push_back(rankWith(r, {thread(100, 'S',
                                            {r == 2 ? py("load_shard", "/job/data.py", 81)
                                                    : py("train_step", "/job/train.py", 40)})}));
  }
  set.ranks.push_back(format::RankData());
  set.ranks.back().global_rank = 4;
  std::ostringstream out;
  printStacks(set, CallSites(), out);
  const std::string s = out.str();
  const size_t odd = s.find("rank 2: NCCL thread \"python3\" in load_shard() data.py:81");
  const size_t rest = s.find("ranks 0-1,3: NCCL thread \"python3\" in train_step() train.py:40");
  EXPECT_NE(odd, std::string::npos) << s;
  EXPECT_NE(rest, std::string::npos) << s;
  EXPECT_LT(odd, rest) << s;
  EXPECT_NE(s.find("rank 4: no thread snapshot recorded"), std::string::npos) << s;
}

}  // namespace
}  // namespace ncclrec::analyzer
