// Cause before symptom for ranks that left: a rank whose own last NCCL call failed because a peer
// was gone (a remote or system error) and that then exited is that peer's victim, not a culprit.
// The rank that left first, with nothing failed on its side, is the verdict.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "analyzer/engine.h"
#include "analyzer/headlines.h"
#include "analyzer/p2p_blame.h"

namespace ncclrec::analyzer::engine {
bool Engine::reacted(size_t rank) const {
  const EventRecord* last = newestPeerCall(set_.ranks[rank]);
  return last != nullptr && lostPeer(*last);
}

namespace {

bool pendingOn(const RankData& r, uint64_t comm_id) {
  return std::any_of(r.events.begin(), r.events.end(), [&](const EventRecord& e) {
    return e.commId() == comm_id && (isIncomplete(e) || e.state == EventState::kFailed);
  });
}

}  // namespace

bool Engine::vanished(size_t rank) const {
  const RankData& r = set_.ranks[rank];
  if (r.exited || r.source == format::SourceKind::kDump) return false;
  // Its rank on each communicator, as its own calls recorded it.
  std::map<uint64_t, int> comm_rank;
  for (const EventRecord& e : r.events) {
    if (e.commId() != 0 && isCommOp(e)) {
      comm_rank[e.commId()] = e.rank();
    }
  }
  for (size_t q = 0; q < set_.ranks.size(); ++q) {
    if (q == rank) continue;
    for (const EventRecord& e : set_.ranks[q].events) {
      const auto it = comm_rank.find(e.commId());
      if (it == comm_rank.end() || !lostPeer(e)) continue;
      // A send or receive that lost exactly this peer; or a collective that lost one of its
      // members while this one, which left no dump and no exit mark, had nothing pending there
      // (killed between calls;
      // LeaversTest.ABlackBoxWhosePeersLostACollectiveItHadNothingPendingOnDied).
      if (format::isP2p(e.op) ? e.peer() == it->second : !pendingOn(r, e.commId())) return true;
    }
  }
  return false;
}

bool Engine::leftOnItsOwn(size_t rank, const Inferred& inferred) const {
  const RankData& r = set_.ranks[rank];
  if (!(r.exited || r.fatal_signal != 0 || dead(rank, inferred) || vanished(rank)) ||
      reacted(rank)) {
    return false;
  }
  // Nothing of its own pending or failed: it left between calls (returned, aborted, was killed).
  return std::none_of(r.events.begin(), r.events.end(), [](const EventRecord& e) {
    return isCommOp(e) && (isIncomplete(e) || e.state == EventState::kFailed);
  });
}

bool Engine::anyLeftOnItsOwn(const Inferred& inferred) const {
  for (size_t r = 0; r < set_.ranks.size(); ++r) {
    if (leftOnItsOwn(r, inferred)) return true;
  }
  return false;
}

bool Engine::leaverExplains(const EventRecord& failed, Verdict& v, const Inferred& inferred) const {
  std::vector<size_t> followed;
  return leaverExplains(failed, v, inferred, followed);
}

bool Engine::leaverExplains(const EventRecord& failed, Verdict& v, const Inferred& inferred,
                            std::vector<size_t>& followed) const {
  if (!lostPeer(failed)) return false;
  // The ranks that left on their own and held the failed call's communicator; the first to go.
  std::vector<size_t> leavers;
  for (size_t r = 0; r < set_.ranks.size(); ++r) {
    const RankData& rd = set_.ranks[r];
    const bool holds = std::any_of(rd.events.begin(), rd.events.end(), [&](const EventRecord& e) {
      return e.commId() == failed.commId();
    });
    // One that destroyed the communicator finished its program: what it left unmatched is for
    // the point-to-point rules (rules/p2p_mismatch.h), not an early exit.
    const bool finished =
        std::any_of(rd.events.begin(), rd.events.end(), [&](const EventRecord& e) {
          return e.commId() == failed.commId() && e.op == OpType::kCommDestroy;
        });
    if (holds && !finished && leftOnItsOwn(r, inferred)) leavers.push_back(r);
  }
  if (leavers.empty()) {
    // None left on its own: a member that left after a call of its own failed so is a victim
    // too; the rank it lost, on another communicator, may be the one (faultgen seed 10401: rank
    // 5 returns from main, rank 2 exits on the failed all-reduce it shared with it, rank 6 on the
    // reduce it shared with rank 2, and ranks 0 and 3 wait for rank 6's sends).
    for (size_t r = 0; r < set_.ranks.size(); ++r) {
      const RankData& rd = set_.ranks[r];
      const bool left = rd.exited || rd.fatal_signal != 0 || dead(r, inferred);
      if (!left || !reacted(r) ||
          std::find(followed.begin(), followed.end(), r) != followed.end() ||
          std::none_of(rd.events.begin(), rd.events.end(),
                       [&](const EventRecord& e) { return e.commId() == failed.commId(); })) {
        continue;
      }
      if (exitedOnALostPeer(r, v, inferred, followed)) return true;
    }
    return false;
  }
  const auto exitedFirst = [&](size_t a, size_t b) {
    return lastSignOfLife(a) < lastSignOfLife(b);
  };
  const size_t who = *std::min_element(leavers.begin(), leavers.end(), exitedFirst);
  const RankData& rd = set_.ranks[who];
  std::vector<int> victims;
  for (size_t r = 0; r < set_.ranks.size(); ++r) {
    if (reacted(r) ||
        (r != who && std::any_of(set_.ranks[r].events.begin(), set_.ranks[r].events.end(),
                                 [&](const EventRecord& e) {
                                   return e.commId() == failed.commId() && lostPeer(e);
                                 }))) {
      victims.push_back(globalRank(r));
    }
  }
  std::sort(victims.begin(), victims.end());
  const EventRecord* last = newestCommOp(rd);
  v.cls = rd.exited ? VerdictClass::kRankExited : VerdictClass::kRankCrashed;
  v.ranks = {globalRank(who)};
  v.comm_id = failed.commId();
  v.seq = failed.op_seq;
  v.op = failed.op;
  v.site = last != nullptr ? siteAt(rd, *last) : CallSite{};
  if (v.site.known()) v.stacks = {v.site};
  Gone gone;
  gone.how = rd.exited              ? Gone::How::kExited
             : rd.fatal_signal != 0 ? Gone::How::kCrashed
                                    : Gone::How::kDied;
  gone.signal = rd.fatal_signal;
  gone.last = lastOp(rd, last);
  v.headline = leftFirstHeadline(v, gone, victims, failed.result);
  return true;
}

}  // namespace ncclrec::analyzer::engine
