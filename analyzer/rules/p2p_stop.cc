// A rank that stopped, seen through a peer's send or receive: the peer waits (or failed because
// the rank left) for a counterpart the rank never posted, and the rank is not in NCCL at all
// (asleep in host code, killed, exited without ending the communicator). That is a truncation of
// the rank's program, not a point-to-point mismatch (docs/analyzer.md).
#include "analyzer/rules/p2p_stop.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "analyzer/headlines.h"
#include "analyzer/p2p_blame.h"
#include "analyzer/rank_ops.h"
#include "analyzer/rules.h"
#include "analyzer/wait_graph.h"

namespace ncclrec::analyzer::engine {

std::optional<Verdict> findP2pStop(const Engine& en, Inferred& inferred) {
  const format::LoadedSet& set = en.set();
  const WaitGraph& g = en.waits();
  std::vector<std::pair<size_t, const EventRecord*>> waits;  // sends and receives that wait
  for (size_t i = 0; i < set.ranks.size(); ++i) {
    for (const EventRecord& e : set.ranks[i].events) {
      if (e.commId() == 0 || e.rank() < 0 || !format::isP2p(e.op) || rejected(e) ||
          e.state == EventState::kEmpty) {
        continue;
      }
      if (isIncomplete(e) || lostPeer(e)) waits.emplace_back(i, &e);
    }
  }
  std::sort(waits.begin(), waits.end(), [](const auto& a, const auto& b) {
    return a.second->enqueueNs() < b.second->enqueueNs();
  });
  for (const auto& [w, e] : waits) {
    const std::optional<size_t> peer = g.processOf(e->commId(), e->peer());
    if (!peer || *peer == w) continue;
    const size_t x = *peer;
    const RankData& rd = set.ranks[x];
    if (!p2p::stoppedIn(rd, e->commId())) continue;
    if (g.counterpartPosted(*e)) continue;
    const bool failed = e->state == EventState::kFailed;
    // A peer's call failing because of the rank says it is gone only of a black box
    // (Engine::vanished(): a rank that wrote a dump was alive then, and what failed that call is
    // not this rule's).
    const bool gone = failed && en.vanished(x);
    if (failed && !gone && !rd.exited && rd.fatal_signal == 0 && !en.dead(x, inferred)) continue;
    Verdict v;
    v.ranks = {en.globalRank(x)};
    v.comm_id = e->commId();
    v.seq = e->op_seq;
    v.op = e->op;
    const EventRecord* last = newestCommOp(rd);
    if (last != nullptr) v.site = en.siteAt(rd, *last);
    if (v.site.known()) v.stacks = {v.site};
    Gone how_gone;
    how_gone.last = en.lastOp(rd, last);
    if (rd.exited) {
      v.cls = VerdictClass::kRankExited;
    } else if (rd.fatal_signal != 0 || en.dead(x, inferred) || gone) {
      v.cls = VerdictClass::kRankCrashed;
      inferred.dead.insert(x);
      how_gone.how = rd.fatal_signal != 0 ? Gone::How::kCrashed : Gone::How::kDied;
      how_gone.signal = rd.fatal_signal;
    } else {
      v.cls = VerdictClass::kRankStuckInHost;
      how_gone.how = Gone::How::kInHost;
    }
    v.headline = peerGoneHeadline(v, how_gone, en.globalRank(w), en.siteAt(set.ranks[w], *e),
                                  failed, e->result);
    return v;
  }
  return std::nullopt;
}

}  // namespace ncclrec::analyzer::engine
