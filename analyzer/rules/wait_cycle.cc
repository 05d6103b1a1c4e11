#include "analyzer/rules/wait_cycle.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "analyzer/cycle_blame.h"
#include "analyzer/headlines.h"
#include "analyzer/wait_graph.h"

namespace ncclrec::analyzer::engine {
namespace {

using format::EventRecord;
using format::RankData;

// The first cycle a depth-first search from each process in order finds; empty when none.
std::vector<size_t> firstCycle(const WaitGraph& g) {
  std::vector<int> color(g.size(), 0);  // 0 new, 1 on the path, 2 done
  std::vector<size_t> path;
  std::vector<size_t> cycle;
  const auto dfs = [&](auto&& self, size_t u) -> bool {
    color[u] = 1;
    path.push_back(u);
    for (size_t w : g.waitsFor(u)) {
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
  for (size_t i = 0; i < g.size() && cycle.empty(); ++i) {
    if (color[i] == 0) dfs(dfs, i);
  }
  return cycle;
}

// The strongly connected part holding `start`: every process both reachable from it and
// reaching it, ascending. Every rank in it is in the deadlock, not only the cycle's.
std::vector<size_t> stronglyConnected(const WaitGraph& g, size_t start) {
  const size_t n = g.size();
  const auto reach = [&](bool forward) {
    std::vector<std::vector<size_t>> edges(n);
    for (size_t u = 0; u < n; ++u) {
      for (size_t w : g.waitsFor(u)) (forward ? edges[u] : edges[w]).push_back(forward ? w : u);
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
  const EventRecord& e = *facts.g.blocked(cycle.front());
  v.comm_id = e.commId();
  v.seq = e.op_seq;
  v.op = e.op;
  v.site = callSiteOf(first, e, facts.sites);
  std::vector<CycleStep> steps;
  for (size_t k = 0; k < cycle.size(); ++k) {
    const RankData& r = set.ranks[cycle[k]];
    const RankData& next = set.ranks[cycle[(k + 1) % cycle.size()]];
    const EventRecord& blocked = *facts.g.blocked(cycle[k]);
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

std::optional<Verdict> findWaitCycle(const Engine& en) {
  const WaitGraph& g = en.waits();
  const std::vector<size_t> cycle = firstCycle(g);
  if (cycle.empty()) return std::nullopt;
  const std::vector<size_t> scc = stronglyConnected(g, cycle.front());
  const CycleFacts facts{en.set(), en.callsites(), g};
  if (std::optional<Verdict> deviant = blameDeviant(facts, scc, cycleTable(facts, cycle))) {
    return deviant;
  }
  // A cycle through a send or receive with no deviant is left to the p2p accounting.
  if (g.anySendReceiveWait() && std::any_of(scc.begin(), scc.end(), [&](size_t i) {
        return g.kindOf(i) == WaitKind::kSendReceive;
      })) {
    return std::nullopt;
  }
  return deadlockVerdict(facts, cycle, scc);
}

}  // namespace ncclrec::analyzer::engine
