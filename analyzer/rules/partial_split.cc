// The partial_split rule (skipped_collective, rank_gated_collective): rules/partial_split.h.
#include "analyzer/rules/partial_split.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/headlines.h"
#include "analyzer/phrases.h"
#include "analyzer/rank_ops.h"
#include "analyzer/rules/comm_calls.h"

namespace ncclrec::analyzer {

using format::EventRecord;
using format::EventState;
using format::OpType;
using format::RankData;

namespace {

// One ncclCommSplit call on a parent, and how far the caller's collectives on the parent had got.
struct SplitCall {
  const EventRecord* e = nullptr;
  uint64_t after_seq = 0;
};

// Which of the callers' splits the skippers did not make: the first whose call site differs from
// the skipper's split at the same place in its calls (the skippers made the others in the same
// order), or the first past the skippers' last.
size_t skippedSplit(const format::LoadedSet& set, const CallSites& sites,
                    const std::map<size_t, std::vector<SplitCall>>& by_rank, size_t caller,
                    const std::vector<size_t>& skippers) {
  const std::vector<SplitCall>& made = by_rank.at(caller);
  size_t skipped = SIZE_MAX;
  for (size_t i : skippers) {
    const auto it = by_rank.find(i);
    const size_t n = it == by_rank.end() ? 0 : it->second.size();
    size_t k = 0;
    while (k < n && k < made.size() &&
           callSiteKey(callSiteOf(set.ranks[caller], *made[k].e, sites)) ==
               callSiteKey(callSiteOf(set.ranks[i], *it->second[k].e, sites))) {
      ++k;
    }
    skipped = std::min(skipped, k);
  }
  return skipped;
}

using SplitsByProcess = std::map<size_t, std::vector<SplitCall>>;

// parent comm -> process -> its splits of it, in call order.
std::map<uint64_t, SplitsByProcess> gatherSplits(const format::LoadedSet& set) {
  std::map<uint64_t, SplitsByProcess> splits;
  for (size_t i = 0; i < set.ranks.size(); ++i) {
    std::map<uint64_t, uint64_t> reached;
    for (const EventRecord& e : set.ranks[i].events) {
      if (countedCollective(e)) reached[e.commId()] = std::max(reached[e.commId()], e.op_seq);
      if (e.op == OpType::kCommSplit && e.commId() != 0 && !rejected(e)) {
        splits[e.commId()][i].push_back(SplitCall{&e, reached[e.commId()]});
      }
    }
  }
  return splits;
}

// A split of `comm` that some members made (callers) and the others did not (skippers), who went
// on past that point on the parent instead; indexes are processes.
struct PartialSplit {
  uint64_t comm = 0;
  std::vector<size_t> members, callers, skippers;
  size_t fewest = 0;                        // the fewest splits a member made
  size_t skipped = 0;                       // the first split the skippers never made
  const SplitCall* call = nullptr;          // the earliest of the callers' calls of it
  size_t caller = 0;                        // the process that made `call`
  std::vector<const EventRecord*> instead;  // each skipper's op past that point
};

std::optional<PartialSplit> partialSplitOf(const format::LoadedSet& set, const CallSites& sites,
                                           uint64_t comm, const SplitsByProcess& by_rank) {
  PartialSplit ps;
  ps.comm = comm;
  for (size_t i = 0; i < set.ranks.size(); ++i) {
    if (holdsComm(set.ranks[i], comm)) ps.members.push_back(i);
  }
  ps.fewest = SIZE_MAX;
  for (size_t i : ps.members) {
    const auto it = by_rank.find(i);
    ps.fewest = std::min(ps.fewest, it == by_rank.end() ? size_t{0} : it->second.size());
  }
  for (size_t i : ps.members) {
    const auto it = by_rank.find(i);
    (it != by_rank.end() && it->second.size() > ps.fewest ? ps.callers : ps.skippers).push_back(i);
  }
  if (ps.callers.empty() || ps.skippers.empty()) return std::nullopt;
  // The first split the skippers never made, and where the callers made it.
  ps.skipped = skippedSplit(set, sites, by_rank, ps.callers.front(), ps.skippers);
  bool unfinished = false;
  for (size_t i : ps.callers) {
    const SplitCall& c = by_rank.at(i)[ps.skipped];
    if (ps.call == nullptr || c.after_seq < ps.call->after_seq) {
      ps.call = &c;
      ps.caller = i;
    }
    // That split or a later one never completed: the skippers' splits paired with the callers'
    // earlier ones, so the callers' last has no partner (it waits, or failed when they left).
    const std::vector<SplitCall>& made = by_rank.at(i);
    for (size_t k = ps.skipped; k < made.size(); ++k) {
      unfinished |= isIncomplete(*made[k].e) || made[k].e->state == EventState::kFailed;
    }
  }
  // The skippers went on past that point on the parent (a rank that stopped before it is a rank
  // that exited or is stuck: other rules say so).
  for (size_t i : ps.skippers) {
    const EventRecord* next = wentOnPast(set.ranks[i], comm, ps.call->after_seq);
    if (next == nullptr) break;
    ps.instead.push_back(next);
    unfinished |= isIncomplete(*next) || next->state == EventState::kFailed;
  }
  if (ps.instead.size() != ps.skippers.size() || !unfinished) return std::nullopt;
  return ps;
}

// Each member's splits of the parent, and what it did at that point.
EvidenceTable splitTable(const format::LoadedSet& set, const CallSites& sites,
                         const PartialSplit& ps, const SplitsByProcess& by_rank,
                         const std::vector<int>& named) {
  EvidenceTable t;
  t.title = "ncclCommSplit calls on comm " + shortCommId(ps.comm);
  t.columns = {"rank", "splits", "at_that_point"};
  for (size_t i : ps.members) {
    const auto it = by_rank.find(i);
    const size_t n = it == by_rank.end() ? 0 : it->second.size();
    const EventRecord* at = n > ps.fewest ? it->second[ps.skipped].e
                                          : firstPast(set.ranks[i], ps.comm, ps.call->after_seq);
    t.rows.push_back(
        {TableCell::of(int64_t{set.ranks[i].global_rank}), TableCell::of(static_cast<int64_t>(n)),
         at ? TableCell::of(evidenceOpOf(set.ranks[i], *at, sites)) : TableCell::none()});
    t.marked.push_back(std::binary_search(named.begin(), named.end(), set.ranks[i].global_rank));
  }
  return t;
}

}  // namespace

std::optional<Verdict> findPartialSplit(const format::LoadedSet& set, const CallSites& sites) {
  for (const auto& [comm, by_rank] : gatherSplits(set)) {
    const std::optional<PartialSplit> ps = partialSplitOf(set, sites, comm, by_rank);
    if (!ps) continue;
    std::vector<int> caller_ranks, skipper_ranks, all;
    for (size_t i : ps->callers) caller_ranks.push_back(set.ranks[i].global_rank);
    for (size_t i : ps->skippers) skipper_ranks.push_back(set.ranks[i].global_rank);
    std::sort(caller_ranks.begin(), caller_ranks.end());
    std::sort(skipper_ranks.begin(), skipper_ranks.end());
    std::merge(caller_ranks.begin(), caller_ranks.end(), skipper_ranks.begin(), skipper_ranks.end(),
               std::back_inserter(all));
    Verdict v;
    v.comm_id = comm;
    v.op = OpType::kCommSplit;
    v.site = callSiteOf(set.ranks[ps->caller], *ps->call->e, sites);
    const CallSite other_site = callSiteOf(set.ranks[ps->skippers[0]], *ps->instead[0], sites);
    v.stacks = {v.site, other_site};
    const SplitTaken words{caller_ranks,
                           skipper_ranks,
                           all,
                           ps->call->after_seq,
                           {evidenceOpOf(*ps->instead[0], other_site), ps->instead[0]->commId()}};
    // The fewer side deviated: skippers fewer than callers skipped it, callers fewer than
    // skippers made a split of their own.
    if (ps->callers.size() >= ps->skippers.size()) {
      v.cls = VerdictClass::kSkippedCollective;
      v.ranks = skipper_ranks;
      v.headline = partialSplitHeadline(v, words);
    } else {
      v.cls = VerdictClass::kRankGatedCollective;
      v.ranks = caller_ranks;
      v.headline = partialSplitHeadline(v, words);
    }
    v.tables.push_back(splitTable(set, sites, *ps, by_rank, v.ranks));
    return v;
  }
  return std::nullopt;
}

}  // namespace ncclrec::analyzer
