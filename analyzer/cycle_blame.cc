#include "analyzer/cycle_blame.h"

#include <algorithm>
#include <string>

namespace ncclrec::analyzer {
namespace {

using format::EventRecord;
using format::RankData;

// The smallest number of other members of a communicator that must agree on an op before the one
// member that did not issue it counts as the deviant: with one other member, two ranks that order
// two communicators differently cannot tell which of them is "the" deviant.
constexpr size_t kMinAgreeingPeers = 2;

std::string opName(const EventRecord& e) { return std::string(format::opName(e.op)); }

// A member of the cycle that did not issue an op its communicator's other members all issued.
struct Deviation {
  size_t rank = 0;                      // index into set.ranks
  const EventRecord* theirs = nullptr;  // the op the others issued (one of their blocked ones)
  size_t their_rank = 0;                // the rank of `theirs`
  std::vector<int> peers;               // the global ranks that issued it
};

std::optional<Deviation> deviationOf(const CycleFacts& f, size_t i,
                                     const std::vector<size_t>& scc) {
  for (size_t j : scc) {
    const EventRecord* theirs = f.blocked[j];
    if (j == i || theirs == nullptr) continue;
    if (std::find(f.waits_for[j].begin(), f.waits_for[j].end(), i) == f.waits_for[j].end())
      continue;
    const auto members = f.members.find(theirs->commId());
    if (members == f.members.end()) continue;
    std::vector<int> ahead;
    bool alone_behind = true;
    for (int m : members->second) {
      const auto p = f.process_of.find({theirs->commId(), m});
      if (p == f.process_of.end() || p->second == i) continue;  // no data, or itself
      const auto r = f.reached.find({p->second, theirs->commId()});
      if (r == f.reached.end() || r->second < theirs->op_seq) {
        alone_behind = false;
        break;
      }
      ahead.push_back(f.set.ranks[p->second].global_rank);
    }
    if (!alone_behind || ahead.size() < kMinAgreeingPeers) continue;
    std::sort(ahead.begin(), ahead.end());
    return Deviation{i, theirs, j, std::move(ahead)};
  }
  return std::nullopt;
}

// Whether `e`'s collective (op and call site) was issued on its communicator before `e`'s seq by
// any rank: a known step of the program, not an inserted one.
bool knownBefore(const CycleFacts& f, const RankData& owner, const EventRecord& e) {
  const std::string site = describeCallSite(callSiteOf(owner, e, f.sites));
  for (const RankData& r : f.set.ranks) {
    for (const EventRecord& x : r.events) {
      if (x.commId() != e.commId() || x.op != e.op || x.op_seq >= e.op_seq ||
          !format::isCollective(x.op)) {
        continue;
      }
      if (describeCallSite(callSiteOf(r, x, f.sites)) == site) return true;
    }
  }
  return false;
}

}  // namespace

EvidenceTable cycleTable(const CycleFacts& f, const std::vector<size_t>& cycle) {
  EvidenceTable table;
  table.title = "wait cycle";
  table.columns = {"rank",     "comm",      "seq",      "waits_in",
                   "for_rank", "peer_comm", "peer_seq", "peer_blocked_in"};
  for (size_t k = 0; k < cycle.size(); ++k) {
    const RankData& r = f.set.ranks[cycle[k]];
    const RankData& next = f.set.ranks[cycle[(k + 1) % cycle.size()]];
    const EventRecord& mine = *f.blocked[cycle[k]];
    const EventRecord& theirs = *f.blocked[cycle[(k + 1) % cycle.size()]];
    table.rows.push_back(
        {TableCell::of(int64_t{r.global_rank}), TableCell::of(shortCommId(mine.commId())),
         TableCell::of(static_cast<int64_t>(mine.op_seq)),
         TableCell::of(evidenceOpOf(r, mine, f.sites)), TableCell::of(int64_t{next.global_rank}),
         TableCell::of(shortCommId(theirs.commId())),
         TableCell::of(static_cast<int64_t>(theirs.op_seq)),
         TableCell::of(evidenceOpOf(next, theirs, f.sites))});
    table.marked.push_back(k == 0);
  }
  return table;
}

std::optional<Verdict> blameDeviant(const CycleFacts& f, const std::vector<size_t>& scc,
                                    EvidenceTable table) {
  std::optional<Deviation> found;
  for (size_t i : scc) {
    if (std::optional<Deviation> d = deviationOf(f, i, scc)) {
      if (found) return std::nullopt;  // two deviants: nothing tells which one broke the cycle
      found = std::move(d);
    }
  }
  if (!found) return std::nullopt;
  const RankData& me = f.set.ranks[found->rank];
  const EventRecord& mine = *f.blocked[found->rank];
  const RankData& peer = f.set.ranks[found->their_rank];
  const EventRecord& theirs = *found->theirs;
  const CallSite my_site = callSiteOf(me, mine, f.sites);
  const CallSite their_site = callSiteOf(peer, theirs, f.sites);
  // The ranks it waits for in its own op, and whether they all wait for it in the op it missed.
  std::vector<int> its_peers;
  bool they_wait_for_it = true;
  for (size_t j : f.waits_for[found->rank]) {
    its_peers.push_back(f.set.ranks[j].global_rank);
    they_wait_for_it = they_wait_for_it && f.blocked[j] != nullptr &&
                       f.blocked[j]->commId() == theirs.commId() &&
                       f.blocked[j]->op_seq == theirs.op_seq;
  }
  std::sort(its_peers.begin(), its_peers.end());
  const std::string there =
      "waits in " + opName(mine) + " #" + std::to_string(mine.op_seq) + " on comm " +
      shortCommId(mine.commId()) + " from " + describeCallSite(my_site) + " for " +
      ranksWord(its_peers) +
      (they_wait_for_it ? std::string(its_peers.size() == 1 ? ", which waits" : ", which wait") +
                              " for it on comm " + shortCommId(theirs.commId())
                        : std::string());
  Verdict v;
  v.ranks = {me.global_rank};
  const std::string who = "rank " + std::to_string(me.global_rank);
  const std::string their_op = opName(theirs) + " #" + std::to_string(theirs.op_seq) + " on comm " +
                               shortCommId(theirs.commId()) + " from " +
                               describeCallSite(their_site);
  if (!knownBefore(f, me, mine)) {
    // An op of its own, new to that communicator, issued where its peers issue theirs.
    v.cls = VerdictClass::kRankGatedCollective;
    v.comm_id = mine.commId();
    v.seq = mine.op_seq;
    v.op = mine.op;
    v.site = my_site;
    v.headline = who + " alone issued " + opName(mine) + " #" + std::to_string(mine.op_seq) +
                 " on comm " + shortCommId(mine.commId()) + " from " + describeCallSite(my_site) +
                 " before " + their_op + " that " + ranksWord(found->peers) + " issued; there it " +
                 there;
    v.stacks = {my_site, their_site};
  } else {
    // Skipped, or put off after its next op (two ops swapped): the same until it issues it.
    v.cls = VerdictClass::kSkippedCollective;
    v.comm_id = theirs.commId();
    v.seq = theirs.op_seq;
    v.op = theirs.op;
    v.site = their_site;
    v.headline = who + " skipped " + their_op + " that " + ranksWord(found->peers) +
                 " issued, or put it off: it " + there;
    v.stacks = {their_site, my_site};
  }
  v.tables.push_back(std::move(table));
  return v;
}

}  // namespace ncclrec::analyzer
