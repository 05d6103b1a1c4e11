// The creation rules (rules/comm_creation.h): each test names the principle it checks.
#include "analyzer/creation.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyzer/diagnose.h"
#include "analyzer/testing/job_builder.h"
#include "format/nccl_result.h"

namespace ncclrec::analyzer {
namespace {

using testing::Job;
using testing::kSec;
using testing::kTrain;
using testing::Op;
using testing::Site;

constexpr uint64_t kNewComm = 0x5e1f000000000003ull;
constexpr uint64_t kOtherId = 0x7a7a000000000004ull;
const Site kEval{"(anonymous namespace)::buildEvalGroup(samples::Job const&)", 24};

// `rank` joins `id` as comm rank `comm_rank` of `nranks` from `site`, still in the call (or
// failed with `result`).
void join(Job& job, int rank, uint64_t id, int comm_rank, int nranks, const Site& site = kEval,
          int result = 0) {
  Op o{site, 0, format::OpType::kCommInitRank};
  o.comm = id;
  o.dtype = -1;
  o.redop = -1;
  job.ops(rank, {o}, /*last_pending=*/true);
  format::EventRecord& e = job.rank(rank).events.back();
  e.op_seq = 0;
  e.setRank(comm_rank);
  e.setNranks(nranks);
  if (result != 0) {
    e.state = format::EventState::kFailed;
    e.result = result;
    e.setEndNs(e.enqueueNs() + 1000);
  }
  format::Comm c;
  c.comm_id = id;
  c.rank = comm_rank;
  c.nranks = nranks;
  c.created_by = format::OpType::kCommInitRank;
  c.state = format::kCommCreating | (result != 0 ? format::kCommInitFailed : 0);
  c.root = "127.0.0.1:4242";
  job.rank(rank).comms.push_back(c);
}

// `rank` made the unique id whose communicator id is `id`.
void makeId(Job& job, int rank, uint64_t id) {
  Op o{Site{"(anonymous namespace)::initProcessGroup(samples::Job const&)", 20}, 0,
       format::OpType::kGetUniqueId};
  o.comm = 0;
  job.ops(rank, {o});
  format::RankData& r = job.rank(rank);
  r.events.back().op_seq = 0;
  r.event_aux.push_back({r.events.back().index, 0, 0, id});
}

Job trained(int world, int steps) {
  Job job(world);
  for (int r = 0; r < world; ++r) job.ops(r, testing::repeat(Op{kTrain}, steps));
  return job;
}

TEST(CreationTest, MemberThatNeverJoinedIsTheCulpritNotTheRanksInTheCreation) {
  // Ranks 0-2 wait in the creation of an all-ranks communicator; rank 3 skipped it and waits in
  // the next training all-reduce. The ranks in the creation only wait.
  Job job = trained(4, 2);
  for (int r = 0; r < 3; ++r) join(job, r, kNewComm, r, 4);
  job.ops(3, {Op{kTrain}}, true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(verdictClassName(v.cls), "comm_member_missing") << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{3}));
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(v.comm_id, kNewComm);
  EXPECT_NE(v.headline.find("rank 3 never joined ncclCommInitRank of comm 5e1f0000 (4 ranks) "
                            "from buildEvalGroup() train.cc:24"),
            std::string::npos)
      << v.headline;
  EXPECT_NE(v.headline.find("rank 3 is blocked in ncclAllReduce #3 on comm c0ffee00 from "
                            "trainStep() train.cc:27"),
            std::string::npos)
      << v.headline;
  // Each rank's status: the ranks in the creation wait in it.
  ASSERT_EQ(v.status.size(), 4u);
  EXPECT_EQ(v.status[0].state, RankState::kWaiting);
  EXPECT_NE(v.status[0].detail.find("ncclCommInitRank on comm 5e1f0000"), std::string::npos);
}

TEST(CreationTest, AMemberBlockedInAnotherCreationIsSaidToBe) {
  // Rank 3 skipped kNewComm's creation and went on to create the next communicator, which waits
  // for the ranks stuck in the first: it is blocked there, not in host code.
  Job job = trained(4, 2);
  for (int r = 0; r < 3; ++r) join(job, r, kNewComm, r, 4);
  join(job, 3, kOtherId, 0, 2, Site{"buildTensorGroup()", 31});
  const Verdict v = job.diagnose();
  EXPECT_EQ(verdictClassName(v.cls), "comm_member_missing") << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{3}));
  EXPECT_NE(v.headline.find("rank 3 is blocked in ncclCommInitRank of comm 7a7a0000 from "
                            "buildTensorGroup() train.cc:31"),
            std::string::npos)
      << v.headline;
}

