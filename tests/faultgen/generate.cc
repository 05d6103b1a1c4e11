// generate(): a random correct program from a seed, then one fault in it. Randomness is a
// SplitMix64 stream read with `% n`, so a seed means the same program on every build (the
// standard distributions are implementation-defined).
#include <algorithm>
#include <array>

#include "tests/faultgen/program.h"

namespace ncclrec::faultgen {
namespace {

class Rng {
 public:
  // The seed is mixed first: SplitMix64 streams of seeds s and s + 1 would otherwise be the same
  // stream shifted by one draw when the seed is added to the state.
  explicit Rng(uint64_t seed) : s_(mix(seed ^ 0x632be59bd9b4e019ULL)) {}
  uint64_t next() { return mix(s_ += 0x9e3779b97f4a7c15ULL); }
  int pick(int n) { return n <= 1 ? 0 : static_cast<int>(next() % static_cast<uint64_t>(n)); }
  bool chance(int percent) { return pick(100) < percent; }

 private:
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t s_;
};

// The next unused site of each kind: every action gets its own function, named for what it does.
struct SiteUse {
  int used[kSiteKinds] = {};
  int take(SiteKind k) {
    const int i = used[static_cast<int>(k)]++;
    return siteOf(k, i % sitesOf(k));  // a body has at most 7 actions, each kind 7 names or more
  }
};

SiteKind collectiveSite(Op op) {
  switch (op) {
    case Op::kBroadcast:
      return SiteKind::kBroadcast;
    case Op::kReduce:
      return SiteKind::kReduce;
    case Op::kAllGather:
      return SiteKind::kAllGather;
    case Op::kReduceScatter:
      return SiteKind::kReduceScatter;
    default:
      return SiteKind::kAllReduce;
  }
}

constexpr std::array<int64_t, 5> kCounts = {4, 16, 64, 256, 1024};
constexpr std::array<Op, 5> kCollectives = {Op::kAllReduce, Op::kBroadcast, Op::kReduce,
                                            Op::kAllGather, Op::kReduceScatter};

int minGroup(const Comm& c) {
  size_t m = c.groups.front().size();
  for (const auto& g : c.groups) m = std::min(m, g.size());
  return static_cast<int>(m);
}

bool hasRedop(Op op) {
  return op == Op::kAllReduce || op == Op::kReduce || op == Op::kReduceScatter;
}
bool hasRoot(Op op) { return op == Op::kBroadcast || op == Op::kReduce; }

void makeComms(Program& p, Rng& rng) {
  Comm world;
  world.groups.emplace_back();
  for (int r = 0; r < p.world; ++r) world.groups.back().push_back(r);
  p.comms.push_back(world);
  const int wanted = 1 + rng.pick(4);
  while (static_cast<int>(p.comms.size()) < wanted) {
    std::vector<int> parents;  // families whose every group splits into groups of 2 or more
    for (size_t k = 0; k < p.comms.size(); ++k) {
      if (minGroup(p.comms[k]) >= 4) parents.push_back(static_cast<int>(k));
    }
    if (parents.empty()) break;
    Comm c;
    c.parent = parents[rng.pick(static_cast<int>(parents.size()))];
    c.strided = rng.chance(50);
    c.ngroups = 2 + rng.pick(minGroup(p.comms[c.parent]) / 2 - 1);
    c.site = siteOf(SiteKind::kSplit, static_cast<int>(p.comms.size()) - 1);
    for (const auto& pg : p.comms[c.parent].groups) {
      const int n = static_cast<int>(pg.size());
      for (int color = 0; color < c.ngroups; ++color) {
        c.groups.emplace_back();
        for (int i = 0; i < n; ++i) {
          if ((c.strided ? i % c.ngroups : i * c.ngroups / n) == color) {
            c.groups.back().push_back(pg[i]);
          }
        }
      }
    }
    p.comms.push_back(c);
  }
}

Call randomCollective(const Program& p, Rng& rng) {
  Call c;
  c.op = kCollectives[rng.pick(5)];
  c.comm = rng.pick(static_cast<int>(p.comms.size()));
  c.count = kCounts[rng.pick(5)];
  c.dtype = static_cast<Dtype>(rng.pick(3));
  if (hasRedop(c.op)) c.redop = static_cast<Redop>(rng.pick(4));
  if (hasRoot(c.op)) c.root = rng.pick(minGroup(p.comms[c.comm]));
  return c;
}

Action randomAction(const Program& p, Rng& rng, SiteUse* sites) {
  Action a;
  const int roll = rng.pick(8);
  a.kind = roll < 4   ? ActionKind::kCollective
           : roll < 6 ? ActionKind::kGroupedCollectives
           : roll < 7 ? ActionKind::kRing
                      : ActionKind::kPipeline;
  switch (a.kind) {
    case ActionKind::kCollective:
      a.block.calls.push_back(randomCollective(p, rng));
      a.block.site = sites->take(collectiveSite(a.block.calls.front().op));
      break;
    case ActionKind::kGroupedCollectives:
      a.block.grouped = true;
      for (int i = 0, n = 2 + rng.pick(2); i < n; ++i) {
        a.block.calls.push_back(randomCollective(p, rng));
      }
      a.block.site = sites->take(SiteKind::kGrouped);
      break;
    case ActionKind::kRing:
    case ActionKind::kPipeline: {
      Call send;
      send.op = Op::kSend;
      send.comm = rng.pick(static_cast<int>(p.comms.size()));
      send.count = kCounts[rng.pick(5)];
      send.dtype = static_cast<Dtype>(rng.pick(3));
      send.peer = +1;
      Call recv = send;
      recv.op = Op::kRecv;
      recv.peer = -1;
      if (a.kind == ActionKind::kRing) {
        a.block.grouped = true;
        a.block.calls = {send, recv};
        a.block.site = sites->take(SiteKind::kRing);
      } else {
        a.block.calls = {recv};
        a.block.site = sites->take(SiteKind::kPipelineRecv);
        a.send.site = sites->take(SiteKind::kPipelineSend);
        a.send.calls = {send};
        a.micro = 1 + rng.pick(4);
      }
      break;
    }
  }
  return a;
}

// The first action that uses `comm`, when a lone collective or a group of collectives (every rank
// issues it from the same function); -1 when another kind does, or none.
int firstUse(const Program& p, int comm) {
  for (size_t a = 0; a < p.body.size(); ++a) {
    const Action& act = p.body[a];
    for (const Call& c : act.block.calls) {
      if (c.comm != comm) continue;
      const bool same_site =
          act.kind == ActionKind::kCollective || act.kind == ActionKind::kGroupedCollectives;
      return same_site ? static_cast<int>(a) : -1;
    }
  }
  return -1;
}

bool hasChildren(const Program& p, int comm) {
  return std::any_of(p.comms.begin(), p.comms.end(),
                     [&](const Comm& c) { return c.parent == comm; });
}

// Which communicators are made from unique ids, eagerly or lazily at their first use, instead of
// split: in the programs of creation faults and in healthy ones, from the creation stream. A
// communicator split from at the start cannot wait for its first use (faultgen seed 891: a split
// of a lazy parent failed with an invalid argument).
void chooseMakes(Program& p, Rng& creation) {
  for (size_t k = 1; k < p.comms.size(); ++k) {
    const int roll = creation.pick(3);
    if (roll == 1) p.comms[k].make = Make::kInit;
    if (roll == 2 && firstUse(p, static_cast<int>(k)) >= 0 && !hasChildren(p, static_cast<int>(k)))
      p.comms[k].make = Make::kLazy;
  }
}

// A creation fault needs a communicator made from ids with groups of `least` ranks: when the
// program has none, one group of every rank made at the start, in its own function.
void ensureInitComm(Program& p, int least) {
  for (size_t k = 1; k < p.comms.size(); ++k) {
    if (p.comms[k].make != Make::kSplit && minGroup(p.comms[k]) >= least) return;
  }
  Comm c;
  c.parent = 0;
  c.ngroups = 1;
  c.make = Make::kInit;
  c.site = siteOf(SiteKind::kSplit, static_cast<int>(p.comms.size()) - 1);
  c.groups = {p.comms[0].groups.front()};
  p.comms.push_back(c);
}

}  // namespace

bool pickFault(Program& p, FaultKind kind, uint64_t salt);  // fault.cc

Program generate(uint64_t seed, int world, FaultKind force, bool force_healthy) {
  Rng rng(seed);
  // The creation faults' own stream: one seed in five gets one instead of its main draw.
  Rng creation(seed ^ 0xc4ea7e5eed5eedULL);
  constexpr FaultKind kCreationKinds[] = {FaultKind::kInitSkip, FaultKind::kInitTwoIds,
                                          FaultKind::kInitNranks, FaultKind::kInitDupRank};
  const bool creation_fault = creation.chance(20);
  const FaultKind creation_kind = kCreationKinds[creation.pick(4)];
  Program p;
  p.seed = seed;
  const int random_world = 2 + rng.pick(7);
  p.world = world > 0 ? world : random_world;
  // A split needs a communicator of four ranks or more to split into groups of two.
  if (force == FaultKind::kSplitSubset && p.world < 4) p.world = 4 + p.world;
  // Two ids, or a rank claimed twice, need a group of three ranks (two agreeing on what the third
  // breaks).
  const bool three = force == FaultKind::kInitTwoIds || force == FaultKind::kInitDupRank;
  if (three && p.world < 3) p.world = 3 + p.world;
  p.steps = 3 + rng.pick(3);
  makeComms(p, rng);
  if (force == FaultKind::kSplitSubset && p.comms.size() < 2) {
    // The seed made no split: make one, halving the world.
    Comm c;
    c.parent = 0;
    c.ngroups = 2;
    c.site = siteOf(SiteKind::kSplit, 0);
    c.groups = {{}, {}};
    for (int r = 0; r < p.world; ++r) c.groups[r * 2 / p.world].push_back(r);
    p.comms.push_back(c);
  }
  SiteUse sites;
  for (int i = 0, n = 2 + rng.pick(5); i < n; ++i) p.body.push_back(randomAction(p, rng, &sites));
  FaultKind kind = force;
  if (force_healthy) {
    kind = FaultKind::kNone;
  } else if (force == FaultKind::kNone) {
    kind = static_cast<FaultKind>(rng.pick(kMainFaultKinds));
    const bool needs_three =
        creation_kind == FaultKind::kInitTwoIds || creation_kind == FaultKind::kInitDupRank;
    if (creation_fault && p.world >= (needs_three ? 3 : 2)) kind = creation_kind;
  }
  const uint64_t salt = rng.next();
  if (kind == FaultKind::kNone || isCreationFault(kind)) chooseMakes(p, creation);
  if (isCreationFault(kind)) {
    ensureInitComm(p, kind == FaultKind::kInitTwoIds || kind == FaultKind::kInitDupRank ? 3 : 2);
  }
  if (pickFault(p, kind, salt)) return p;
  // Nothing in the body the fault can hit (a missing send needs p2p, a root mismatch a rooted
  // collective...): add an action that has it, made from the same stream.
  Rng extra(salt);
  for (int tries = 0; tries < 256; ++tries) {
    const SiteUse before = sites;
    p.body.push_back(randomAction(p, extra, &sites));
    if (pickFault(p, kind, extra.next())) return p;
    p.body.pop_back();
    sites = before;
  }
  p.fault = Fault{};  // cannot happen for the kinds above; a healthy program then
  return p;
}

}  // namespace ncclrec::faultgen
