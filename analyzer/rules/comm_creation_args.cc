// A creation that does not finish although its members called it: their arguments disagree
// (comm_init_mismatch), or every member joined alike and the bootstrap cannot connect
// (bootstrap_stuck).
#include <algorithm>
#include <map>
#include <set>

#include "analyzer/rank_ops.h"
#include "analyzer/rules/comm_creation.h"

namespace ncclrec::analyzer::engine {
namespace {

// A creation every member joined alike for this long, without finishing, cannot connect: NCCL's
// own bootstrap takes well under a second per thousand ranks when the network works.
constexpr int64_t kBootstrapStuckNs = 3'000'000'000;

std::vector<int> sorted(std::set<int> s) { return {s.begin(), s.end()}; }

std::vector<int> ranksOf(const std::vector<const Joiner*>& js) {
  std::set<int> out;
  for (const Joiner* j : js) out.insert(j->global_rank);
  return sorted(out);
}

// Joiners that asked for a rank outside [0, nranks): NCCL refuses the call (invalid argument).
std::optional<Verdict> rankOutOfRange(const Engine& en, const Creation& c) {
  std::vector<const Joiner*> bad;
  for (const Joiner& j : c.joiners) {
    if (j.comm_rank < 0 || j.comm_rank >= j.nranks) bad.push_back(&j);
  }
  if (bad.empty()) return std::nullopt;
  Verdict v;
  fromCreation(en, c, v);
  v.cls = VerdictClass::kCommInitMismatch;
  v.ranks = ranksOf(bad);
  std::set<int> waiting;
  for (const Joiner& j : c.joiners) {
    if (!j.failed() && std::find(bad.begin(), bad.end(), &j) == bad.end())
      waiting.insert(j.global_rank);
  }
  v.waiting = sorted(waiting);
  const Joiner& b = *bad.front();
  v.site = en.siteAt(en.set().ranks[b.rank], *b.event);
  v.stacks = {v.site};
  v.headline = rankOutOfRangeHeadline(v, creationOf(en, c), b.comm_rank, b.nranks, b.failed());
  v.tables.push_back(creationTable(en, c, {}, v.ranks));
  return v;
}

// Joiners that disagree on nranks: the bootstrap root keeps the first size it hears and stops at
// the first that differs; every member then waits.
// The sizes the other communicators made at `c`'s call site were made (or asked) with.
std::set<int> siblingSizes(const Engine& en, const Creation& c) {
  const Joiner& first = c.joiners.front();
  const SameSite same(describeCallSite(en.siteAt(en.set().ranks[first.rank], *first.event)),
                      en.callsites());
  std::set<int> sizes;
  for (const RankData& rd : en.set().ranks) {
    for (const EventRecord& e : rd.events) {
      if (format::joinsById(e.op) && e.commId() != c.id && same(rd, e)) sizes.insert(e.nranks());
    }
  }
  return sizes;
}

// Of sizes that split the joiners evenly, the one the rest of the job supports: the only one equal
// to the number of processes that joined, holding every rank below it (the members present fill
// it), else the only one the other communicators made at the call site have (the groups of one
// split may differ in size: the members present come first); 0 when neither tells.
int supportedSize(const Engine& en, const Creation& c,
                  const std::map<int, std::vector<const Joiner*>>& by_size) {
  const std::set<int> siblings = siblingSizes(en, c);
  std::vector<int> by_siblings, by_count;
  std::set<size_t> procs;
  std::set<int> held;
  for (const Joiner& j : c.joiners) {
    procs.insert(j.rank);
    held.insert(j.comm_rank);
  }
  const int present = static_cast<int>(procs.size());
  const bool filled = static_cast<int>(held.size()) == present && !held.empty() &&
                      *held.begin() == 0 && *held.rbegin() == present - 1;
  for (const auto& [n, js] : by_size) {
    if (siblings.contains(n)) by_siblings.push_back(n);
    if (filled && n == present) by_count.push_back(n);
  }
  if (by_count.size() == 1) return by_count.front();
  if (by_siblings.size() == 1) return by_siblings.front();
  return 0;
}

std::optional<Verdict> sizesDisagree(const Engine& en, const Creation& c) {
  std::map<int, std::vector<const Joiner*>> by_size;
  for (const Joiner& j : c.joiners) by_size[j.nranks].push_back(&j);
  if (by_size.size() < 2) return std::nullopt;
  int agreed = c.agreedSize();
  size_t top = 0, second = 0;
  for (const auto& [n, js] : by_size) {
    const size_t k = ranksOf(js).size();
    if (k > top) {
      second = top;
      top = k;
    } else if (k > second) {
      second = k;
    }
  }
  // No majority (two members, one size each): the size the rest of the job supports.
  if (top == second) {
    if (const int n = supportedSize(en, c, by_size); n != 0) {
      agreed = n;
      top = second + 1;
    }
  }
  Verdict v;
  fromCreation(en, c, v);
  v.cls = VerdictClass::kCommInitMismatch;
  std::set<int> culprits, waiting;
  std::vector<std::pair<std::vector<int>, int>> sizes;
  for (const auto& [n, js] : by_size) {
    const std::vector<int> ranks = ranksOf(js);
    const bool deviant = top > second ? n != agreed : true;
    for (int r : ranks) (deviant ? culprits : waiting).insert(r);
    sizes.emplace_back(ranks, n);
  }
  v.ranks = sorted(culprits);
  v.waiting = sorted(waiting);
  v.headline = sizesDisagreeHeadline(v, creationOf(en, c), sizes, top > second);
  v.tables.push_back(creationTable(en, c, {}, v.ranks));
  return v;
}

// Of the claimers `js` of comm rank `k`, the one that was to be one of the `free` ranks: the one
// that, given such a rank, makes every member fit one numbering (global = a x comm + b, over the
// ranks claimed once and the other claimers of k). Else those whose global rank is not k (the
// identity numbering), when another's is; else all of them.
std::vector<const Joiner*> oddClaimers(int k, const std::vector<const Joiner*>& js,
                                       const std::vector<std::pair<int, int>>& once,
                                       const std::vector<int>& free) {
  std::vector<const Joiner*> fit;
  for (const Joiner* x : js) {
    for (int m : free) {
      std::vector<std::pair<int, int>> pairs = once;
      for (const Joiner* y : js) {
        if (y != x) pairs.emplace_back(y->global_rank, k);
      }
      pairs.emplace_back(x->global_rank, m);
      if (rankMapping(pairs)) {
        fit.push_back(x);
        break;
      }
    }
  }
  if (fit.size() == 1) return fit;
  std::vector<const Joiner*> not_k;
  for (const Joiner* j : js) {
    if (j->global_rank != k) not_k.push_back(j);
  }
  return not_k.empty() || not_k.size() == js.size() ? js : not_k;
}

// Two processes (or more) joined as one comm rank: the bootstrap root stops at the second, and
// the ranks nobody took never join. The odd claimers of each rank are named (oddClaimers).
std::optional<Verdict> rankClaimedTwice(const Engine& en, const Creation& c) {
  std::map<int, std::vector<const Joiner*>> by_rank;
  for (const Joiner& j : c.joiners) by_rank[j.comm_rank].push_back(&j);
  std::vector<std::pair<int, int>> once;
  for (const auto& [k, js] : by_rank) {
    if (js.size() == 1) once.emplace_back(js.front()->global_rank, k);
  }
  std::vector<int> free;
  for (int r = 0; r < c.agreedSize(); ++r) {
    if (!by_rank.contains(r)) free.push_back(r);
  }
  std::vector<const Joiner*> odd;
  std::set<int> twice;
  for (const auto& [k, js] : by_rank) {
    if (js.size() < 2) continue;
    twice.insert(k);
    const std::vector<const Joiner*> mine = oddClaimers(k, js, once, free);
    odd.insert(odd.end(), mine.begin(), mine.end());
  }
  if (twice.empty()) return std::nullopt;
  Verdict v;
  fromCreation(en, c, v);
  v.cls = VerdictClass::kCommInitMismatch;
  v.ranks = ranksOf(odd);
  std::set<int> waiting;
  for (const Joiner& j : c.joiners) {
    if (std::find(odd.begin(), odd.end(), &j) == odd.end()) waiting.insert(j.global_rank);
  }
  v.waiting = sorted(waiting);
  std::vector<Claim> claims;
  for (const Joiner* j : odd) {
    const RankData& rd = en.set().ranks[j->rank];
    claims.push_back({j->global_rank, rd.pid, rd.host, j->comm_rank});
  }
  v.headline = rankClaimedTwiceHeadline(v, creationOf(en, c), claims, free);
  v.tables.push_back(creationTable(en, c, {}, v.ranks));
  return v;
}

// Each NCCL network setting of the joiners ("" for none) with the ranks that run with it, in the
// order of each setting's lowest rank.
std::vector<std::pair<std::string, std::vector<int>>> netSettings(const Engine& en,
                                                                  const Creation& c) {
  std::map<std::string, std::set<int>> by_env;
  for (const Joiner& j : c.joiners) by_env[en.set().ranks[j.rank].net_env].insert(j.global_rank);
  std::vector<std::pair<std::string, std::vector<int>>> ordered;
  for (const auto& [env, ranks] : by_env) ordered.emplace_back(env, sorted(ranks));
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.second.front() < b.second.front(); });
  return ordered;
}

}  // namespace

