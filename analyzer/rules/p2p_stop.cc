// A rank that stopped, seen through a peer's send or receive: the peer waits (or failed because
// the rank left) for a counterpart the rank never posted, and the rank is not in NCCL at all
// (asleep in host code, killed, exited without ending the communicator). That is a truncation of
// the rank's program, not a point-to-point mismatch (docs/analyzer.md).
#include "analyzer/rules/p2p_stop.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analyzer/headlines.h"
#include "analyzer/p2p_blame.h"
#include "analyzer/rank_ops.h"
#include "analyzer/rules.h"

namespace ncclrec::analyzer::engine {

std::optional<Verdict> findP2pStop(const Engine& en, Inferred& inferred) {
  const format::LoadedSet& set = en.set();
  std::map<std::pair<uint64_t, int>, size_t> process_of;  // (comm, comm rank) -> set index
  // (comm, op, comm rank, peer comm rank) -> the per-peer seqs it posted
  std::map<std::tuple<uint64_t, OpType, int, int>, std::set<uint64_t>> posted;
  std::vector<std::pair<size_t, const EventRecord*>> waits;
  for (size_t i = 0; i < set.ranks.size(); ++i) {
    const RankData& r = set.ranks[i];
    for (const format::Comm& c : r.comms) {
      if (c.comm_id != 0 && c.rank >= 0) process_of[{c.comm_id, c.rank}] = i;
    }
    std::pair<uint64_t, int> last{0, -1};  // try_emplace keeps the first: skip repeats
    for (const EventRecord& e : r.events) {
      if (e.commId() == 0 || e.rank() < 0) continue;
      if (e.commId() != last.first || e.rank() != last.second) {
        last = {e.commId(), e.rank()};
        process_of.try_emplace(last, i);
      }
      if (!format::isP2p(e.op) || rejected(e) || e.state == EventState::kEmpty) continue;
      posted[{e.commId(), e.op, e.rank(), e.peer()}].insert(e.op_seq);
      if (isIncomplete(e) || lostPeer(e)) waits.emplace_back(i, &e);
    }
  }
  std::sort(waits.begin(), waits.end(), [](const auto& a, const auto& b) {
    return a.second->enqueueNs() < b.second->enqueueNs();
  });
  for (const auto& [w, e] : waits) {
    const auto peer = process_of.find({e->commId(), e->peer()});
    if (peer == process_of.end() || peer->second == w) continue;
    const size_t x = peer->second;
    const RankData& rd = set.ranks[x];
    if (!p2p::stoppedIn(rd, e->commId())) continue;
    const OpType other = counterpartOf(e->op);
    const auto theirs = posted.find({e->commId(), other, e->peer(), e->rank()});
    if (theirs != posted.end() && theirs->second.contains(e->op_seq)) continue;
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