TEST(CreationTest, LazyCreationNamesTheCollectiveThatMadeIt) {
  // The communicator is made inside the first collective on a group (Group::allReduce): the
  // verdict names that collective and where it was called from.
  const std::vector<format::Frame> frames = {
      {0, "/opt/train", 10, "samples::initComm(int, int, std::string const&)", "sample.h", 55},
      {0, "/opt/train", 20, "(anonymous namespace)::Group::allReduce(std::vector<float>&)",
       "main.cc", 27},
      {0, "/opt/train", 30, "(anonymous namespace)::logMetrics(Group&, std::vector<float>&)",
       "main.cc", 46},
      {0, "/opt/train", 40, "main", "main.cc", 58}};
  const Site lazy{"", 0, frames};
  Job job = trained(4, 2);
  for (int r = 0; r < 3; ++r) join(job, r, kNewComm, r, 4, lazy);
  job.ops(3, {Op{kTrain}}, true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(verdictClassName(v.cls), "comm_member_missing") << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{3}));
  EXPECT_NE(v.headline.find("(created lazily, by the first collective on it: Group::allReduce() "
                            "main.cc:27, called from logMetrics() main.cc:46)"),
            std::string::npos)
      << v.headline;
}

TEST(CreationTest, RanksAloneInACreationTheOthersNeverMakeAreTheCulprits) {
  // Deviant before victim: rank 0 alone began creating a communicator of 4; ranks 1-3 are blocked
  // in the next training all-reduce, where rank 0 never comes.
  Job job = trained(4, 2);
  join(job, 0, kNewComm, 0, 4);
  for (int r = 1; r < 4; ++r) job.ops(r, {Op{kTrain}}, true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(verdictClassName(v.cls), "rank_gated_collective") << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{0}));
  EXPECT_EQ(v.waiting, (std::vector<int>{1, 2, 3}));
  EXPECT_NE(v.headline.find("rank 0 alone began ncclCommInitRank of comm 5e1f0000"),
            std::string::npos)
      << v.headline;
}

TEST(CreationTest, MemberThatExitedBeforeJoiningIsRankExited) {
  Job job = trained(4, 2);
  for (int r = 0; r < 3; ++r) join(job, r, kNewComm, r, 4);
  job.rank(3).exited = true;
  const Verdict v = job.diagnose();
  EXPECT_EQ(verdictClassName(v.cls), "rank_exited") << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{3}));
  EXPECT_NE(v.headline.find("rank 3 never joined"), std::string::npos) << v.headline;
  EXPECT_NE(v.headline.find("rank 3 exited"), std::string::npos) << v.headline;
}

TEST(CreationTest, MemberWithNoRecordingNeverStarted) {
  Job job = trained(4, 2);
  for (int r = 0; r < 3; ++r) join(job, r, kNewComm, r, 4);
  format::LoadedSet set = job.set();
  set.ranks.pop_back();  // rank 3 left no black box
  const Verdict v = diagnose(set);
  EXPECT_EQ(verdictClassName(v.cls), "comm_member_missing") << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{3}));
  EXPECT_NE(v.headline.find("rank 3 has no recording"), std::string::npos) << v.headline;
}

TEST(CreationTest, OneCommunicatorGivenTwoIdsWithNoMajorityNamesBothMakers) {
  // Two "nodes" each made their own id for one communicator of 4: neither id can ever fill.
  Job job(4);
  makeId(job, 0, kNewComm);
  makeId(job, 2, kOtherId);
  for (int r = 0; r < 4; ++r) join(job, r, r < 2 ? kNewComm : kOtherId, r, 4);
  const Verdict v = job.diagnose();
  EXPECT_EQ(verdictClassName(v.cls), "comm_id_mismatch") << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(v.waiting, (std::vector<int>{1, 3}));
  EXPECT_NE(v.headline.find("was given 2 unique ids"), std::string::npos) << v.headline;
  EXPECT_NE(v.headline.find("ranks 0-1 joined the id made by rank 0 (ncclGetUniqueId from "
                            "initProcessGroup() train.cc:20)"),
            std::string::npos)
      << v.headline;
  EXPECT_NE(v.headline.find("no id is shared by a majority"), std::string::npos) << v.headline;
  EXPECT_EQ(v.tables.size(), 2u);
}

