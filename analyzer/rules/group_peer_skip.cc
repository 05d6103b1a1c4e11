// The group_peer_skip rule (rules/group_peer_skip.h): sends and receives grouped in
// ncclGroupStart/End, aligned group by group between the two ranks of a pair.
#include "analyzer/rules/group_peer_skip.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/headlines.h"
#include "analyzer/rank_ops.h"
#include "analyzer/wait_graph.h"

namespace ncclrec::analyzer::engine {
namespace {

using format::EventRecord;
using format::OpType;
using format::RankData;

using Group = std::vector<const EventRecord*>;  // its sends and receives on one communicator

// Per communicator, a process's groups that hold sends or receives on it, in issue order. A group
// runs from a GroupStart at depth 0 to the GroupEnd that closes it, per thread; one still open
// (its GroupEnd not recorded) counts too.
std::map<uint64_t, std::vector<Group>> groupsOf(const RankData& r) {
  std::map<uint64_t, std::vector<Group>> out;
  std::map<uint32_t, std::map<uint64_t, Group>> open;  // tid -> comm -> ops
  const auto close = [&](uint32_t tid) {
    for (auto& [comm, ops] : open[tid]) out[comm].push_back(std::move(ops));
    open.erase(tid);
  };
  for (const EventRecord& e : r.events) {
    if (e.op == OpType::kGroupStart && e.group_depth == 0) {
      close(e.tid());
      open[e.tid()];
    } else if ((e.op == OpType::kGroupEnd || e.op == OpType::kGroupSimulateEnd) &&
               e.group_depth == 1) {
      close(e.tid());
    } else if (format::isP2p(e.op) && (e.flags & format::kEventInGroup) != 0 && e.commId() != 0 &&
               open.contains(e.tid())) {
      open[e.tid()][e.commId()].push_back(&e);
    }
  }
  for (auto it = open.begin(); it != open.end(); it = open.begin()) close(it->first);
  return out;
}

// Every process's groups per communicator; which process holds each (comm, comm rank) from the
// wait-for graph.
struct GroupFacts {
  const format::LoadedSet& set;
  const WaitGraph& g;
  std::vector<std::map<uint64_t, std::vector<Group>>> groups;  // per process
};

GroupFacts gatherGroups(const format::LoadedSet& set, const WaitGraph& g) {
  GroupFacts f{set, g, {}};
  for (const RankData& r : set.ranks) f.groups.push_back(groupsOf(r));
  return f;
}

// A pending grouped op `op` of process `a` whose peer, process `b`, left `a` out of its group at
// the same position `g`.
struct LeftOut {
  const EventRecord* op = nullptr;
  size_t a = 0, b = 0, g = 0;
};

// The oldest such op; op == nullptr when there is none.
LeftOut oldestLeftOut(const GroupFacts& f) {
  LeftOut best;
  for (size_t a = 0; a < f.set.ranks.size(); ++a) {
    for (const auto& [comm, list] : f.groups[a]) {
      for (size_t g = 0; g < list.size(); ++g) {
        for (const EventRecord* x : list[g]) {
          if (!isIncomplete(*x) || (best.op != nullptr && best.op->enqueueNs() <= x->enqueueNs()))
            continue;
          const std::optional<size_t> b = f.g.processOf(comm, x->peer());
          if (!b || *b == a) continue;
          const auto theirs = f.groups[*b].find(comm);
          if (theirs == f.groups[*b].end() || g >= theirs->second.size()) continue;
          const Group& other = theirs->second[g];
          const bool with_me = std::any_of(other.begin(), other.end(), [&](const EventRecord* o) {
            return o->peer() == x->rank();
          });
          if (other.empty() || with_me) continue;
          best = {x, a, *b, g};
        }
      }
    }
  }
  return best;
}

// The two groups side by side, by peer: what each rank posts to whom.
EvidenceTable groupTable(const GroupFacts& f, const LeftOut& l, const CallSites& sites) {
  const RankData& ra = f.set.ranks[l.a];
  const RankData& rb = f.set.ranks[l.b];
  const Group& mine = f.groups[l.a].at(l.op->commId())[l.g];
  const Group& theirs = f.groups[l.b].at(l.op->commId())[l.g];
  EvidenceTable t;
  t.title = "group #" + std::to_string(l.g + 1) + " on comm " + shortCommId(l.op->commId()) +
            " of ranks " + std::to_string(std::min(ra.global_rank, rb.global_rank)) + " and " +
            std::to_string(std::max(ra.global_rank, rb.global_rank));
  t.columns = {"rank", "peer", "send", "recv"};
  for (const auto& [r, group] : {std::pair{&ra, &mine}, std::pair{&rb, &theirs}}) {
    std::map<int, std::pair<TableCell, TableCell>> by_peer;
    for (const EventRecord* o : *group) {
      auto& cells = by_peer[f.g.globalRankOf(l.op->commId(), o->peer())];
      (o->op == OpType::kSend ? cells.first : cells.second) =
          TableCell::of(evidenceOpOf(*r, *o, sites));
    }
    // The pair's own row, empty on the side that left the other out.
    const int other = r == &ra ? rb.global_rank : ra.global_rank;
    by_peer.try_emplace(other);
    for (auto& [peer, cells] : by_peer) {
      t.rows.push_back({TableCell::of(int64_t{r->global_rank}), TableCell::of(int64_t{peer}),
                        std::move(cells.first), std::move(cells.second)});
      t.marked.push_back(r == &rb && peer == other);
    }
  }
  return t;
}

}  // namespace

std::optional<Verdict> findGroupPeerSkip(const Engine& en) {
  const format::LoadedSet& set = en.set();
  const CallSites& sites = en.callsites();
  const GroupFacts f = gatherGroups(set, en.waits());
  const LeftOut l = oldestLeftOut(f);
  if (l.op == nullptr) return std::nullopt;
  const EventRecord* best = l.op;
  const RankData& ra = set.ranks[l.a];
  const RankData& rb = set.ranks[l.b];
  const Group& mine = f.groups[l.a].at(best->commId())[l.g];
  const Group& theirs = f.groups[l.b].at(best->commId())[l.g];
  const OpType missing = counterpartOf(best->op);
  const auto sibling = std::find_if(theirs.begin(), theirs.end(),
                                    [&](const EventRecord* o) { return o->op == missing; });
  const EventRecord& site_op = sibling != theirs.end() ? **sibling : *theirs.front();
  std::vector<int> peers;
  for (const EventRecord* o : theirs) peers.push_back(f.g.globalRankOf(best->commId(), o->peer()));
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  GroupLeftOut words;
  words.left = ra.global_rank;
  words.group = l.g + 1;
  words.posts_to = peers;
  for (const EventRecord* o : mine) {
    if (o->peer() == best->peer() && isIncomplete(*o)) words.waits.push_back(evidenceOpOf(*o, {}));
  }
  Verdict v;
  v.cls = VerdictClass::kP2pMismatch;
  v.ranks = {rb.global_rank};
  v.comm_id = best->commId();
  v.seq = best->op_seq;
  v.op = missing;
  v.site = callSiteOf(rb, site_op, sites);
  v.stacks = {v.site, callSiteOf(ra, *best, sites)};
  v.headline = groupLeftOutHeadline(v, words);
  v.tables.push_back(groupTable(f, l, sites));
  return v;
}

}  // namespace ncclrec::analyzer::engine
