// A creation that does not finish because members did not join: a member elsewhere (or gone), or
// one communicator given several unique ids. Arguments that disagree and a bootstrap that cannot
// connect: creation_args.cc.
#include "analyzer/rules/comm_creation.h"

#include <algorithm>
#include <map>
#include <set>

#include "analyzer/rank_ops.h"
#include "analyzer/wait_graph.h"
#include "base/text.h"

namespace ncclrec::analyzer::engine {
namespace {

// How a process that did not join a creation stands.
using Away = Whereabouts::Kind;

struct Absent {
  int global_rank = -1;
  std::optional<size_t> rank;  // index into LoadedSet::ranks; nullopt: no recording
  Whereabouts where;
};

// How process `r` stands, from the wait-for graph (Engine::waits()): gone, blocked in an NCCL call
// (a collective, a send/receive, a creation), or in host code.
Absent absentOf(const Engine& en, int global_rank, std::optional<size_t> r) {
  Absent a;
  a.global_rank = global_rank;
  a.rank = r;
  if (!r) return a;  // kNoData
  const RankData& rd = en.set().ranks[*r];
  const WaitGraph& g = en.waits();
  a.where.last = en.lastOp(rd, newestCommOp(rd));
  if (g.liveness(*r) == Liveness::kExited) {
    a.where.kind = Away::kExited;
  } else if (g.liveness(*r) == Liveness::kCrashed) {
    a.where.kind = Away::kCrashed;
    a.where.signal = rd.fatal_signal;
  } else if (g.gone(*r)) {
    a.where.kind = Away::kDead;
  } else if (const EventRecord* p = g.newestWait(*r)) {
    a.where.kind = Away::kBlocked;
    a.where.in = {evidenceOpOf(*p, en.siteAt(rd, *p)), p->commId()};
  } else {
    a.where.kind = Away::kHost;
  }
  return a;
}

// The processes of the job that did not join `c`, by global rank (several for a rank claimed
// twice), and those with no recording at all.
std::vector<Absent> othersOf(const Engine& en, const Creation& c) {
  std::set<size_t> joined;
  for (const Joiner& j : c.joiners) joined.insert(j.rank);
  std::vector<Absent> out;
  for (size_t r = 0; r < en.set().ranks.size(); ++r) {
    if (!joined.contains(r)) out.push_back(absentOf(en, en.globalRank(r), r));
  }
  for (int g : en.ranksWithNoData()) out.push_back(absentOf(en, g, std::nullopt));
  std::sort(out.begin(), out.end(),
            [](const Absent& a, const Absent& b) { return a.global_rank < b.global_rank; });
  return out;
}

int worldSize(const Engine& en) {
  int world = 0;
  for (const RankData& rd : en.set().ranks) world = std::max(world, rd.world_size);
  return world;
}

// The numbering (global = a x comm + b) stride that the other groups made at the creation's call
// site follow, when they agree on one: the other groups of a strided family tell what one joiner
// alone cannot. Reads every joining call of the job (its own, done or not, and the siblings').
std::optional<int> siblingStride(const Engine& en, const Creation& c) {
  const Joiner& first = c.joiners.front();
  const SameSite same(describeCallSite(en.siteAt(en.set().ranks[first.rank], *first.event)),
                      en.callsites());
  std::map<uint64_t, std::vector<std::pair<int, int>>> by_comm;
  for (const RankData& rd : en.set().ranks) {
    for (const EventRecord& e : rd.events) {
      if (format::joinsById(e.op) && e.commId() != c.id && same(rd, e))
        by_comm[e.commId()].emplace_back(rd.global_rank, e.rank());
    }
  }
  std::optional<int> stride;
  for (const auto& [id, pairs] : by_comm) {
    std::set<int> ranks;
    for (const auto& [g, r] : pairs) ranks.insert(r);
    if (ranks.size() < 2) continue;
    const auto map = rankMapping(pairs);
    if (!map || (stride && *stride != map->first)) return std::nullopt;
    stride = map->first;
  }
  return stride;
}

// The processes that were to join as the comm ranks nobody took.
std::vector<Absent> missingOf(const Engine& en, const Creation& c, Missing* missing) {
  const std::vector<Absent> others = othersOf(en, c);
  std::vector<std::pair<int, int>> joined;
  for (const Joiner& j : c.joiners) joined.emplace_back(j.global_rank, j.comm_rank);
  std::vector<int> other_ranks;
  for (const Absent& a : others) other_ranks.push_back(a.global_rank);
  *missing =
      missingMembers(joined, c.agreedSize(), other_ranks, worldSize(en), siblingStride(en, c));
  std::vector<Absent> out;
  for (const Absent& a : others) {
    if (std::binary_search(missing->global_ranks.begin(), missing->global_ranks.end(),
                           a.global_rank))
      out.push_back(a);
  }
  return out;
}

std::vector<int> ranksOfAbsent(const std::vector<Absent>& away) {
  std::vector<int> out;
  for (const Absent& a : away) out.push_back(a.global_rank);
  return out;
}

std::vector<size_t> indicesOf(const std::vector<Absent>& away) {
  std::vector<size_t> out;
  for (const Absent& a : away) {
    if (a.rank) out.push_back(*a.rank);
  }
  return out;
}

// Whether `c` is created lazily, at the first collective on it, and by which call (the first
// joiner's stack; creation.h lazyTrigger).
LazyCreation lazyOf(const Engine& en, const Creation& c) {
  const Joiner& j = c.joiners.front();
  const CallSite site = en.siteAt(en.set().ranks[j.rank], *j.event);
  const std::optional<size_t> t = lazyTrigger(site);
  LazyCreation l;
  if (!t) return l;
  l.lazy = true;
  // describeCallSite names site.frames[site.frame]: point each copy's fields at its frame.
  const auto at = [&](int frame) {
    CallSite s = site;
    s.frame = frame;
    const format::Frame& f = s.frames[static_cast<size_t>(frame)];
    s.function = f.function;
    s.file = f.file;
    s.line = f.line;
    s.python = f.python;
    s.module = f.module;
    s.module_offset = f.module_offset;
    return s;
  };
  const int trigger = static_cast<int>(*t);
  const int from = site.frame <= trigger ? trigger + 1 : site.frame;
  l.has_caller = from < static_cast<int>(site.frames.size());
  if (l.has_caller) l.caller = at(from);
  // The call site is the collective itself when the rule stopped there: name only its caller.
  l.by_this_call = site.frame == trigger;
  if (!l.by_this_call) l.trigger = at(trigger);
  return l;
}

// A member that never joined (comm_member_missing), or one that left (rank_exited,
// rank_crashed), or ranks alone in a creation the others never make (rank_gated_collective).
std::optional<Verdict> memberMissing(const Engine& en, const Creation& c) {
  if (c.pending() != c.joiners.size()) return std::nullopt;  // a failed joiner: argument rules
  Missing missing;
  const std::vector<Absent> away = missingOf(en, c, &missing);
  if (missing.comm_ranks.empty() || away.empty()) return std::nullopt;
  const std::vector<int> joined = joinerRanks(c);
  std::vector<Absent> gone;
  bool all_blocked = true;
  for (const Absent& a : away) {
    if (a.where.kind != Away::kBlocked && a.where.kind != Away::kHost) gone.push_back(a);
    if (a.where.kind != Away::kBlocked) all_blocked = false;
  }
  Verdict v;
  fromCreation(en, c, v);
  const CreationRef creation = creationOf(en, c);
  const LazyCreation lazy = lazyOf(en, c);
  if (gone.empty() && all_blocked && joined.size() < away.size()) {
    // The joiners are the few: they began a creation the others, busy elsewhere, never make.
    v.cls = VerdictClass::kRankGatedCollective;
    v.ranks = joined;
    v.waiting = ranksOfAbsent(away);
    v.headline = creationAloneHeadline(v, creation, lazy);
  } else {
    const std::vector<Absent>& culprits = gone.empty() ? away : gone;
    v.ranks = ranksOfAbsent(culprits);
    v.waiting = joined;
    const Away first = culprits.front().where.kind;
    v.cls = first == Away::kExited                            ? VerdictClass::kRankExited
            : first == Away::kCrashed || first == Away::kDead ? VerdictClass::kRankCrashed
                                                              : VerdictClass::kCommMemberMissing;
    std::vector<std::pair<int, Whereabouts>> where;
    for (const Absent& a : culprits) where.emplace_back(a.global_rank, a.where);
    v.headline = neverJoinedHeadline(v, creation, lazy, where);
  }
  v.tables.push_back(creationTable(en, c, indicesOf(away), v.ranks));
  for (const Absent& a : away) {
    if (!a.rank) {
      v.missing.push_back("no data for rank " + std::to_string(a.global_rank) +
                          ": a rank that was not started, or was started with another RANK, "
                          "WORLD_SIZE or unique id, never joins; its launcher's log would show it");
      break;
    }
  }
  return v;
}

// Several ids for what is one communicator: pending creations of one size and one call site
// whose joiners hold disjoint ranks of it, none of which can fill.
std::vector<const Creation*> siblingsOf(const Engine& en, const std::vector<Creation>& all,
                                        const Creation& c) {
  const int n = c.agreedSize();
  const auto siteOf = [&](const Creation& x) {
    const Joiner& j = x.joiners.front();
    return callSiteKey(en.siteAt(en.set().ranks[j.rank], *j.event));
  };
  const std::string site = siteOf(c);
  std::vector<const Creation*> group;
  std::set<int> taken;
  // One process that made several of these ids made them for several communicators (two groups
  // created in one function), not several ids for one.
  std::set<const RankData*> makers;
  for (const Creation& x : all) {
    if (x.agreedSize() != n || x.joiners.size() >= static_cast<size_t>(n) || siteOf(x) != site)
      continue;
    if (x.maker != nullptr && !makers.insert(x.maker).second) continue;
    bool disjoint = true;
    for (const Joiner& j : x.joiners) disjoint = disjoint && !taken.contains(j.comm_rank);
    if (!disjoint) continue;
    for (const Joiner& j : x.joiners) taken.insert(j.comm_rank);
    group.push_back(&x);
  }
  return group;
}

std::optional<Verdict> severalIds(const Engine& en, const std::vector<Creation>& all) {
  for (const Creation& c : all) {
    const std::vector<const Creation*> ids = siblingsOf(en, all, c);
    if (ids.size() < 2) continue;
    // The largest group holds the id the others should have used; with no strict majority, the
    // rule that made several ids is at fault: their makers are named.
    // Largest first; among equals, the one with the lowest rank.
    std::vector<const Creation*> by_size = ids;
    std::sort(by_size.begin(), by_size.end(), [](const Creation* a, const Creation* b) {
      if (a->joiners.size() != b->joiners.size()) return a->joiners.size() > b->joiners.size();
      return a->joiners.front().global_rank < b->joiners.front().global_rank;
    });
    const bool majority = by_size[0]->joiners.size() > by_size[1]->joiners.size();
    Verdict v;
    fromCreation(en, *by_size[0], v);
    v.cls = VerdictClass::kCommIdMismatch;
    std::set<int> culprits, waiting;
    std::vector<std::pair<std::vector<int>, IdMaker>> groups;
    for (const Creation* x : by_size) {
      const std::vector<int> ranks = joinerRanks(*x);
      const bool deviant = majority && x != by_size[0];
      for (int r : ranks) (deviant ? culprits : waiting).insert(r);
      if (!majority && x->maker != nullptr) culprits.insert(x->maker->global_rank);
      groups.emplace_back(ranks, makerOf(en, *x));
    }
    if (!majority && culprits.empty()) culprits = waiting;  // no maker recorded: every joiner
    if (!majority) {
      for (int r : culprits) waiting.erase(r);
    }
    v.ranks.assign(culprits.begin(), culprits.end());
    v.waiting.assign(waiting.begin(), waiting.end());
    v.headline = severalIdsHeadline(creationOf(en, c), groups, majority);
    for (const Creation* x : by_size) {
      std::vector<int> marked;
      for (const Joiner& j : x->joiners) {
        if (culprits.contains(j.global_rank)) marked.push_back(j.global_rank);
      }
      v.tables.push_back(creationTable(en, *x, {}, marked));
    }
    return v;
  }
  return std::nullopt;
}

}  // namespace

std::vector<int> joinerRanks(const Creation& c) {
  std::vector<int> out;
  for (const Joiner& j : c.joiners) out.push_back(j.global_rank);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

CreationRef creationOf(const Engine& en, const Creation& c) {
  const Joiner& j = c.joiners.front();
  return {j.event->op, c.id, c.agreedSize(), en.siteAt(en.set().ranks[j.rank], *j.event)};
}

IdMaker makerOf(const Engine& en, const Creation& c) {
  IdMaker m;
  if (c.maker == nullptr) return m;
  m.recorded = true;
  m.rank = c.maker->global_rank;
  // The process too, when another one runs as the same rank.
  const auto& ranks = en.set().ranks;
  m.shared = std::count_if(ranks.begin(), ranks.end(), [&](const RankData& r) {
               return r.global_rank == c.maker->global_rank;
             }) > 1;
  m.pid = c.maker->pid;
  m.site = en.siteAt(*c.maker, *c.made_by);
  return m;
}

void fromCreation(const Engine& en, const Creation& c, Verdict& v) {
  const Joiner& j = c.joiners.front();
  v.comm_id = c.id;
  v.op = j.event->op;
  v.site = en.siteAt(en.set().ranks[j.rank], *j.event);
  v.stacks = {v.site};
}

EvidenceTable creationTable(const Engine& en, const Creation& c, const std::vector<size_t>& away,
                            const std::vector<int>& marked) {
  EvidenceTable t;
  t.title = "creation of comm " + shortCommId(c.id) + " (id " + madeByPhrase(makerOf(en, c)) +
            (c.root.empty() ? "" : ", root " + c.root) + ")";
  t.columns = {"rank", "host", "pid", "comm_rank", "nranks", "call", "now"};
  const auto row = [&](size_t r, const Joiner* j) {
    const RankData& rd = en.set().ranks[r];
    std::vector<TableCell> cells = {TableCell::of(int64_t{rd.global_rank}), TableCell::of(rd.host),
                                    TableCell::of(int64_t{rd.pid})};
    if (j != nullptr) {
      cells.push_back(TableCell::of(int64_t{j->comm_rank}));
      cells.push_back(TableCell::of(int64_t{j->nranks}));
      cells.push_back(TableCell::of(evidenceOpOf(rd, *j->event, en.callsites())));
      cells.push_back(TableCell::of(j->failed() ? "failed"
                                                : "in the creation for " +
                                                      seconds(en.now() - j->event->enqueueNs())));
    } else {
      cells.insert(cells.end(), {TableCell::none(), TableCell::none(), TableCell::none()});
      cells.push_back(TableCell::of(whereaboutsPhrase(absentOf(en, rd.global_rank, r).where)));
    }
    t.rows.push_back(std::move(cells));
    t.marked.push_back(std::find(marked.begin(), marked.end(), rd.global_rank) != marked.end());
  };
  for (const Joiner& j : c.joiners) row(j.rank, &j);
  for (size_t r : away) row(r, nullptr);
  return t;
}

std::optional<Verdict> findCreationHang(const Engine& en) {
  const std::vector<Creation> all = pendingCreations(en.set());
  if (all.empty()) return std::nullopt;
  if (auto v = processesShareARank(en, all)) return v;
  for (const Creation& c : all) {
    if (auto v = argumentsDisagree(en, c)) return v;
  }
  if (auto v = severalIds(en, all)) return v;
  for (const Creation& c : all) {
    if (auto v = memberMissing(en, c)) return v;
  }
  for (const Creation& c : all) {
    if (auto v = bootstrapStuck(en, c)) return v;
  }
  return std::nullopt;
}

}  // namespace ncclrec::analyzer::engine
