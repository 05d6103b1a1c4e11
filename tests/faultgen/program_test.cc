// The generator's promises, checked on every rank of many programs by a dry run (no NCCL): a
// program without its fault is correct (every group issues the same collectives in the same
// order, every send has its receive), the fault changes the culprit only, the same seed makes the
// same program, and every action has its own call-site function.
#include "tests/faultgen/program.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tests/faultgen/describe.h"

namespace ncclrec::faultgen {
namespace {

// What one rank issues: per comm (with its group), its collectives; per (comm, peer), its sends
// and receives; and how it ended.
struct Trace {
  using Coll = std::tuple<int, int, int64_t, int, int, int>;  // op, site, count, dtype, redop, root
  std::map<int, std::vector<Coll>> colls;                     // by comm
  std::map<std::tuple<int, int, int>, std::vector<std::pair<int64_t, int>>> p2p;  // comm, op, peer
  std::vector<int> splits;
  // The communicators it makes from unique ids: (comm, own id, rank, nranks), eager or lazy.
  std::vector<std::tuple<int, bool, int, int>> inits;
  std::string end;
  bool operator==(const Trace&) const = default;
};

class TraceSink : public Sink {
 public:
  TraceSink(const Program& p, int rank) : p_(p), rank_(rank) {}
  void split(int comm, int) override { t.splits.push_back(comm); }
  void init(const Joining& j, int) override { joined(j); }
  void block(const Block& b) override {
    for (const Joining& j : b.creates) joined(j);
    for (const Call& c : b.calls) {
      int in = 0;
      const auto& g = groupOf(p_, c.comm, rank_, &in);
      const int n = static_cast<int>(g.size());
      if (c.op == Op::kSend || c.op == Op::kRecv) {
        const int peer = g[((in + c.peer) % n + n) % n];
        t.p2p[{c.comm, static_cast<int>(c.op), peer}].push_back(
            {c.count, static_cast<int>(c.dtype)});
      } else {
        const bool rooted = c.op == Op::kBroadcast || c.op == Op::kReduce;
        t.colls[c.comm].push_back({static_cast<int>(c.op), b.site, c.count,
                                   static_cast<int>(c.dtype), static_cast<int>(c.redop),
                                   rooted ? c.root : -1});
      }
    }
  }
  void abortComm(int, int) override { t.end = "abort"; }
  void exitNow() override { t.end += "exit"; }
  void crash() override { t.end = "crash"; }
  void stall() override { t.end = "stall"; }
  void finish() override { t.end = "finish"; }
  Trace t;

 private:
  void joined(const Joining& j) { t.inits.emplace_back(j.comm, j.own_id, j.rank, j.nranks); }
  const Program& p_;
  int rank_;
};

Trace traceOf(const Program& p, int rank) {
  TraceSink s(p, rank);
  walk(p, rank, s);
  return s.t;
}

constexpr int kSeeds = 300;

TEST(FaultgenProgram, HealthyProgramsAreCorrect) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    const Program p = generate(seed, 0, FaultKind::kNone, true);
    ASSERT_GE(p.world, 2);
    ASSERT_LE(p.world, 8);
    ASSERT_GE(p.comms.size(), 1u);
    ASSERT_LE(p.comms.size(), 4u);
    std::vector<Trace> t;
    for (int r = 0; r < p.world; ++r) t.push_back(traceOf(p, r));
    for (size_t k = 0; k < p.comms.size(); ++k) {
      // A communicator split from at the start exists at the start.
      if (p.comms[k].parent >= 0) {
        EXPECT_NE(p.comms[size_t(p.comms[k].parent)].make, Make::kLazy) << "seed " << seed;
      }
      for (const auto& g : p.comms[k].groups) {
        ASSERT_GE(g.size(), 2u) << "seed " << seed;
        for (size_t i = 0; i < g.size(); ++i) {
          const int r = g[i];
          EXPECT_EQ(t[r].colls[k], t[g.front()].colls[k]) << "seed " << seed << " comm " << k;
          // A communicator made from ids: each member joins once, as its rank in the group, with
          // the group's size and the group's id.
          if (p.comms[k].make == Make::kSplit) continue;
          size_t joins = 0;
          for (const auto& [comm, own, rank, n] : t[r].inits) {
            if (comm != static_cast<int>(k)) continue;
            ++joins;
            EXPECT_FALSE(own) << "seed " << seed;
            EXPECT_EQ(rank, static_cast<int>(i)) << "seed " << seed;
            EXPECT_EQ(n, static_cast<int>(g.size())) << "seed " << seed;
          }
          const bool unused = p.comms[k].make == Make::kLazy && t[r].colls[k].empty();
          EXPECT_EQ(joins, unused ? 0u : 1u) << "seed " << seed << " comm " << k << " rank " << r;
        }
      }
    }
    for (int r = 0; r < p.world; ++r) {
      EXPECT_EQ(t[r].end, "finish");
      for (const auto& [key, sends] : t[r].p2p) {
        const auto [comm, op, peer] = key;
        if (op != static_cast<int>(Op::kSend)) continue;
        EXPECT_EQ(sends, (t[peer].p2p[{comm, static_cast<int>(Op::kRecv), r}]))
            << "seed " << seed << ": sends of " << r << " to " << peer;
      }
    }
  }
}