TEST(CreationTest, OneCommunicatorGivenTwoIdsNamesTheMinorityThatDeviates) {
  Job job(4);
  makeId(job, 0, kNewComm);
  makeId(job, 3, kOtherId);
  for (int r = 0; r < 4; ++r) join(job, r, r < 3 ? kNewComm : kOtherId, r, 4);
  const Verdict v = job.diagnose();
  EXPECT_EQ(verdictClassName(v.cls), "comm_id_mismatch") << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{3}));
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1, 2}));
}

TEST(CreationTest, SizesThatDisagreeNameTheMinority) {
  Job job(4);
  // Rank 1's size leaves its own rank valid: NCCL's bootstrap root, not the call, refuses it.
  for (int r = 0; r < 4; ++r) join(job, r, kNewComm, r, r == 1 ? 3 : 4);
  const Verdict v = job.diagnose();
  EXPECT_EQ(verdictClassName(v.cls), "comm_init_mismatch") << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{1}));
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 2, 3}));
  EXPECT_NE(v.headline.find("rank 1 passes nranks 3, ranks 0,2-3 pass nranks 4"), std::string::npos)
      << v.headline;
}

TEST(CreationTest, SizesOfTwoMembersThatDisagreeAreJudgedByTheMembersPresent) {
  // Groups {0, 1} and {2, 3} of one family: in the second, rank 3 passes 3 where rank 2 passes 2.
  // Two members, no majority: both joined, as ranks 0 and 1, which fills a communicator of 2.
  Job job = trained(4, 2);
  for (int r : {0, 1}) {
    join(job, r, kOtherId, r, 2);
    job.rank(r).events.back().state = format::EventState::kCompleted;
    job.rank(r).events.back().setEndNs(job.rank(r).events.back().enqueueNs() + 1000);
  }
  join(job, 2, kNewComm, 0, 2);
  join(job, 3, kNewComm, 1, 3);
  const Verdict v = job.diagnose();
  EXPECT_EQ(verdictClassName(v.cls), "comm_init_mismatch") << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{3}));
  EXPECT_EQ(v.waiting, (std::vector<int>{2}));
}

TEST(CreationTest, SizesThatDisagreeWhereAMemberIsMissingAreJudgedByTheSiblings) {
  // Groups {0, 1, 2} and {3, 4, 5}: the first is made with size 3; in the second, rank 3 passes 3,
  // rank 4 passes 4, and rank 5 never came. The members present fill neither size: the sibling
  // group's size is the norm.
  Job job = trained(6, 2);
  for (int r : {0, 1, 2}) {
    join(job, r, kOtherId, r, 3);
    job.rank(r).events.back().state = format::EventState::kCompleted;
    job.rank(r).events.back().setEndNs(job.rank(r).events.back().enqueueNs() + 1000);
  }
  join(job, 3, kNewComm, 0, 3);
  join(job, 4, kNewComm, 1, 4);
  const Verdict v = job.diagnose();
  EXPECT_EQ(verdictClassName(v.cls), "comm_init_mismatch") << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{4}));
}

TEST(CreationTest, RankClaimedTwiceNamesTheProcessWhoseOwnRankDiffers) {
  // The process of global rank 2 was given RANK=1 for its communicator: two claim rank 1, none 2.
  Job job(4);
  for (int r = 0; r < 4; ++r) join(job, r, kNewComm, r == 2 ? 1 : r, 4);
  const Verdict v = job.diagnose();
  EXPECT_EQ(verdictClassName(v.cls), "comm_init_mismatch") << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{2}));
  EXPECT_NE(v.headline.find("rank 2 (pid 102 on ) as rank 1, which another process joined as "
                            "too; no process joined as rank 2"),
            std::string::npos)
      << v.headline;
}

