// findGroupPeerSkip (lifecycle_rules.h): sends and receives grouped in ncclGroupStart/End, aligned
// group by group between the two ranks of a pair.
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/lifecycle_rules.h"

namespace ncclrec::analyzer {
namespace {

using format::EventRecord;
using format::EventState;
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

bool pending(const EventRecord& e) {
  return e.state == EventState::kEnqueued || e.state == EventState::kStarted;
}

std::string peersWord(const std::vector<int>& ranks) {
  return ranks.size() == 1 ? "rank " + std::to_string(ranks[0]) : "ranks " + formatRanks(ranks);
}

}  // namespace

std::optional<Verdict> findGroupPeerSkip(const format::LoadedSet& set, const CallSites& sites) {
  std::vector<std::map<uint64_t, std::vector<Group>>> groups;
  std::map<std::pair<uint64_t, int>, size_t> process_of;  // (comm, comm rank) -> process
  for (size_t i = 0; i < set.ranks.size(); ++i) {
    groups.push_back(groupsOf(set.ranks[i]));
    for (const format::Comm& c : set.ranks[i].comms) {
      if (c.comm_id != 0 && c.rank >= 0) process_of[{c.comm_id, c.rank}] = i;
    }
    // Consecutive events mostly repeat (comm, rank): emplace keeps the first anyway.
    std::pair<uint64_t, int> last{0, -1};
    for (const EventRecord& e : set.ranks[i].events) {
      if (e.commId() == 0 || e.rank() < 0 ||
          (e.commId() == last.first && e.rank() == last.second)) {
        continue;
      }
      last = {e.commId(), e.rank()};
      process_of.emplace(last, i);
    }
  }
  // The oldest pending grouped op whose peer's group at the same position left this rank out.
  const EventRecord* best = nullptr;
  size_t best_a = 0, best_b = 0, best_g = 0;
  for (size_t a = 0; a < set.ranks.size(); ++a) {
    for (const auto& [comm, list] : groups[a]) {
      for (size_t g = 0; g < list.size(); ++g) {
        for (const EventRecord* x : list[g]) {
          if (!pending(*x) || (best != nullptr && best->enqueueNs() <= x->enqueueNs())) continue;
          const auto b = process_of.find({comm, x->peer()});
          if (b == process_of.end() || b->second == a) continue;
          const auto theirs = groups[b->second].find(comm);
          if (theirs == groups[b->second].end() || g >= theirs->second.size()) continue;
          const Group& other = theirs->second[g];
          const bool with_me = std::any_of(other.begin(), other.end(), [&](const EventRecord* o) {
            return o->peer() == x->rank();
          });
          if (other.empty() || with_me) continue;
          best = x;
          best_a = a;
          best_b = b->second;
          best_g = g;
        }
      }
    }
  }
  if (best == nullptr) return std::nullopt;
  const RankData& ra = set.ranks[best_a];
  const RankData& rb = set.ranks[best_b];
  const Group& mine = groups[best_a].at(best->commId())[best_g];
  const Group& theirs = groups[best_b].at(best->commId())[best_g];
  const OpType missing = best->op == OpType::kSend ? OpType::kRecv : OpType::kSend;
  const auto sibling = std::find_if(theirs.begin(), theirs.end(),
                                    [&](const EventRecord* o) { return o->op == missing; });
  const EventRecord& site_op = sibling != theirs.end() ? **sibling : *theirs.front();
  const auto globalOf = [&](int comm_rank) {
    const auto it = process_of.find({best->commId(), comm_rank});
    return it != process_of.end() ? set.ranks[it->second].global_rank : -1;
  };
  std::vector<int> peers;
  for (const EventRecord* o : theirs) peers.push_back(globalOf(o->peer()));
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  std::vector<std::string> waits;
  for (const EventRecord* o : mine) {
    if (o->peer() == best->peer() && pending(*o)) {
      waits.push_back(std::string(format::opName(o->op)) + " #" + std::to_string(o->op_seq) +
                      (o->op == OpType::kSend ? " to" : " from") + " rank " +
                      std::to_string(rb.global_rank));
    }
  }
  Verdict v;
  v.cls = VerdictClass::kP2pMismatch;
  v.ranks = {rb.global_rank};
  v.comm_id = best->commId();
  v.seq = best->op_seq;
  v.op = missing;
  v.site = callSiteOf(rb, site_op, sites);
  v.stacks = {v.site, callSiteOf(ra, *best, sites)};
  std::string waiting;
  for (size_t i = 0; i < waits.size(); ++i) waiting += (i == 0 ? "" : " and ") + waits[i];
  v.headline = "rank " + std::to_string(rb.global_rank) + " left rank " +
               std::to_string(ra.global_rank) + " out of its grouped sends and receives #" +
               std::to_string(best_g + 1) + " on comm " + shortCommId(best->commId()) + " from " +
               describeCallSite(v.site) + ": that group posts to " + peersWord(peers) +
               " only, while rank " + std::to_string(ra.global_rank) + "'s group #" +
               std::to_string(best_g + 1) + " waits in " + waiting;
  EvidenceTable t;
  t.title = "group #" + std::to_string(best_g + 1) + " on comm " + shortCommId(best->commId()) +
            " of ranks " + std::to_string(std::min(ra.global_rank, rb.global_rank)) + " and " +
            std::to_string(std::max(ra.global_rank, rb.global_rank));
  t.columns = {"rank", "peer", "send", "recv"};
  for (const auto& [r, group] : {std::pair{&ra, &mine}, std::pair{&rb, &theirs}}) {
    std::map<int, std::pair<TableCell, TableCell>> by_peer;
    for (const EventRecord* o : *group) {
      auto& cells = by_peer[globalOf(o->peer())];
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
  v.tables.push_back(std::move(t));
  return v;
}

}  // namespace ncclrec::analyzer
