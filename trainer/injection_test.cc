#include "trainer/injection.h"

#include <gtest/gtest.h>

namespace ncclrec::trainer {
namespace {

TEST(InjectionTest, DefaultsPerClass) {
  auto gated = parseInjection("gated_save", 4);
  ASSERT_TRUE(gated.ok()) << gated.status().message();
  EXPECT_EQ(gated->fault, FaultClass::kGatedSave);
  EXPECT_EQ(gated->rank, 0);
  EXPECT_EQ(gated->step, 1);
  auto eval = parseInjection("gated_eval_barrier", 4);
  ASSERT_TRUE(eval.ok());
  EXPECT_EQ(eval->rank, 0);
  auto crash = parseInjection("crash", 4);
  ASSERT_TRUE(crash.ok());
  EXPECT_EQ(crash->rank, 3);
  EXPECT_EQ(crash->step, 10);
  auto slow = parseInjection("slow_rank", 2);
  ASSERT_TRUE(slow.ok());
  EXPECT_EQ(slow->rank, 1);
  EXPECT_EQ(slow->step, 1);
  auto size = parseInjection("size_mismatch", 4);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(size->rank, 3);
}

TEST(InjectionTest, EveryClassParsesWithKeysInAnyOrder) {
  for (FaultClass f : allFaultClasses()) {
    const std::string name(faultClassName(f));
    const std::string spec =
        f == FaultClass::kSizeMismatch ? name + ":rank=1" : name + ":step=7:rank=1";
    auto inj = parseInjection(spec, 2);
    ASSERT_TRUE(inj.ok()) << spec << ": " << inj.status().message();
    EXPECT_EQ(inj->fault, f);
    EXPECT_EQ(inj->rank, 1);
    if (f != FaultClass::kSizeMismatch) {
      EXPECT_EQ(inj->step, 7);
    }
    EXPECT_TRUE(inj->on(f, 1));
    EXPECT_FALSE(inj->on(f, 0));
  }
}

TEST(InjectionTest, AtMatchesTheCulpritAndTheStepOnly) {
  auto inj = parseInjection("nan_skip:rank=2:step=5", 4);
  ASSERT_TRUE(inj.ok());
  EXPECT_TRUE(inj->at(FaultClass::kNanSkip, 2, 5));
  EXPECT_FALSE(inj->at(FaultClass::kNanSkip, 2, 6));
  EXPECT_FALSE(inj->at(FaultClass::kNanSkip, 1, 5));
  EXPECT_FALSE(inj->at(FaultClass::kCrash, 2, 5));
}

TEST(InjectionTest, ErrorsNameWhatIsWrong) {
  struct Case {
    const char* spec;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {"gated", "unknown class 'gated' (one of gated_save|"},
           {"", "unknown class ''"},
           {"crash:rnk=1", "unknown key 'rnk'"},
           {"crash:rank", "rank needs a whole number"},
           {"crash:rank=x", "rank needs a whole number"},
           {"crash:rank=4", "rank 4 is not in the job (ranks 0-3)"},
           {"crash:rank=-1", "rank -1 is not in the job"},
           {"crash:step=0", "step must be 1 or more"},
           {"crash:step=2x", "step needs a whole number"},
           {"size_mismatch:step=3", "size_mismatch takes no step"},
           {"crash:", "unknown key ''"},
       }) {
    auto inj = parseInjection(c.spec, 4);
    ASSERT_FALSE(inj.ok()) << c.spec;
    EXPECT_NE(inj.status().message().find(c.says), std::string::npos)
        << c.spec << ": " << inj.status().message();
    EXPECT_EQ(inj.status().message().rfind("--inject=", 0), 0u) << inj.status().message();
  }
}

TEST(InjectionTest, DescriptionsSayWhenTheFaultFires) {
  EXPECT_EQ(describeInjection(*parseInjection("gated_save", 4)),
            "gated_save on rank 0 at the first checkpoint at or after step 1");
  EXPECT_EQ(describeInjection(*parseInjection("crash:step=3", 4)), "crash on rank 3 at step 3");
}

}  // namespace
}  // namespace ncclrec::trainer
