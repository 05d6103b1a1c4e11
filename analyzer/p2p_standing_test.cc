// A rank blocked in a send or receive on another communicator, judged by its own history
// (p2p::standing): held there before what its peer waits for, or past it with one left out.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <utility>
#include <vector>

#include "analyzer/diagnose.h"
#include "analyzer/p2p_blame.h"
#include "analyzer/testing/job_builder.h"

namespace ncclrec::analyzer {
namespace {

using namespace testing;  // Job, Op, the call sites (analyzer/testing/job_builder.h)

const Site kReduceGrads{"reduceScatterGrads(ncclComm*, float*)", 20};
const Site kSendAct{"sendActivations(ncclComm*, float*)", 30};
const Site kRecvAct{"recvActivations(ncclComm*, float*)", 32};
const Site kSendGrad{"sendGradients(ncclComm*, float*)", 40};
const Site kRecvGrad{"recvGradients(ncclComm*, float*)", 42};
const Site kSendEdge{"sendBoundary(ncclComm*, float*)", 50};
const Site kRecvEdge{"recvBoundary(ncclComm*, float*)", 52};

Op on(uint64_t comm, OpType op, const Site& site, int peer = -1) {
  Op o{site, 64, op};
  o.comm = comm;
  o.root = peer;
  return o;
}

// Runs the ranks' calls as NCCL pairs them (a collective when every member reached it, a send
// with its peer's receive) until none can go on; each rank's first call that did not complete is
// left pending, and it issues nothing after it. Then numbers the calls as NCCL does.
Job run(const std::vector<std::vector<Op>>& program,
        const std::map<uint64_t, std::vector<int>>& members) {
  const size_t world = program.size();
  std::vector<size_t> at(world, 0);
  const auto current = [&](size_t r) {
    return at[r] < program[r].size() ? &program[r][at[r]] : nullptr;
  };
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t r = 0; r < world; ++r) {
      const Op* o = current(r);
      if (o == nullptr) continue;
      if (o->op == OpType::kSend || o->op == OpType::kRecv) {
        const Op* p = current(static_cast<size_t>(o->root));
        if (p != nullptr && p->comm == o->comm && p->root == static_cast<int>(r) &&
            p->op != o->op && (p->op == OpType::kSend || p->op == OpType::kRecv)) {
          ++at[r];
          ++at[static_cast<size_t>(o->root)];
          moved = true;
        }
        continue;
      }
      const std::vector<int>& group = members.at(o->comm);
      bool all = true;
      for (int m : group) {
        const Op* p = current(static_cast<size_t>(m));
        all = all && p != nullptr && p->comm == o->comm && p->op == o->op;
      }
      if (!all) continue;
      for (int m : group) ++at[static_cast<size_t>(m)];
      moved = true;
    }
  }
  Job job(static_cast<int>(world));
  for (size_t r = 0; r < world; ++r) {
    std::vector<Op> done(program[r].begin(), program[r].begin() + static_cast<long>(at[r]));
    if (!done.empty()) job.ops(static_cast<int>(r), done);
    if (const Op* o = current(r)) job.ops(static_cast<int>(r), {*o}, true);
    numberLikeNccl(job.rank(static_cast<int>(r)));
  }
  return job;
}

TEST(P2pStandingTest, TwoPipelinesWaitingOnEachOtherNameTheStageThatSentOneFewer) {
  // Faultgen seed 222: six ranks; each step a reduce-scatter on the tensor-parallel groups T
  // (0-2, 3-5), 4 activations down the data-parallel pipelines D (0,2,4 and 1,3,5), 1 gradient
  // down the T pipelines, 2 boundaries down the world's. In step 2 rank 0 sends 3 activations.
  // Rank 2 waits for the 4th; rank 0 waits to send a boundary to rank 1, which waits to send a
  // gradient to rank 2: each wait's peer is blocked in a send or receive elsewhere. Rank 1 and
  // rank 2 are where their loops put them; rank 0 closed its run of sends short.
  const uint64_t world = kComm, d0 = 0xd000000000000000, d1 = 0xd100000000000000,
                 t0 = 0x7000000000000000, t1 = 0x7100000000000000;
  const std::map<uint64_t, std::vector<int>> members = {{world, {0, 1, 2, 3, 4, 5}},
                                                        {d0, {0, 2, 4}},
                                                        {d1, {1, 3, 5}},
                                                        {t0, {0, 1, 2}},
                                                        {t1, {3, 4, 5}}};
  std::vector<std::vector<Op>> program(6);
  for (int r = 0; r < 6; ++r) {
    const uint64_t d = r % 2 == 0 ? d0 : d1, t = r < 3 ? t0 : t1;
    const auto pipeline = [&](uint64_t comm, int mbs, const Site& s, const Site& rs, int step) {
      const std::vector<int>& g = members.at(comm);
      const auto me = static_cast<size_t>(std::find(g.begin(), g.end(), r) - g.begin());
      for (int mb = 0; mb < mbs; ++mb) {
        if (me > 0) program[r].push_back(on(comm, OpType::kRecv, rs, g[me - 1]));
        const bool fault = r == 0 && step == 2 && comm == d0 && mb == 0;
        if (me + 1 < g.size() && !fault)
          program[r].push_back(on(comm, OpType::kSend, s, g[me + 1]));
      }
    };
    for (int step = 0; step < 3; ++step) {
      program[r].push_back(on(t, OpType::kReduceScatter, kReduceGrads));
      pipeline(d, 4, kSendAct, kRecvAct, step);
      pipeline(t, 1, kSendGrad, kRecvGrad, step);
      pipeline(world, 2, kSendEdge, kRecvEdge, step);
    }
  }
  const Job job = run(program, members);
  // Which rank began to wait first is a matter of timing: the verdict must not depend on it.
  for (int first = 0; first < 6; ++first) {
    format::LoadedSet set = job.set();
    for (RankData& r : set.ranks) {
      EventRecord& blocked = r.events.back();
      ASSERT_EQ(blocked.state, EventState::kEnqueued) << "rank " << r.global_rank;
      blocked.setEnqueueNs(kT0 + 50 * kSec + (r.global_rank == first ? 0 : 1 + r.global_rank));
    }
    const Verdict v = diagnose(set);
    EXPECT_EQ(v.cls, VerdictClass::kP2pMismatch) << "first " << first << ": " << v.headline;
    EXPECT_EQ(v.ranks, std::vector<int>{0}) << "first " << first << ": " << v.headline;
    EXPECT_EQ(v.op, OpType::kSend) << "first " << first;
    EXPECT_EQ(v.comm_id, d0) << "first " << first << ": " << v.headline;
    EXPECT_EQ(shortFunctionName(v.site.function), "sendActivations") << "first " << first;
    EXPECT_EQ(v.waiting, (std::vector<int>{1, 2, 3, 4, 5})) << "first " << first;
  }
}