TEST(FaultgenProgram, FaultChangesTheCulpritOnly) {
  for (int k = 1; k < kFaultKinds; ++k) {
    const auto kind = static_cast<FaultKind>(k);
    for (uint64_t seed = 1; seed <= kSeeds / 3; ++seed) {
      const Program p = generate(seed, 0, kind, false);
      ASSERT_EQ(p.fault.kind, kind) << faultName(kind) << " seed " << seed;
      Program healthy = p;
      healthy.fault = Fault{};
      const Fault& f = p.fault;
      ASSERT_GE(f.rank, 0);
      ASSERT_LT(f.rank, p.world);
      if (isCreationFault(kind)) {
        // At the creation: the start, or the first use (step 0) of a communicator made lazily.
        EXPECT_TRUE(f.step == -1 || f.step == 0) << seed;
        ASSERT_GT(f.comm, 0) << seed;
        EXPECT_NE(p.comms[f.comm].make, Make::kSplit) << seed;
      } else {
        EXPECT_TRUE(kind == FaultKind::kSplitSubset ? f.step == -1 : f.step >= 2) << seed;
      }
      EXPECT_LT(f.step, p.steps);
      for (int r = 0; r < p.world; ++r) {
        const bool same = traceOf(p, r) == traceOf(healthy, r);
        EXPECT_EQ(same, r != f.rank) << faultName(kind) << " seed " << seed << " rank " << r;
      }
      if (kind == FaultKind::kSkipped) {
        // The culprit issues the communicator's last collective after the one it skipped: a skip,
        // not a rank that stopped early.
        auto faulty = traceOf(p, f.rank).colls[f.comm];
        auto good = traceOf(healthy, f.rank).colls[f.comm];
        ASSERT_EQ(faulty.size() + 1, good.size()) << seed;
        EXPECT_EQ(faulty.back(), good.back()) << seed;
      }
    }
  }
}

TEST(FaultgenProgram, SameSeedSameProgramAndDistinctSites) {
  std::set<std::string> worlds;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    const std::string a = describe(generate(seed, 0, FaultKind::kNone, false)).dump();
    EXPECT_EQ(a, describe(generate(seed, 0, FaultKind::kNone, false)).dump());
    const Program p = generate(seed, 0, FaultKind::kNone, false);
    worlds.insert(std::to_string(p.world));
    std::set<int> sites;
    for (const Action& act : p.body) {
      EXPECT_TRUE(sites.insert(act.block.site).second) << "seed " << seed;
      if (act.kind == ActionKind::kPipeline) EXPECT_TRUE(sites.insert(act.send.site).second);
    }
  }
  EXPECT_EQ(worlds.size(), 7u);  // 2 to 8 ranks all occur
}

TEST(FaultgenProgram, EveryKindIsDrawn) {
  std::set<int> kinds;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    kinds.insert(static_cast<int>(generate(seed, 0, FaultKind::kNone, false).fault.kind));
  }
  EXPECT_EQ(kinds.size(), static_cast<size_t>(kFaultKinds));
}

TEST(FaultgenProgram, FaultNamesRoundTrip) {
  for (int k = 0; k < kFaultKinds; ++k) {
    FaultKind back = FaultKind::kNone;
    ASSERT_TRUE(parseFault(faultName(static_cast<FaultKind>(k)), &back));
    EXPECT_EQ(static_cast<int>(back), k);
  }
  FaultKind unused;
  EXPECT_FALSE(parseFault("gated_collective", &unused));
}

}  // namespace
}  // namespace ncclrec::faultgen

