#include "analyzer/callsite.h"

#include <gtest/gtest.h>

namespace ncclrec::analyzer {
namespace {

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
  e.stack_id = 4;
  const CallSite s = callSiteOf(r, e);
  EXPECT_EQ(s.function, "trainStep(int)");
  EXPECT_EQ(s.line, 27);
  EXPECT_EQ(s.module, "train");
  EXPECT_EQ(describeCallSite(s), "trainStep() train.cc:27");
  EXPECT_EQ(s.frames.size(), 2u);

  // Unsymbolized (a black box): module+offset, the same in every process of that binary.
  r.stacks[4].frames[0].function.clear();
  const CallSite raw = callSiteOf(r, e);
  EXPECT_EQ(describeCallSite(raw), "train+0x234");
  format::RankData other = r;
  other.stacks[4].frames[0].address = 0x9999234;
  EXPECT_EQ(callSiteKey(callSiteOf(other, e)), callSiteKey(raw));

  e.stack_id = 99;
  EXPECT_FALSE(callSiteOf(r, e).known());
  EXPECT_EQ(describeCallSite(callSiteOf(r, e)), "unknown call site");
}

}  // namespace
}  // namespace ncclrec::analyzer
