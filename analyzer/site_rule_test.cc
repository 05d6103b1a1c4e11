#include "analyzer/site_rule.h"

#include <gtest/gtest.h>

#include <vector>

#include "format/testing/frames.h"

namespace ncclrec::analyzer {
namespace {

using format::Frame;

const auto py = format::testing::pythonFrame;

Frame native(const char* module, uint64_t offset, const char* function = "") {
  return Frame{0x400000 + offset, module, offset, function, "", 0};
}

// What the Python interpreter and ctypes leave below the Python frames.
const std::vector<Frame> kBelow = {
    native("/usr/lib/libffi.so.8", 0x6a0a, "ffi_call"),
    native("/usr/bin/python3.11", 0x1d2b3, "_PyEval_EvalFrameDefault")};

std::vector<Frame> stack(std::vector<Frame> python, const std::vector<Frame>& below = kBelow) {
  python.insert(python.end(), below.begin(), below.end());
  return python;
}

TEST(SiteRuleTest, UserFrameWinsOverLibraryLayersAndNativeFrames) {
  const SiteRule rule;
  const std::vector<Frame> frames = stack(
      {py("/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py",
          "all_reduce", 2050),
       py("/opt/venv/lib/python3.11/site-packages/torch/distributed/c10d_logger.py", "wrapper", 79),
       py("/job/train.py", "Trainer.save_checkpoint", 31), py("/job/train.py", "main", 60),
       py("/job/train.py", "<module>", 70)});
  EXPECT_TRUE(rule.isLibraryFrame(frames[0]));
  EXPECT_FALSE(rule.isLibraryFrame(frames[2]));
  EXPECT_FALSE(rule.isLibraryFrame(frames[5]));  // native frames are never library layers
  EXPECT_EQ(rule.siteFrame(frames), 2);
}

TEST(SiteRuleTest, EveryPythonFrameALibraryFrameGivesTheInnermostPythonFrame) {
  const SiteRule rule;
  const std::vector<Frame> frames =
      stack({py("/usr/lib/python3.11/ctypes/__init__.py", "_FuncPtr.__call__", 10),
             py("/usr/lib/python3.11/functools.py", "wrapper", 20)});
  EXPECT_EQ(rule.siteFrame(frames), 0);
}

TEST(SiteRuleTest, NcclFramesAboveTheUserAreSkipped) {
  // Recorded in NCCL's profiler callback (plugin-only mode): NCCL's frames come first.
  const std::vector<Frame> frames = {
      native("/opt/nccl/lib/libnccl.so.2", 0x181e2, "ncclProfilerStartCollApiEvent"),
      native("/opt/nccl/lib/libnccl.so.2", 0xa825, "ncclAllReduce"),
      native("/job/train", 0x3797, "trainStep"), native("/job/train", 0x353e, "main")};
  EXPECT_EQ(SiteRule().siteFrame(frames), 2);
  // A stack of NCCL frames only keeps them (nothing better to name).
  const std::vector<Frame> only = {frames[0], frames[1]};
  EXPECT_EQ(SiteRule().siteFrame(only), 0);
}

TEST(SiteRuleTest, LibraryFramesAddPatterns) {
  const std::vector<Frame> frames =
      stack({py("/job/nccl_bindings/comm.py", "Comm.all_reduce", 12),
             py("/job/train.py", "train_step", 40), py("/job/train.py", "<module>", 90)});
  EXPECT_EQ(SiteRule().siteFrame(frames), 0);
  EXPECT_EQ(SiteRule({"nccl_bindings/"}).siteFrame(frames), 1);
  EXPECT_EQ(SiteRule({"", "no/such/"}).siteFrame(frames), 0);  // empty patterns match nothing
}

TEST(SiteRuleTest, NoPythonFramesKeepsTheInnermostNativeFrame) {
  SiteRule rule;
  const std::vector<Frame> frames = {native("/opt/train", 0x24b0, "trainStep(ncclComm*)"),
                                     native("/opt/train", 0x28c9, "main"),
                                     native("/lib/libc.so.6", 0x271ca, "__libc_start_call_main")};
  rule.learn(frames);
  EXPECT_EQ(rule.siteFrame(frames), 0);
  EXPECT_EQ(rule.siteFrame({}), -1);
}

// A project's all_reduce(buf) wrapper over a ctypes binding, called from two places: it is
// plumbing, and each call is named at its caller.
TEST(SiteRuleTest, APythonWrapperIsPlumbing) {
  const Frame wrapper = py("/job/comm_utils.py", "all_reduce", 14);
  const Frame binding = py("/usr/lib/python3.11/ctypes/__init__.py", "_FuncPtr.__call__", 400);
  const std::vector<Frame> step = stack(
      {binding, wrapper, py("/job/train.py", "train_step", 40), py("/job/train.py", "main", 80)});
  const std::vector<Frame> save =
      stack({binding, wrapper, py("/job/train.py", "save_checkpoint", 31),
             py("/job/train.py", "main", 84)});
  SiteRule rule;
  rule.learn(step);
  EXPECT_EQ(rule.siteFrame(step), 1);  // one caller seen so far: the wrapper is the call site
  rule.learn(save);
  rule.learn(save);  // a stack seen again (another rank) teaches nothing new
  EXPECT_TRUE(rule.isPlumbing(wrapper));
  EXPECT_EQ(rule.siteFrame(step), 2);
  EXPECT_EQ(rule.siteFrame(save), 2);
  EXPECT_FALSE(rule.isPlumbing(step[2]));
}

// reduce(buf) -> _call(op, buf) -> binding: both levels are plumbing.
TEST(SiteRuleTest, APythonWrapperTwoLevelsDeepIsPlumbing) {
  const Frame inner = py("/job/comm_utils.py", "_call", 8);
  const Frame outer = py("/job/comm_utils.py", "reduce", 20);
  const std::vector<Frame> a =
      stack({inner, outer, py("/job/train.py", "train_step", 40), py("/job/train.py", "main", 80)});
  const std::vector<Frame> b = stack(
      {inner, outer, py("/job/train.py", "log_metrics", 55), py("/job/train.py", "main", 81)});
  // The wrapper's other entry point: _call reached from broadcast() too.
  const std::vector<Frame> c =
      stack({inner, py("/job/comm_utils.py", "broadcast", 26), py("/job/train.py", "load", 12),
             py("/job/train.py", "main", 70)});
  SiteRule rule;
  for (const auto* s : {&a, &b, &c}) rule.learn(*s);
  EXPECT_TRUE(rule.isPlumbing(inner));
  EXPECT_TRUE(rule.isPlumbing(outer));
  EXPECT_EQ(rule.siteFrame(a), 2);
  EXPECT_EQ(rule.siteFrame(b), 2);
  // broadcast() has one caller: it is where this call came from.
  EXPECT_EQ(rule.siteFrame(c), 1);
}

// C++: reduceOn(comm, buf) called from trainStep and saveCheckpoint, and a two-level helper.
TEST(SiteRuleTest, NativeWrappersOneAndTwoLevelsDeepArePlumbing) {
  const Frame reduce_on = native("/opt/train", 0x1010, "reduceOn(ncclComm*, float*)");
  const Frame step = native("/opt/train", 0x2020, "trainStep(ncclComm*)");
  const Frame save = native("/opt/train", 0x3030, "saveCheckpoint(ncclComm*)");
  const Frame main1 = native("/opt/train", 0x4040, "main");
  const Frame main2 = native("/opt/train", 0x4080, "main");
  const Frame libc = native("/lib/libc.so.6", 0x271ca, "__libc_start_call_main");
  SiteRule one;
  one.learn({reduce_on, step, main1, libc});
  one.learn({reduce_on, save, main2, libc});
  EXPECT_EQ(one.siteFrame({reduce_on, step, main1, libc}), 1);
  EXPECT_EQ(one.siteFrame({reduce_on, save, main2, libc}), 1);

  // reduceOn -> launch -> ncclAllReduce: launch is entered from reduceOn and broadcastOn.
  const Frame launch = native("/opt/train", 0x0500, "launch(ncclComm*, Op)");
  const Frame bcast_on = native("/opt/train", 0x1110, "broadcastOn(ncclComm*, float*)");
  const Frame load = native("/opt/train", 0x5050, "loadWeights(ncclComm*)");
  SiteRule two;
  const std::vector<Frame> s1 = {launch, reduce_on, step, main1, libc};
  const std::vector<Frame> s2 = {launch, reduce_on, save, main2, libc};
  const std::vector<Frame> s3 = {launch, bcast_on, load, main1, libc};
  for (const auto* s : {&s1, &s2, &s3}) two.learn(*s);
  EXPECT_EQ(two.siteFrame(s1), 2);
  EXPECT_EQ(two.siteFrame(s2), 2);
  EXPECT_EQ(two.siteFrame(s3), 1);  // broadcastOn has one caller
}

// The outermost frame's caller is unknown (the walk may have been cut): a frame that is outermost
// in one stack and has a caller in another is not plumbing for that.
TEST(SiteRuleTest, ATruncatedStackTeachesNothingAboutItsLastFrame) {
  const Frame helper = native("/opt/train", 0x1010, "helper");
  const Frame caller = native("/opt/train", 0x2020, "caller");
  SiteRule rule;
  rule.learn({helper, caller});
  rule.learn({helper});
  rule.learn({native("/opt/train", 0x9, "x"), helper});
  EXPECT_FALSE(rule.isPlumbing(helper));
  // A stack made only of plumbing names its outermost frame.
  rule.learn({helper, native("/opt/train", 0x3030, "other"), caller});
  EXPECT_TRUE(rule.isPlumbing(helper));
  EXPECT_EQ(rule.siteFrame({helper}), 0);
}

// The same binary at another load address, or the same script in another directory, is the same
// frame: keys are module base name + offset, and file base name + qualified name + line.
TEST(SiteRuleTest, FrameKeysCompareAcrossProcesses) {
  Frame a = native("/opt/train", 0x10, "f");
  Frame b = a;
  b.address = 0x7f0000000010;
  b.function.clear();  // a black box: not symbolized
  EXPECT_EQ(frameKey(a), frameKey(b));
  EXPECT_EQ(frameKey(py("/home/a/train.py", "f", 3)), frameKey(py("/home/b/train.py", "f", 3)));
  EXPECT_NE(frameKey(py("/job/train.py", "f", 3)), frameKey(py("/job/train.py", "f", 4)));
  EXPECT_NE(frameKey(py("/job/train.py", "f", 3)), frameKey(py("/job/train.py", "g", 3)));
}

// allReduceGradients() called from two lines of main (samples/op_order: before or after another
// collective): callers are told apart by function, so it stays the call site.
TEST(SiteRuleTest, AFunctionCalledFromTwoLinesOfOneCallerIsNotPlumbing) {
  const Frame grads = native("/opt/op_order", 0x1100, "allReduceGradients(ncclComm*)");
  const Frame main34 = native("/opt/op_order", 0x2034, "main");
  const Frame main36 = native("/opt/op_order", 0x2036, "main");
  SiteRule rule;
  rule.learn({grads, main34});
  rule.learn({grads, main36});
  EXPECT_FALSE(rule.isPlumbing(grads));
  EXPECT_EQ(rule.siteFrame({grads, main36}), 0);

  // A black box holds addresses only: two return addresses are two callers, unless a dump names
  // them.
  Frame raw34 = main34, raw36 = main36;
  raw34.function.clear();
  raw36.function.clear();
  SiteRule unnamed;
  unnamed.learn({grads, raw34});
  unnamed.learn({grads, raw36});
  EXPECT_TRUE(unnamed.isPlumbing(grads));
  const FrameNames names = {{"op_order+" + std::to_string(0x2034), main34},
                            {"op_order+" + std::to_string(0x2036), main36}};
  SiteRule named;
  named.learn({grads, raw34}, &names);
  named.learn({grads, raw36}, &names);
  EXPECT_FALSE(named.isPlumbing(grads));
}

}  // namespace
}  // namespace ncclrec::analyzer
