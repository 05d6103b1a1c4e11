// The cause steps of an unmatched send or receive (rules.h, rules.cc's table): the rank that left
// on its own behind the pair that stopped.
#include <algorithm>
#include <optional>
#include <utility>

#include "analyzer/rank_ops.h"
#include "analyzer/rules.h"

namespace ncclrec::analyzer::engine {

namespace {

// The rank that left on its own behind `failed`, `rd`'s newest call that lost a peer. A failed
// ncclGroupEnd names no communicator: the failed calls of its group do, and they may span
// communicators the leaver held and others it did not; one leaver for all of them, or none is
// named (P2pBlameTest.SenderThatFailedAGroupWhenAPeerExitedIsNotTheCulprit).
std::optional<Verdict> leaverOf(const Engine& en, const RankData& rd,
                                const format::EventRecord& failed, const Inferred& inferred) {
  Verdict cause;
  if (failed.commId() != 0) {
    if (en.leaverExplains(failed, cause, inferred)) return cause;
    return std::nullopt;
  }
  if (failed.op != format::OpType::kGroupEnd) return std::nullopt;
  std::optional<Verdict> found;
  int depth = 0;
  for (size_t i = static_cast<size_t>(&failed - rd.events.data()) + 1; i-- > 0;) {
    const format::EventRecord& e = rd.events[i];
    depth += e.op == format::OpType::kGroupEnd ? 1 : e.op == format::OpType::kGroupStart ? -1 : 0;
    if (depth == 0) break;  // its ncclGroupStart
    if (e.commId() == 0 || !en.leaverExplains(e, cause, inferred)) continue;
    if (found && found->ranks != cause.ranks) return std::nullopt;
    if (!found) found = cause;
  }
  return found;
}

// An unmatched send or receive whose pair stopped because one of its ranks only reacted: that
// rank's newest call failed because a peer left on its own (killed, exited), which is the cause
// (P2pBlameTest.ReceiverThatFailedWhenAPeerWasKilledIsNotTheCulprit: the receiver failed a
// collective with the rank that was killed, so it never posted its next receive).
std::optional<Verdict> leaverBehind(const Engine& en, const Inferred& inferred, const Verdict& v) {
  if (v.cls != VerdictClass::kP2pMismatch) return std::nullopt;
  for (size_t r = 0; r < en.set().ranks.size(); ++r) {
    const RankData& rd = en.set().ranks[r];
    if (!en.reacted(r) || std::none_of(rd.events.begin(), rd.events.end(),
                                       [&](const auto& e) { return e.commId() == v.comm_id; })) {
      continue;
    }
    if (std::optional<Verdict> cause = leaverOf(en, rd, *newestPeerCall(rd), inferred))
      return cause;
  }
  return std::nullopt;
}

}  // namespace

bool leaverBehindP2pWait(const Engine& en, Inferred& inferred, Verdict& v) {
  std::optional<Verdict> leaver = leaverBehind(en, inferred, v);
  if (!leaver) return false;
  becomeCause(v, std::move(*leaver));
  return true;
}

}  // namespace ncclrec::analyzer::engine
