#include <gtest/gtest.h>

#include <set>
#include <string>

#include "analyzer/exit_codes.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer {
namespace {

constexpr auto kLast = kLastVerdictClass;

TEST(VerdictClassTest, EveryClassHasItsOwnNameAndAnExitStatus) {
  std::set<std::string> names;
  for (int i = 0; i <= static_cast<int>(kLast); ++i) {
    const auto c = static_cast<VerdictClass>(i);
    const std::string name(verdictClassName(c));
    EXPECT_NE(name, "unknown") << i;
    EXPECT_TRUE(names.insert(name).second) << name;
    const int code = exitCodeFor(c);
    EXPECT_TRUE(code == kExitOk || code == kExitHang || code == kExitUndecided) << name;
  }
  EXPECT_EQ(verdictClassName(static_cast<VerdictClass>(static_cast<int>(kLast) + 1)), "unknown");
}

TEST(VerdictClassTest, TheKindsOfFindingAreReadFromOneTable) {
  EXPECT_EQ(exitCodeFor(VerdictClass::kNoHang), kExitOk);
  EXPECT_EQ(exitCodeFor(VerdictClass::kSlowRank), kExitOk);
  EXPECT_EQ(exitCodeFor(VerdictClass::kUndecided), kExitUndecided);
  EXPECT_EQ(exitCodeFor(VerdictClass::kCommMemberMissing), kExitHang);
  // A divergence's headline names its culprits only; a cycle or an unmatched send names them only
  // too but is no divergence; a stop's headline says everything itself.
  EXPECT_TRUE(isDivergence(VerdictClass::kSkippedCollective));
  EXPECT_TRUE(namesOnlyCulprits(VerdictClass::kSkippedCollective));
  EXPECT_FALSE(isDivergence(VerdictClass::kP2pMismatch));
  EXPECT_TRUE(namesOnlyCulprits(VerdictClass::kP2pMismatch));
  EXPECT_FALSE(isDivergence(VerdictClass::kCrossCommDeadlock));
  EXPECT_TRUE(namesOnlyCulprits(VerdictClass::kCrossCommDeadlock));
  EXPECT_FALSE(isDivergence(VerdictClass::kRankExited));
  EXPECT_FALSE(namesOnlyCulprits(VerdictClass::kRankExited));
  for (int i = 0; i <= static_cast<int>(kLast); ++i) {
    const auto c = static_cast<VerdictClass>(i);
    if (isDivergence(c)) {
      EXPECT_TRUE(namesOnlyCulprits(c)) << verdictClassName(c);
    }
  }
}

}  // namespace
}  // namespace ncclrec::analyzer
