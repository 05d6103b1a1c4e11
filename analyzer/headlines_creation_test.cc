// The headlines of headlines_creation.h: a member that never joined and where it is, a lazy
// creation, several ids, a creation no stream shows, members' arguments that disagree, processes
// that run as one rank, and a bootstrap that cannot connect, in words.
#include "analyzer/headlines_creation.h"

#include <gtest/gtest.h>

#include "analyzer/testing/call_site.h"

namespace ncclrec::analyzer {
namespace {

using format::OpType;

CallSite at(const std::string& function, int line) {
  return testing::knownSite(function, "/src/main.cc", line);
}

const CreationRef kCreation{OpType::kCommInitRank, 0x1a2b3c4d00000001ull, 4,
                            at("buildEvalGroup", 24)};
const std::string kNamed =
    "ncclCommInitRank of comm 1a2b3c4d (4 ranks) from buildEvalGroup() main.cc:24";

Verdict verdictOf(std::vector<int> ranks, std::vector<int> waiting) {
  Verdict v;
  v.cls = VerdictClass::kCommInitMismatch;
  v.ranks = std::move(ranks);
  v.waiting = std::move(waiting);
  return v;
}

TEST(CreationHeadlinesTest, TheCreationAndItsIdMakerAreNamed) {
  EXPECT_EQ(creationPhrase(kCreation), kNamed);
  IdMaker m;
  EXPECT_EQ(madeByPhrase(m), "made by no recorded rank");
  m.recorded = true;
  m.rank = 0;
  m.pid = 4242;
  m.site = at("initProcessGroup", 25);
  EXPECT_EQ(madeByPhrase(m), "made by rank 0 (ncclGetUniqueId from initProcessGroup() main.cc:25)");
  m.shared = true;
  EXPECT_EQ(madeByPhrase(m),
            "made by rank 0 (pid 4242) (ncclGetUniqueId from initProcessGroup() main.cc:25)");
}

TEST(CreationHeadlinesTest, ArgumentsThatDisagreeNameWhoPassedWhat) {
  EXPECT_EQ(rankOutOfRangeHeadline(verdictOf({3}, {0, 1, 2}), kCreation, 4, 4, true),
            "rank 3 asked for rank 4 of 4 in " + kNamed +
                ", which NCCL refused (invalid argument); ranks 0-2 wait in it: a rank of a "
                "communicator is 0 to nranks-1");
  EXPECT_EQ(
      rankOutOfRangeHeadline(verdictOf({3}, {}), kCreation, -1, 4, false),
      "rank 3 asked for rank -1 of 4 in " + kNamed + ": a rank of a communicator is 0 to nranks-1");
  EXPECT_EQ(
      sizesDisagreeHeadline(verdictOf({3}, {0, 1, 2}), kCreation, {{{0, 1, 2}, 4}, {{3}, 8}}, true),
      kNamed +
          ": ranks 0-2 pass nranks 4, rank 3 passes nranks 8; the bootstrap stops at the "
          "first size that differs; ranks 0-2 wait in it: pass the same nranks (the job's "
          "size) on every member");
  EXPECT_EQ(sizesDisagreeHeadline(verdictOf({0, 1}, {}), kCreation, {{{0}, 2}, {{1}, 4}}, false),
            kNamed +
                ": rank 0 passes nranks 2, rank 1 passes nranks 4, and no size has a majority; "
                "the bootstrap stops at the first size that differs: pass the same nranks (the "
                "job's size) on every member");
  EXPECT_EQ(rankClaimedTwiceHeadline(verdictOf({3}, {0, 1, 2}), kCreation, {{3, 12, "a", 1}}, {3}),
            kNamed +
                ": rank 3 (pid 12 on a) as rank 1, which another process joined as too; no "
                "process joined as rank 3; the bootstrap stops at the second claim; ranks 0-2 wait "
                "in it: each process needs its own rank (LOCAL_RANK where RANK was meant?)");
}

TEST(CreationHeadlinesTest, ProcessesThatRunAsOneRankAreEachPlaced) {
  IdMaker m;
  const std::vector<SharedRankClaim> claims = {{12, "a", kCreation, 1, m},
                                               {13, "b", kCreation, 1, m}};
  EXPECT_EQ(sharedRankHeadline(verdictOf({1}, {0}), 2, claims, {3}),
            "2 processes run as rank 1: pid 12 on a in " + kNamed +
                " as rank 1 (id made by no recorded rank); pid 13 on b in " + kNamed +
                " as rank 1 (id made by no recorded rank); no process runs as rank 3: each "
                "process needs its own RANK (started by hand, or a launcher variable read where "
                "another was meant?)");
}

TEST(CreationHeadlinesTest, ABootstrapThatCannotConnectNamesTheRootAndTheSettings) {
  Verdict v = verdictOf({}, {0, 1, 2, 3});
  v.cls = VerdictClass::kBootstrapStuck;
  BootstrapStall s;
  s.last_join_ago_ns = 4'000'000'000;
  s.root = "10.0.0.1:2345";
  s.settings = {{"NCCL_SOCKET_IFNAME=eth1", {0, 1}}, {"", {2, 3}}};
  EXPECT_EQ(bootstrapStuckHeadline(v, kCreation, s),
            "every member joined " + kNamed +
                " (ranks 0-3, the last 4.0s ago) and it does not finish: the bootstrap cannot "
                "connect to the id's root 10.0.0.1:2345 (made by no recorded rank); network "
                "settings: NCCL_SOCKET_IFNAME=eth1 on ranks 0-1; no NCCL network setting on ranks "
                "2-3; check that every member reaches that address and port (the interface "
                "NCCL_SOCKET_IFNAME picks, firewalls, the root process itself)");
  s.calls_failed = true;
  s.root.clear();
  EXPECT_NE(bootstrapStuckHeadline(v, kCreation, s)
                .find("and their calls failed: the bootstrap cannot connect to the id's root ("),
            std::string::npos);
}

TEST(CreationHeadlinesTest, AMemberThatNeverJoinedIsPlaced) {
  Verdict v = verdictOf({3}, {0, 1, 2});
  v.cls = VerdictClass::kCommMemberMissing;
  Whereabouts w;
  EXPECT_EQ(whereaboutsPhrase(w),
            "has no recording (it never started, or started without the recorder)");
  w.kind = Whereabouts::Kind::kBlocked;
  w.in = {EvidenceOp{}, 0x81fd1b0800000001ull};
  w.in.op.op = OpType::kAllReduce;
  w.in.op.seq = 4;
  w.in.op.site = at("trainStep", 40);
  EXPECT_EQ(whereaboutsPhrase(w),
            "is blocked in ncclAllReduce #4 on comm 81fd1b08 from trainStep() main.cc:40");
  w.in.op.op = OpType::kCommInitRank;
  w.in.op.seq = 0;
  EXPECT_EQ(whereaboutsPhrase(w),
            "is blocked in ncclCommInitRank of comm 81fd1b08 from trainStep() main.cc:40");
  w.kind = Whereabouts::Kind::kCrashed;
  w.signal = 9;
  EXPECT_EQ(whereaboutsPhrase(w), "crashed (SIGKILL); its last NCCL op never came");
  w.kind = Whereabouts::Kind::kDead;
  EXPECT_EQ(whereaboutsPhrase(w),
            "died without an exit mark (killed from outside); its last NCCL op never came");
  w.kind = Whereabouts::Kind::kHost;
  EXPECT_EQ(whereaboutsPhrase(w), "is in host code: its last NCCL op never came");
  w.kind = Whereabouts::Kind::kExited;
  EXPECT_EQ(neverJoinedHeadline(v, kCreation, {}, {{3, w}}),
            "rank 3 never joined " + kNamed +
                ": rank 3 exited; its last NCCL op never came; ranks 0-2 wait in the creation for "
                "it; every member of a communicator must create it");
}

TEST(CreationHeadlinesTest, ALazyCreationNamesTheCollectiveThatMadeIt) {
  LazyCreation l;
  EXPECT_EQ(lazyPhrase(l), "");
  l.lazy = true;
  l.trigger = at("Group::allReduce", 27);
  EXPECT_EQ(lazyPhrase(l),
            " (created lazily, by the first collective on it: Group::allReduce() main.cc:27)");
  l.has_caller = true;
  l.caller = at("logMetrics", 46);
  l.by_this_call = true;
  EXPECT_EQ(lazyPhrase(l),
            " (created lazily, by this first collective on it, called from logMetrics() "
            "main.cc:46)");
  const Verdict v = verdictOf({0}, {1, 2, 3});
  EXPECT_EQ(creationAloneHeadline(v, kCreation, l),
            "rank 0 alone began " + kNamed + lazyPhrase(l) +
                "; every member of a communicator must create it, and ranks 1-3 never did");
}

TEST(CreationHeadlinesTest, SeveralIdsAndAnUnseenCreationAreCounted) {
  IdMaker m;
  EXPECT_EQ(severalIdsHeadline(kCreation, {{{0, 1}, m}, {{2, 3}, m}}, false),
            "one communicator of 4 ranks (" + kNamed +
                ") was given 2 unique ids, and none can fill: ranks 0-1 joined the id made by no "
                "recorded rank; ranks 2-3 joined the id made by no recorded rank; no id is shared "
                "by a majority of its members: one rank must make the id and every member use "
                "that one");
  Verdict v;
  v.op = OpType::kCommInitRank;
  v.comm_id = kCreation.comm_id;
  EXPECT_EQ(stuckCreatingHeadline(v, {0, 1, 2}, 4, {3}),
            "ranks 0-2 wait in ncclCommInitRank on comm 1a2b3c4d for a communicator of 4 ranks; "
            "no data for rank 3");
  EXPECT_EQ(stuckCreatingHeadline(v, {0}, 2, {}),
            "rank 0 waits in ncclCommInitRank on comm 1a2b3c4d for a communicator of 2 ranks");
}

}  // namespace
}  // namespace ncclrec::analyzer