std::optional<Verdict> processesShareARank(const Engine& en, const std::vector<Creation>& all) {
  std::map<int, std::vector<std::pair<const Creation*, const Joiner*>>> by_rank;
  for (const Creation& c : all) {
    for (const Joiner& j : c.joiners) {
      if (j.global_rank >= 0) by_rank[j.global_rank].emplace_back(&c, &j);
    }
  }
  for (const auto& [rank, claims] : by_rank) {
    std::set<size_t> procs;
    for (const auto& [c, j] : claims) procs.insert(j->rank);
    if (procs.size() < 2) continue;
    Verdict v;
    fromCreation(en, *claims.front().first, v);
    v.cls = VerdictClass::kCommInitMismatch;
    v.ranks = {rank};
    std::vector<SharedRankClaim> who;
    for (const auto& [c, j] : claims) {
      const RankData& rd = en.set().ranks[j->rank];
      who.push_back({rd.pid, rd.host, creationOf(en, *c), j->comm_rank, makerOf(en, *c)});
    }
    std::set<int> present, waiting;
    int world = 0;
    for (const RankData& rd : en.set().ranks) {
      present.insert(rd.global_rank);
      world = std::max(world, rd.world_size);
      if (rd.global_rank != rank && joiningById(rd)) waiting.insert(rd.global_rank);
    }
    std::vector<int> absent;
    for (int r = 0; r < world; ++r) {
      if (!present.contains(r)) absent.push_back(r);
    }
    v.waiting = sorted(waiting);
    v.headline = sharedRankHeadline(v, procs.size(), who, absent);
    for (const auto& [c, j] : claims) v.tables.push_back(creationTable(en, *c, {}, v.ranks));
    return v;
  }
  return std::nullopt;
}

