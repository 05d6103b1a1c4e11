// rules/gated_at_the_end.h, through the whole rule table (Job::diagnose).
#include "analyzer/rules/gated_at_the_end.h"

#include <gtest/gtest.h>

#include <vector>

#include "analyzer/testing/job_builder.h"

namespace ncclrec::analyzer {
namespace {

using namespace testing;  // Job, Op, the call sites (analyzer/testing/job_builder.h)

const Site kFinish{"(anonymous namespace)::finish(ncclComm*)", 90};

// Ranks 0-3 run 3 all-reduces; `extra` ranks then issue one at saveCheckpoint() (pending, or
// failed when `failed`); the others destroy the communicator and exit when `others_end`.
Job endOfProgram(const std::vector<int>& extra, bool failed, bool others_end) {
  Job job(4);
  for (int r = 0; r < 4; ++r) {
    const bool more = std::find(extra.begin(), extra.end(), r) != extra.end();
    job.ops(r, more ? concat(repeat({kTrain}, 3), {{kSave}}) : repeat({kTrain}, 3), more);
    if (more && failed) {
      EventRecord& e = job.rank(r).events.back();
      e.state = EventState::kFailed;
      e.result = 6;  // ncclRemoteError: the peers went away
    }
    if (!more && others_end) {
      job.ops(r, {{kFinish, 0, OpType::kCommDestroy}});
      job.rank(r).events.back().op_seq = 0;
      job.rank(r).exited = true;
    }
  }
  return job;
}

// faultgen seed 8035: rank 2 alone issued a collective at a new call site as the program's last
// op; the others destroyed the communicator and exited. They ended normally: rank 2 deviated.
TEST(GatedAtTheEndTest, AMinoritysNewCollectivePastTheOthersNormalEndIsGated) {
  for (const bool failed : {false, true}) {
    SCOPED_TRACE(failed ? "failed when the others left" : "still waiting");
    const Verdict v = endOfProgram({2}, failed, /*others_end=*/true).diagnose();
    EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
    EXPECT_EQ(v.ranks, std::vector<int>{2});
    EXPECT_EQ(v.seq, 4u);
    EXPECT_EQ(shortFunctionName(v.site.function), "saveCheckpoint");
    EXPECT_EQ(v.headline.rfind("rank 2 alone (rank == 2) issued ncclAllReduce #4 on comm c0ffee00 "
                               "from saveCheckpoint() train.cc:33; ranks 0-1,3 issued no "
                               "collective there after #3 and went no further on it",
                               0),
              0u)
        << v.headline;
  }
}

// The others completed everything and are in host code: they may still come; not gated.
TEST(GatedAtTheEndTest, OthersThatMayStillComeAreNotPassedOver) {
  const Verdict v = endOfProgram({2}, false, /*others_end=*/false).diagnose();
  EXPECT_NE(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
}

// The majority issued it and one rank ended: that rank stopped early (rank_exited), whatever the
// call site.
TEST(GatedAtTheEndTest, TheMajorityIsNeverTheDeviant) {
  const Verdict v = endOfProgram({0, 1, 2}, false, /*others_end=*/true).diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankExited) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{3});
}

// One more op at a call site the communicator saw (another iteration): not a new collective.
TEST(GatedAtTheEndTest, AnOpTheOthersIssuedBeforeIsNotGated) {
  Job job(4);
  for (int r = 0; r < 4; ++r) {
    job.ops(r, repeat({kTrain}, r == 2 ? 4 : 3), r == 2);
    if (r == 2) continue;
    job.ops(r, {{kFinish, 0, OpType::kCommDestroy}});
    job.rank(r).events.back().op_seq = 0;
    job.rank(r).exited = true;
  }
  const Verdict v = job.diagnose();
  EXPECT_NE(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
}

}  // namespace
}  // namespace ncclrec::analyzer
