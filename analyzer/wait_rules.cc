// The waits that pair by peer or span communicators (waits.h) as verdict rules (rules.h), each
// composed with the root-cause step that may replace it (root_cause.cc): a wait cycle or an
// unmatched send or receive is often the symptom of a divergence on another communicator.
#include <optional>
#include <utility>

#include "analyzer/rules.h"
#include "analyzer/waits.h"

namespace ncclrec::analyzer::engine {

std::optional<Verdict> waitCycleOrItsCause(Engine& en) {
  std::optional<Verdict> v = findWaitCycle(en.set(), en.callsites());
  if (v) en.preferEarlierCause(*v);
  return v;
}

std::optional<Verdict> p2pMismatchOrItsCause(Engine& en) {
  std::optional<Verdict> v = findP2pMismatch(en.set(), en.callsites());
  if (!v || en.collectiveCauseOfP2pWait(*v)) return v;
  if (std::optional<Verdict> skip = skippedBeforeP2p(en)) becomeCause(*v, std::move(*skip));
  return v;
}

}  // namespace ncclrec::analyzer::engine