TEST(CreationTest, LocalRankWhereRankWasMeantNamesTheSecondNode) {
  // Two nodes of two ranks pass their node-local rank: 0 and 1 are claimed twice, 2 and 3 never.
  Job job(4);
  for (int r = 0; r < 4; ++r) join(job, r, kNewComm, r % 2, 4);
  const Verdict v = job.diagnose();
  EXPECT_EQ(verdictClassName(v.cls), "comm_init_mismatch") << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1}));
  EXPECT_NE(v.headline.find("no process joined as ranks 2-3"), std::string::npos) << v.headline;
}

TEST(CreationTest, RankClaimedTwiceInAStridedGroupNamesTheOneThatBreaksItsNumbering) {
  // A group of global ranks 1, 3, 5 (comm ranks 0-2): rank 5 joins as comm rank 1, which rank 3
  // holds. Only rank 5, given the free rank 2, fits the group's numbering (global = 2 x comm + 1).
  Job job(6);
  join(job, 1, kNewComm, 0, 3);
  join(job, 3, kNewComm, 1, 3);
  join(job, 5, kNewComm, 1, 3);
  const Verdict v = job.diagnose();
  EXPECT_EQ(verdictClassName(v.cls), "comm_init_mismatch") << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{5}));
}

TEST(CreationTest, TwoProcessesRunningAsOneRankAreNamed) {
  // Two processes were started with RANK=0: each made its own id for a communicator of 2 and waits
  // for a rank 1 that nobody runs as.
  Job job(2);
  job.rank(1).global_rank = 0;
  makeId(job, 0, kNewComm);
  makeId(job, 1, kOtherId);
  join(job, 0, kNewComm, 0, 2);
  join(job, 1, kOtherId, 0, 2);
  const Verdict v = job.diagnose();
  EXPECT_EQ(verdictClassName(v.cls), "comm_init_mismatch") << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{0}));
  EXPECT_NE(v.headline.find("2 processes run as rank 0: pid 100"), std::string::npos) << v.headline;
  EXPECT_NE(v.headline.find("no process runs as rank 1"), std::string::npos) << v.headline;
}

TEST(CreationTest, RankOutsideTheCommunicatorIsNamed) {
  Job job(4);
  for (int r = 0; r < 3; ++r) join(job, r, kNewComm, r, 4);
  join(job, 3, kNewComm, 4, 4, kEval, format::kNcclInvalidArgument);
  job.rank(3).exited = true;
  const Verdict v = job.diagnose();
  EXPECT_EQ(verdictClassName(v.cls), "comm_init_mismatch") << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{3}));
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1, 2}));
  EXPECT_NE(v.headline.find("rank 3 asked for rank 4 of 4"), std::string::npos) << v.headline;
}

TEST(CreationTest, EveryMemberJoinedAlikeAndNothingFinishesIsTheBootstrap) {
  Job job(4);
  makeId(job, 0, kNewComm);
  for (int r = 0; r < 4; ++r) {
    join(job, r, kNewComm, r, 4);
    job.rank(r).net_env = "NCCL_SOCKET_IFNAME=eth9";
  }
  const Verdict v = job.diagnose();
  EXPECT_EQ(verdictClassName(v.cls), "bootstrap_stuck") << v.headline;
  EXPECT_TRUE(v.ranks.empty());
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_NE(v.headline.find("the bootstrap cannot connect to the id's root 127.0.0.1:4242 (made "
                            "by rank 0"),
            std::string::npos)
      << v.headline;
  EXPECT_NE(v.headline.find("network settings: NCCL_SOCKET_IFNAME=eth9 on ranks 0-3"),
            std::string::npos)
      << v.headline;
}

TEST(CreationTest, AJustFinishedJoinIsNotYetABootstrapFault) {
  Job job(4);
  for (int r = 0; r < 4; ++r) join(job, r, kNewComm, r, 4);
  const int64_t last = job.rank(3).events.back().enqueueNs();
  for (int r = 0; r < 4; ++r) job.rank(r).heartbeat_ns = last + kSec;
  const Verdict v = job.diagnose();
  EXPECT_NE(verdictClassName(v.cls), "bootstrap_stuck") << v.headline;
}