namespace ncclrec::faultgen {
namespace {

// Seed 29: rank 2 skips allReduceGradients' all-reduce and calls broadcastParameters' broadcast
// next on the same communicator: what the records show is an op mismatch at that slot.
TEST(FaultgenDescribe, ASkipFollowedAtOnceByAnotherCollectiveIsExpectedAsTheMismatchItRecords) {
  const Program p = generate(29, 0, FaultKind::kSkipped, false);
  ASSERT_EQ(p.fault.kind, FaultKind::kSkipped);
  const auto seen = skipSeenAsMismatch(p);
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->cls, "op_mismatch");
  EXPECT_EQ(seen->sites, (std::vector<std::string>{"broadcastParameters", "allReduceGradients"}));
  const nlohmann::json d = describe(p);
  EXPECT_EQ(d["expected"]["class"], "op_mismatch");
  EXPECT_TRUE(d["expected"].contains("because"));
}

// Seed 922: in a group of two, rank 1 skips reduceLoss()'s reduce (root: rank 0) and its next call
// is reduceScatterGrads()' reduce-scatter on the same communicator. The root is its only peer and
// blocks at the slot: the records show the same mismatch as for an unrooted collective.
TEST(FaultgenDescribe, ASkippedRootedCollectiveWhoseRootIsTheOnlyPeerIsSeenAsAMismatch) {
  const Program p = generate(922, 0, FaultKind::kNone, false);  // the seed's own fault
  ASSERT_EQ(p.fault.kind, FaultKind::kSkipped);
  int me = -1;
  ASSERT_EQ(groupOf(p, p.fault.comm, p.fault.rank, &me).size(), 2u);
  const auto seen = skipSeenAsMismatch(p);
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->cls, "op_mismatch");
  EXPECT_EQ(seen->sites, (std::vector<std::string>{"reduceScatterGrads", "reduceLoss"}));
}

// Seed 327: rank 2 skips broadcastParameters()' broadcast (root 0), then all-reduces on the same
// communicator. The ranks that only receive from the root go on, but they would after a swap too:
// the culprit's stream stops at the slot, so the records show the mismatch (samples/op_order).
TEST(FaultgenDescribe, ASkippedBroadcastOfAnotherRootIsSeenAsTheMismatchItRecords) {
  const Program p = generate(327, 0, FaultKind::kNone, false);  // the seed's own fault
  ASSERT_EQ(p.fault.kind, FaultKind::kSkipped);
  ASSERT_NE(p.fault.rank, 0);
  const auto seen = skipSeenAsMismatch(p);
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->cls, "op_mismatch");
  EXPECT_EQ(seen->sites, (std::vector<std::string>{"allReduceGradients", "broadcastParameters"}));
}

// Seed 9198: rank 0 skips syncBatchNorm()'s all-reduce of 4 floats and goes on to
// allReduceMoments()' all-reduce of 64 ints. The history has the second follow the first, so the
// analyzer reads the slot as the skip itself (docs/analyzer.md, "deletion").
TEST(FaultgenDescribe, ASkipFollowedByACollectiveOfTheSameKindFromElsewhereStaysASkip) {
  const Program p = generate(9198, 0, FaultKind::kNone, false);
  ASSERT_EQ(p.fault.kind, FaultKind::kSkipped);
  EXPECT_FALSE(skipSeenAsMismatch(p).has_value());
  EXPECT_EQ(describe(p)["expected"]["class"], "skipped_collective");
}

// Any skip whose culprit goes on elsewhere first (another communicator, a send or receive, a
// group) keeps the fault kind's own class.
TEST(FaultgenDescribe, OtherSkipsKeepSkippedCollective) {
  int kept = 0, seen = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    const Program p = generate(seed, 0, FaultKind::kSkipped, false);
    if (p.fault.kind != FaultKind::kSkipped) continue;
    const nlohmann::json d = describe(p);
    if (skipSeenAsMismatch(p)) {
      ++seen;
      EXPECT_NE(d["expected"]["class"], "skipped_collective") << seed;
    } else {
      ++kept;
      EXPECT_EQ(d["expected"]["class"], "skipped_collective") << seed;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(seen, 0);
}

}  // namespace
}  // namespace ncclrec::faultgen
