// The waits that pair by peer or span communicators (waits.h) as verdict rules (rules.h), each
// composed with the root-cause step that may replace it (root_cause.cc): a wait cycle or an
// unmatched send or receive is often the symptom of a divergence on another communicator.
#include <algorithm>
#include <optional>
#include <utility>

#include "analyzer/rank_ops.h"
#include "analyzer/rules.h"
#include "analyzer/waits.h"

namespace ncclrec::analyzer::engine {

std::optional<Verdict> waitCycleOrItsCause(Engine& en) {
  std::optional<Verdict> v = findWaitCycle(en.set(), en.callsites());
  if (v) en.preferEarlierCause(*v);
  return v;
}

namespace {

// The rank that left on its own behind `failed`, `rd`'s newest call that lost a peer. A failed
// ncclGroupEnd names no communicator: the failed calls of its group do, and they may span
// communicators the leaver held and others it did not; one leaver for all of them, or none is
// named (P2pBlameTest.SenderThatFailedAGroupWhenAPeerExitedIsNotTheCulprit).
std::optional<Verdict> leaverOf(const Engine& en, const RankData& rd,
                                const format::EventRecord& failed) {
  Verdict cause;
  if (failed.commId() != 0) {
    if (en.leaverExplains(failed, cause)) return cause;
    return std::nullopt;
  }
  if (failed.op != format::OpType::kGroupEnd) return std::nullopt;
  std::optional<Verdict> found;
  int depth = 0;
  for (size_t i = static_cast<size_t>(&failed - rd.events.data()) + 1; i-- > 0;) {
    const format::EventRecord& e = rd.events[i];
    depth += e.op == format::OpType::kGroupEnd ? 1 : e.op == format::OpType::kGroupStart ? -1 : 0;
    if (depth == 0) break;  // its ncclGroupStart
    if (e.commId() == 0 || !en.leaverExplains(e, cause)) continue;
    if (found && found->ranks != cause.ranks) return std::nullopt;
    if (!found) found = cause;
  }
  return found;
}

}  // namespace

// An unmatched send or receive whose pair stopped because one of its ranks only reacted: that
// rank's newest call failed because a peer left on its own (killed, exited), which is the cause
// (P2pBlameTest.ReceiverThatFailedWhenAPeerWasKilledIsNotTheCulprit: the receiver failed a
// collective with the rank that was killed, so it never posted its next receive).
std::optional<Verdict> leaverBehind(Engine& en, const Verdict& v) {
  if (v.cls != VerdictClass::kP2pMismatch) return std::nullopt;
  for (size_t r = 0; r < en.set().ranks.size(); ++r) {
    const RankData& rd = en.set().ranks[r];
    if (!en.reacted(r) || std::none_of(rd.events.begin(), rd.events.end(),
                                       [&](const auto& e) { return e.commId() == v.comm_id; })) {
      continue;
    }
    if (std::optional<Verdict> cause = leaverOf(en, rd, *newestPeerCall(rd))) return cause;
  }
  return std::nullopt;
}

std::optional<Verdict> p2pMismatchOrItsCause(Engine& en) {
  std::optional<Verdict> v = findP2pMismatch(en.set(), en.callsites());
  if (!v) return v;
  if (std::optional<Verdict> leaver = leaverBehind(en, *v)) {
    becomeCause(*v, std::move(*leaver));
    return v;
  }
  if (en.collectiveCauseOfP2pWait(*v)) return v;
  if (std::optional<Verdict> skip = skippedBeforeP2p(en)) becomeCause(*v, std::move(*skip));
  return v;
}

}  // namespace ncclrec::analyzer::engine
