#include "analyzer/rules/wait_cycle.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analyzer/cycle_blame.h"
#include "analyzer/headlines.h"
#include "analyzer/p2p_blame.h"
#include "analyzer/phrases.h"
#include "analyzer/rank_ops.h"

namespace ncclrec::analyzer {
namespace {

using format::EventRecord;
using format::OpType;
using format::RankData;

// The wait-for graph of the processes blocked in a collective (or, through addP2pWaits, in a send
// or receive): its nodes are indexes into set.ranks.
struct WaitGraph {
  std::map<std::pair<uint64_t, int>, size_t> process_of;    // (comm, comm rank) -> set index
  std::map<std::pair<size_t, uint64_t>, uint64_t> reached;  // (index, comm) -> highest seq issued
  std::map<uint64_t, std::set<int>> members;                // comm -> comm ranks
  std::vector<const EventRecord*> blocked;                  // where each one waits, or nullptr
  std::vector<std::vector<size_t>> waits_for;               // whom each one waits for
  bool p2p_waits = false;                                   // addP2pWaits added an edge
};

// Per process: how far each communicator got (the highest seq it issued) and its pending
// collectives.
std::vector<std::vector<const EventRecord*>> gatherProgress(const format::LoadedSet& set,
                                                            WaitGraph* g) {
  std::vector<std::vector<const EventRecord*>> pending_ops(set.ranks.size());
  for (size_t i = 0; i < set.ranks.size(); ++i) {
    for (const format::Comm& c : set.ranks[i].comms) {
      if (c.comm_id == 0 || c.rank < 0) continue;
      g->process_of[{c.comm_id, c.rank}] = i;
      g->members[c.comm_id].insert(c.rank);
    }
    uint64_t last_comm = 0;
    uint64_t* last_reached = nullptr;
    for (const EventRecord& e : set.ranks[i].events) {
      if (e.commId() == 0 || e.rank() < 0) continue;
      if (e.commId() != last_comm) {  // most consecutive events share one communicator
        g->process_of[{e.commId(), e.rank()}] = i;
        g->members[e.commId()].insert(e.rank());
        last_comm = e.commId();
        last_reached = &g->reached[{i, e.commId()}];
      }
      if (!format::isCollective(e.op) || rejected(e)) continue;
      *last_reached = std::max(*last_reached, e.op_seq);
      if (isIncomplete(e)) pending_ops[i].push_back(&e);
    }
  }
  return pending_ops;
}

// Where each process is blocked: its oldest pending collective that waits for a member (one
// above the lowest seq every member reached); else its oldest pending one. In a group whose other
// ops completed on their peers, the op still waiting is the one that holds it.
void pickBlocked(const WaitGraph& g,
                 const std::vector<std::vector<const EventRecord*>>& pending_ops,
                 std::vector<const EventRecord*>* blocked) {
  std::map<uint64_t, uint64_t> all_reached;  // comm -> the lowest seq every member reached
  for (const auto& [comm, ranks] : g.members) {
    uint64_t low = UINT64_MAX;
    for (int m : ranks) {
      const auto j = g.process_of.find({comm, m});
      const auto r = j == g.process_of.end() ? g.reached.end() : g.reached.find({j->second, comm});
      low = std::min(low, r == g.reached.end() ? uint64_t{0} : r->second);
    }
    all_reached[comm] = low;
  }
  blocked->assign(pending_ops.size(), nullptr);
  for (size_t i = 0; i < pending_ops.size(); ++i) {
    const EventRecord* waiting = nullptr;
    for (const EventRecord* e : pending_ops[i]) {
      if ((*blocked)[i] == nullptr || e->enqueueNs() < (*blocked)[i]->enqueueNs())
        (*blocked)[i] = e;
      if (all_reached[e->commId()] < e->op_seq &&
          (waiting == nullptr || e->enqueueNs() < waiting->enqueueNs())) {
        waiting = e;
      }
    }
    if (waiting != nullptr) (*blocked)[i] = waiting;
  }
}

// i waits for j: j belongs to the communicator i is blocked in and has not issued that seq. Each
// communicator's processes sorted by how far they got, so a blocked process looks only at those
// behind it (thousands of ranks blocked in one communicator would otherwise cost N^2).
void addCollectiveWaits(WaitGraph* g) {
  const size_t n = g->blocked.size();
  std::map<uint64_t, std::vector<std::pair<uint64_t, size_t>>> by_progress;  // (reached, process)
  for (size_t i = 0; i < n; ++i) {
    if (g->blocked[i] == nullptr) continue;
    const uint64_t comm = g->blocked[i]->commId();
    auto [it, added] = by_progress.try_emplace(comm);
    if (!added) continue;
    for (int member : g->members[comm]) {
      const auto j = g->process_of.find({comm, member});
      if (j == g->process_of.end()) continue;
      const auto r = g->reached.find({j->second, comm});
      it->second.emplace_back(r == g->reached.end() ? 0 : r->second, j->second);
    }
    std::sort(it->second.begin(), it->second.end());
  }
  g->waits_for.assign(n, {});
  for (size_t i = 0; i < n; ++i) {
    if (g->blocked[i] == nullptr) continue;
    for (const auto& [progress, j] : by_progress[g->blocked[i]->commId()]) {
      if (progress >= g->blocked[i]->op_seq) break;
      if (j != i) g->waits_for[i].push_back(j);
    }
    std::sort(g->waits_for[i].begin(), g->waits_for[i].end());  // a stable search order
  }
}

WaitGraph buildWaitGraph(const format::LoadedSet& set) {
  WaitGraph g;
  const auto pending_ops = gatherProgress(set, &g);
  pickBlocked(g, pending_ops, &g.blocked);
  addCollectiveWaits(&g);
  g.p2p_waits = addP2pWaits(set, g.process_of, g.blocked, g.waits_for);
  return g;
}

// The first cycle a depth-first search from each process in order finds; empty when none.
std::vector<size_t> firstCycle(const std::vector<std::vector<size_t>>& waits_for) {
  std::vector<int> color(waits_for.size(), 0);  // 0 new, 1 on the path, 2 done
  std::vector<size_t> path;
  std::vector<size_t> cycle;
  const auto dfs = [&](auto&& self, size_t u) -> bool {
    color[u] = 1;
    path.push_back(u);
    for (size_t w : waits_for[u]) {
      if (color[w] == 1) {
        cycle.assign(std::find(path.begin(), path.end(), w), path.end());
        return true;
      }
      if (color[w] == 0 && self(self, w)) return true;
    }
    path.pop_back();
    color[u] = 2;
    return false;
  };
  for (size_t i = 0; i < waits_for.size() && cycle.empty(); ++i) {
    if (color[i] == 0) dfs(dfs, i);
  }
  return cycle;
}

// The strongly connected part holding `start`: every process both reachable from it and
// reaching it, ascending. Every rank in it is in the deadlock, not only the cycle's.
std::vector<size_t> stronglyConnected(const std::vector<std::vector<size_t>>& waits_for,
                                      size_t start) {
  const size_t n = waits_for.size();
  const auto reach = [&](bool forward) {
    std::vector<std::vector<size_t>> edges(n);
    for (size_t u = 0; u < n; ++u) {
      for (size_t w : waits_for[u]) (forward ? edges[u] : edges[w]).push_back(forward ? w : u);
    }
    std::vector<bool> seen(n, false);
    std::vector<size_t> todo = {start};
    seen[start] = true;
    while (!todo.empty()) {
      const size_t u = todo.back();
      todo.pop_back();
      for (size_t w : edges[u]) {
        if (!seen[w]) {
          seen[w] = true;
          todo.push_back(w);
        }
      }
    }
    return seen;
  };
  const std::vector<bool> from = reach(true);
  const std::vector<bool> to = reach(false);
  std::vector<size_t> scc;
  for (size_t i = 0; i < n; ++i) {
    if (from[i] && to[i]) scc.push_back(i);
  }
  return scc;
}

// cross_comm_deadlock: the ranks of `scc`, the headline walking `cycle`.
Verdict deadlockVerdict(const CycleFacts& facts, const std::vector<size_t>& cycle,
                        const std::vector<size_t>& scc) {
  const format::LoadedSet& set = facts.set;
  Verdict v;
  v.cls = VerdictClass::kCrossCommDeadlock;
  for (size_t i : scc) v.ranks.push_back(set.ranks[i].global_rank);
  std::sort(v.ranks.begin(), v.ranks.end());
  const RankData& first = set.ranks[cycle.front()];
  const EventRecord& e = *facts.blocked[cycle.front()];
  v.comm_id = e.commId();
  v.seq = e.op_seq;
  v.op = e.op;
  v.site = callSiteOf(first, e, facts.sites);
  std::vector<CycleStep> steps;
  for (size_t k = 0; k < cycle.size(); ++k) {
    const RankData& r = set.ranks[cycle[k]];
    const RankData& next = set.ranks[cycle[(k + 1) % cycle.size()]];
    const EventRecord& blocked = *facts.blocked[cycle[k]];
    const CallSite site = callSiteOf(r, blocked, facts.sites);
    v.stacks.push_back(site);
    steps.push_back(
        {r.global_rank, {evidenceOpOf(blocked, site), blocked.commId()}, next.global_rank});
  }
  v.headline = deadlockHeadline(v, steps);
  v.tables.push_back(cycleTable(facts, cycle));
  return v;
}

}  // namespace

std::optional<Verdict> findWaitCycle(const format::LoadedSet& set, const CallSites& sites) {
  const WaitGraph g = buildWaitGraph(set);
  const std::vector<size_t> cycle = firstCycle(g.waits_for);
  if (cycle.empty()) return std::nullopt;
  const std::vector<size_t> scc = stronglyConnected(g.waits_for, cycle.front());
  const CycleFacts facts{set, sites, g.blocked, g.waits_for, g.process_of, g.reached, g.members};
  if (std::optional<Verdict> deviant = blameDeviant(facts, scc, cycleTable(facts, cycle))) {
    return deviant;
  }
  // A cycle through a send or receive with no deviant is left to the p2p accounting.
  if (g.p2p_waits && std::any_of(scc.begin(), scc.end(),
                                 [&](size_t i) { return format::isP2p(g.blocked[i]->op); })) {
    return std::nullopt;
  }
  return deadlockVerdict(facts, cycle, scc);
}

}  // namespace ncclrec::analyzer
