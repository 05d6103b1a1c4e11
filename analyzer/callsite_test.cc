#include "analyzer/callsite.h"

#include <gtest/gtest.h>

#include "format/testing/frames.h"

namespace ncclrec::analyzer {
namespace {

const SiteRule kRule;

TEST(ShortFunctionNameTest, StripsParametersNamespacesAndClones) {
  EXPECT_EQ(shortFunctionName("(anonymous namespace)::saveCheckpoint(ncclComm*, int)"),
            "saveCheckpoint");
  EXPECT_EQ(shortFunctionName("train_step(int) [clone .isra.0]"), "train_step");
  EXPECT_EQ(shortFunctionName("f(int) [clone .isra.0] [clone .cold]"), "f");
  EXPECT_EQ(shortFunctionName(
                "ns::Trainer<float>::step(std::vector<float, std::allocator<float> >&) const"),
            "ns::Trainer<float>::step");
  EXPECT_EQ(shortFunctionName("ns::(anonymous namespace)::Saver::operator()(int)"),
            "ns::Saver::operator()");
  EXPECT_EQ(shortFunctionName("main"), "main");
  EXPECT_EQ(shortFunctionName(""), "");
  EXPECT_EQ(shortFunctionName("()"), "()");
}

TEST(CallSiteTest, FromTheInnermostFrame) {
  format::RankData r;
  format::Stack st;
  st.id = 4;
  st.frames.push_back({0x1234, "/opt/app/train", 0x234, "trainStep(int)", "/src/train.cc", 27});
  st.frames.push_back({0x2000, "/opt/app/train", 0x1000, "main", "/src/train.cc", 80});
  r.stacks[4] = st;
  format::EventRecord e;
  e.setStackId(4);
  const CallSite s = callSiteOf(r, e, kRule);
  EXPECT_EQ(s.function, "trainStep(int)");
  EXPECT_EQ(s.line, 27);
  EXPECT_EQ(s.module, "train");
  EXPECT_EQ(describeCallSite(s), "trainStep() train.cc:27");
  EXPECT_EQ(s.frames.size(), 2u);

  // Unsymbolized (a black box): module+offset, the same in every process of that binary.
  r.stacks[4].frames[0].function.clear();
  const CallSite raw = callSiteOf(r, e, kRule);
  EXPECT_EQ(describeCallSite(raw), "train+0x234");
  format::RankData other = r;
  other.stacks[4].frames[0].address = 0x9999234;
  EXPECT_EQ(callSiteKey(callSiteOf(other, e, kRule)), callSiteKey(raw));

  e.setStackId(99);
  EXPECT_FALSE(callSiteOf(r, e, kRule).known());
  EXPECT_EQ(describeCallSite(callSiteOf(r, e, kRule)), "unknown call site");
}

const auto pyFrame = format::testing::pythonFrame;

TEST(CallSiteTest, APythonUserFrame) {
  format::RankData r;
  format::Stack st;
  st.frames = {pyFrame("/venv/torch/distributed/distributed_c10d.py", "all_reduce", 2050),
               pyFrame("/job/train.py", "Trainer.save_checkpoint", 31),
               pyFrame("/job/train.py", "<module>", 70),
               {0x7f0000001000, "/usr/bin/python3.11", 0x1000, "_PyEval_EvalFrameDefault", "", 0}};
  r.stacks[1] = st;
  format::EventRecord e;
  e.setStackId(1);
  const CallSite s = callSiteOf(r, e, kRule);
  EXPECT_TRUE(s.python);
  EXPECT_EQ(s.frame, 1);
  EXPECT_EQ(s.function, "Trainer.save_checkpoint");
  EXPECT_EQ(s.module, "");
  EXPECT_EQ(siteFunctionName(s), "save_checkpoint");
  EXPECT_EQ(describeCallSite(s), "save_checkpoint() train.py:31");
  EXPECT_EQ(callSiteKey(s), "py:train.py|Trainer.save_checkpoint|31");
  EXPECT_EQ(s.frames.size(), 4u);  // the whole stack stays, native frames included

  // The same script elsewhere on another rank is the same call site.
  format::RankData other = r;
  other.stacks[1].frames[1].file = "/scratch/job/train.py";
  EXPECT_EQ(callSiteKey(callSiteOf(other, e, kRule)), callSiteKey(s));

  // Module-level code and lambdas keep Python's own name, without "()".
  r.stacks[1].frames.erase(r.stacks[1].frames.begin() + 1);
  EXPECT_EQ(describeCallSite(callSiteOf(r, e, kRule)), "<module> train.py:70");
}

// A thread with a Python thread state but no Python frame yet (or none left) records native
// frames only: the rule is today's, the innermost native frame.
TEST(CallSiteTest, APythonThreadWithoutPythonFrames) {
  format::RankData r;
  format::Stack st;
  st.frames = {{0x1234, "/opt/ext.so", 0x234, "launch(ncclComm*)", "ext.cc", 12},
               {0x2000, "/usr/bin/python3.11", 0x1000, "PyObject_Call", "", 0}};
  r.stacks[2] = st;
  r.stacks[3] = format::Stack{3, {}, false};
  format::EventRecord e;
  e.setStackId(2);
  const CallSite s = callSiteOf(r, e, kRule);
  EXPECT_FALSE(s.python);
  EXPECT_EQ(s.frame, 0);
  EXPECT_EQ(describeCallSite(s), "launch() ext.cc:12");
  e.setStackId(3);
  EXPECT_FALSE(callSiteOf(r, e, kRule).known());
}

// A black box's call-site frame takes the name a dump resolved, also when it is not the
// innermost frame.
TEST(CallSiteTest, BorrowedNamesNameTheCallSiteFrame) {
  const format::Frame helper{0x1010, "/opt/train", 0x10, "reduceOn(ncclComm*)", "t.cc", 5};
  const format::Frame step{0x1020, "/opt/train", 0x20, "trainStep(ncclComm*)", "t.cc", 27};
  const format::Frame save{0x1030, "/opt/train", 0x30, "saveCheckpoint(ncclComm*)", "t.cc", 33};
  const format::Frame main1{0x1040, "/opt/train", 0x40, "main", "t.cc", 60};
  std::vector<format::RankData> ranks(2);
  ranks[0].stacks[0] = format::Stack{0, {helper, step, main1}, true};
  ranks[0].stacks[1] = format::Stack{1, {helper, save, main1}, true};
  // Rank 1 from its black box: addresses only.
  for (const auto& [id, st] : ranks[0].stacks) {
    format::Stack raw = st;
    for (format::Frame& f : raw.frames) {
      f.function.clear();
      f.file.clear();
      f.line = 0;
    }
    raw.symbolized = false;
    ranks[1].stacks[id] = raw;
  }
  const CallSites sites(ranks);
  format::EventRecord e;
  e.setStackId(1);
  const CallSite s = callSiteOf(ranks[1], e, sites);
  EXPECT_EQ(s.frame, 1);
  EXPECT_EQ(describeCallSite(s), "saveCheckpoint() t.cc:33");
  EXPECT_EQ(callSiteKey(s), callSiteKey(callSiteOf(ranks[0], e, sites)));
  EXPECT_EQ(callSiteKey(s), callSiteKey(callSiteOf(ranks[1], e, sites.rule())));
}

}  // namespace
}  // namespace ncclrec::analyzer