TEST(P2pStandingTest, SendThatMetAnotherRolesReceiveNamesTheRankThatClosedItsRunShort) {
  // Faultgen seed 1217: two ranks; each step 4 activations 0 -> 1, then a halo exchange (a send
  // and a receive each way, grouped) on the same communicator. In step 2 rank 0 sends 3
  // activations: its halo send (16 elements) pairs with rank 1's 4th activation receive (4).
  const Site halo{"exchangeHalo(ncclComm*, float*)", 60};
  const auto p2p = [](OpType op, int peer, const Site& site, uint64_t count) {
    Op o = on(kComm, op, site, peer);
    o.count = count;
    return o;
  };
  std::vector<Op> zero, one;
  for (int step = 0; step < 3; ++step) {
    for (int mb = 0; mb < 4; ++mb) {
      if (step < 2 || mb > 0) zero.push_back(p2p(OpType::kSend, 1, kSendAct, 4));
      one.push_back(p2p(OpType::kRecv, 0, kRecvAct, 4));
    }
    zero.push_back(p2p(OpType::kSend, 1, halo, 16));
    zero.push_back(p2p(OpType::kRecv, 1, halo, 16));
    if (step == 2) break;
    one.push_back(p2p(OpType::kSend, 0, halo, 16));
    one.push_back(p2p(OpType::kRecv, 0, halo, 16));
  }
  Job job(2);
  job.ops(0, zero, true);
  job.ops(1, one, true);
  std::vector<EventRecord>& events = job.rank(0).events;
  events[events.size() - 2].state = EventState::kEnqueued;  // its halo send waits too
  for (int r = 0; r < 2; ++r) numberLikeNccl(job.rank(r));
  for (int first = 0; first < 2; ++first) {
    format::LoadedSet set = job.set();
    for (RankData& r : set.ranks) {
      for (EventRecord& e : r.events) {
        if (e.state == EventState::kEnqueued) {
          e.setEnqueueNs(kT0 + 50 * kSec + (r.global_rank == first ? 0 : 1));
        }
      }
    }
    const Verdict v = diagnose(set);
    EXPECT_EQ(v.cls, VerdictClass::kP2pMismatch) << "first " << first << ": " << v.headline;
    EXPECT_EQ(v.ranks, std::vector<int>{0}) << "first " << first << ": " << v.headline;
    EXPECT_EQ(shortFunctionName(v.site.function), "sendActivations")
        << "first " << first << ": " << v.headline;
    EXPECT_EQ(v.waiting, std::vector<int>{1}) << "first " << first;
  }
}

// One rank's calls: `blocked` pending at the end; `owed` counts sends to rank 1 on kOtherComm.
p2p::Standing standingOf(const std::vector<Op>& calls) {
  Job job(2);
  job.ops(0, calls, true);
  numberLikeNccl(job.rank(0));
  const RankData& r = job.rank(0);
  const CallSites sites(job.set().ranks);
  return p2p::standing(
      r, r.events.back(),
      [](const EventRecord& e) { return e.commId() == kOtherComm && e.op == OpType::kSend; },
      sites);
}

TEST(P2pStandingTest, HistoryTellsHeldFromPastFromUnknown) {
  const Op owed = on(kOtherComm, OpType::kSend, kSendAct, 1);
  const Op edge = on(kComm, OpType::kSend, kSendEdge, 1);
  // Each step: 2 owed sends, then 2 edges. Blocked in the 1st edge of step 2 after 2 sends: held.
  const std::vector<Op> step = {owed, owed, edge, edge};
  std::vector<Op> calls = concat(concat(step, step), {owed, owed, edge});
  EXPECT_EQ(standingOf(calls), p2p::Standing::kBehind);
  // After 1 send where the loop put 2: it closed the run short.
  calls = concat(concat(step, step), {owed, edge});
  EXPECT_EQ(standingOf(calls), p2p::Standing::kPast);
  // One earlier step: stretches 0, 2; no period seen repeat, so a short run says nothing.
  calls = concat(step, {owed, edge});
  EXPECT_EQ(standingOf(calls), p2p::Standing::kUnknown);
  // More than the loop put there: not a left-out call.
  calls = concat(concat(step, step), {owed, owed, owed, edge});
  EXPECT_EQ(standingOf(calls), p2p::Standing::kUnknown);
  // No earlier call like the blocked one: no history.
  EXPECT_EQ(standingOf({owed, owed, edge}), p2p::Standing::kUnknown);
}

}  // namespace
}  // namespace ncclrec::analyzer