std::optional<Verdict> argumentsDisagree(const Engine& en, const Creation& c) {
  if (auto v = rankOutOfRange(en, c)) return v;
  if (auto v = sizesDisagree(en, c)) return v;
  return rankClaimedTwice(en, c);
}

std::optional<Verdict> bootstrapStuck(const Engine& en, const Creation& c) {
  const int n = c.agreedSize();
  std::set<int> ranks;
  bool lost = false;
  for (const Joiner& j : c.joiners) {
    if (j.nranks != n) return std::nullopt;
    if (j.failed() && !lostPeer(*j.event)) return std::nullopt;  // refused: not a connection
    lost = lost || j.failed();
    ranks.insert(j.comm_rank);
  }
  if (static_cast<int>(ranks.size()) != n || static_cast<int>(c.joiners.size()) != n)
    return std::nullopt;
  if (!lost && en.now() - c.last_ns < kBootstrapStuckNs) return std::nullopt;
  Verdict v;
  fromCreation(en, c, v);
  v.cls = VerdictClass::kBootstrapStuck;
  v.waiting = joinerRanks(c);
  v.headline = bootstrapStuckHeadline(
      v, creationOf(en, c),
      {en.now() - c.last_ns, lost, c.root, makerOf(en, c), netSettings(en, c)});
  v.missing.push_back(
      "which connection fails: NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP on the ranks "
      "logs each attempt to reach the root");
  v.tables.push_back(creationTable(en, c, {}, {}));
  return v;
}

}  // namespace ncclrec::analyzer::engine