TEST(CreationTest, AStridedGroupWithOneJoinerFollowsItsSiblingGroupsNumbering) {
  // Groups {0, 2, 4} and {1, 3} of one family, made at one call site (faultgen seed 107): the
  // first is made; in the second only rank 1 joined, and rank 3 never did. One joiner alone does
  // not tell the stride; the sibling group's ranks (global = 2 x comm) do: rank 3 is missing, not
  // rank 2.
  constexpr uint64_t kEven = 0xe7e7000000000005ull;
  Job job = trained(5, 2);
  for (int r : {0, 2, 4}) {
    join(job, r, kEven, r / 2, 3);
    job.rank(r).events.back().state = format::EventState::kCompleted;
    job.rank(r).events.back().setEndNs(job.rank(r).events.back().enqueueNs() + 1000);
    job.ops(r, {Op{kTrain}}, true);  // then the world's all-reduce #3, which rank 1 never reaches
  }
  join(job, 1, kNewComm, 0, 2);
  job.ops(3, {Op{kTrain}}, true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(verdictClassName(v.cls), "comm_member_missing") << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{3}));
}

TEST(CreationTest, TwoCommunicatorsMadeInOneFunctionAreNotTwoIdsForOne) {
  // One function makes two communicators of the same three ranks, each from an id rank 0 makes
  // (faultgen seed 126): rank 1 skipped the first and waits in the second. One maker, two
  // communicators: rank 1 is the member the first never got.
  Job job(3);
  makeId(job, 0, kNewComm);
  makeId(job, 0, kOtherId);
  join(job, 0, kNewComm, 0, 3);
  join(job, 2, kNewComm, 2, 3);
  join(job, 1, kOtherId, 1, 3);
  const Verdict v = job.diagnose();
  EXPECT_EQ(verdictClassName(v.cls), "comm_member_missing") << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{1}));
}

TEST(CreationTest, MissingMembersOfACommunicatorOfAllRanksAreTheOthers) {
  const Missing m = missingMembers({{0, 0}, {1, 1}, {2, 2}}, 4, {3}, 4);
  EXPECT_EQ(m.comm_ranks, (std::vector<int>{3}));
  EXPECT_EQ(m.global_ranks, (std::vector<int>{3}));
  EXPECT_EQ(m.how, Missing::How::kAllOthers);
}

TEST(CreationTest, MissingMembersOfASubgroupFollowTheJoinersRankMapping) {
  // Ranks 1, 5 and 7 of 8 joined a group {1, 3, 5, 7} as 0, 2 and 3: global = 2 x comm + 1.
  const Missing m = missingMembers({{1, 0}, {5, 2}, {7, 3}}, 4, {0, 2, 3, 4, 6}, 8);
  EXPECT_EQ(m.comm_ranks, (std::vector<int>{1}));
  EXPECT_EQ(m.global_ranks, (std::vector<int>{3}));
  EXPECT_EQ(m.how, Missing::How::kMapping);
  // No mapping fits and too many others: unknown.
  const Missing u = missingMembers({{1, 0}, {6, 1}, {2, 2}}, 4, {0, 3, 4, 5, 7}, 8);
  EXPECT_TRUE(u.global_ranks.empty());
  EXPECT_EQ(u.how, Missing::How::kUnknown);
}

TEST(CreationTest, CollectiveNamesAreRecognizedInEveryLanguagesStyle) {
  EXPECT_TRUE(namesCollective("(anonymous namespace)::Group::allReduce(std::vector<float>&)"));
  EXPECT_TRUE(namesCollective("all_reduce"));
  EXPECT_TRUE(namesCollective("c10d::ProcessGroupNCCL::allreduce(std::vector<at::Tensor>&)"));
  EXPECT_TRUE(namesCollective("ProcessGroup.broadcast"));
  EXPECT_TRUE(namesCollective("barrier"));
  EXPECT_TRUE(namesCollective("_all_gather_base"));
  EXPECT_FALSE(namesCollective("reduceLoss"));
  EXPECT_FALSE(namesCollective("new_group"));
  EXPECT_FALSE(namesCollective("buildEvalGroup(samples::Job const&)"));
  EXPECT_FALSE(namesCollective(""));
}

}  // namespace
}  // namespace ncclrec::analyzer
