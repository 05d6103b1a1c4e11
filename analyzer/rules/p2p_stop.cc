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

#include "analyzer/p2p_blame.h"
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
    const OpType other = e->op == OpType::kSend ? OpType::kRecv : OpType::kSend;
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
    const std::string who = "rank " + std::to_string(en.globalRank(x));
    const std::string waiter = "rank " + std::to_string(en.globalRank(w));
    const std::string waited =
        std::string(format::opName(e->op)) + " #" + std::to_string(e->op_seq) +
        (e->op == OpType::kSend ? " to " : " from ") + who + " on comm " +
        shortCommId(e->commId()) + " from " + describeCallSite(en.siteAt(set.ranks[w], *e));
    const std::string then = failed ? "; " + waiter + " failed in its " + waited + " (NCCL error " +
                                          std::to_string(e->result) + ")"
                                    : "; " + waiter + " waits in its " + waited;
    if (rd.exited) {
      v.cls = VerdictClass::kRankExited;
      v.headline =
          who + " exited without ending the communicator: " + en.lastOpPhrase(rd, last) + then;
    } else if (rd.fatal_signal != 0 || en.dead(x, inferred) || gone) {
      v.cls = VerdictClass::kRankCrashed;
      inferred.dead.insert(x);
      const std::string how =
          rd.fatal_signal != 0
              ? "crashed (" + base::signalName(rd.fatal_signal) + ")"
              : "died without an exit mark (killed, e.g. SIGKILL or out of memory)";
      v.headline = who + " " + how + ": " + en.lastOpPhrase(rd, last) + then;
    } else {
      v.cls = VerdictClass::kRankStuckInHost;
      v.headline = who + " is alive but stuck in host code: " + en.lastOpPhrase(rd, last) + then;
    }
    return v;
  }
  return std::nullopt;
}

}  // namespace ncclrec::analyzer::engine
