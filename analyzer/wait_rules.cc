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

// An unmatched send or receive whose pair stopped because one of its ranks only reacted: that
// rank's newest call failed because a peer left on its own (killed, exited), which is the cause
// (faultgen seed 334: rank 2 failed an all-reduce with the rank that was killed and exited, so
// it never posted its next receive).
std::optional<Verdict> leaverBehind(Engine& en, const Verdict& v) {
  if (v.cls != VerdictClass::kP2pMismatch) return std::nullopt;
  for (size_t r = 0; r < en.set().ranks.size(); ++r) {
    const RankData& rd = en.set().ranks[r];
    if (!en.reacted(r) || std::none_of(rd.events.begin(), rd.events.end(),
                                       [&](const auto& e) { return e.commId() == v.comm_id; })) {
      continue;
    }
    // A failed ncclGroupEnd names no communicator: which peer it lost is not known.
    const format::EventRecord* failed = newestPeerCall(rd);
    Verdict cause;
    if (failed->commId() != 0 && en.leaverExplains(*failed, cause)) return cause;
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
