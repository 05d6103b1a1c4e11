// The per-slot alignment as verdict rules (rules.h): each communicator's streams compared like a
// diff (Engine::diagnoseComm), in Engine::commOrder().
#include "analyzer/rules/alignment.h"

#include <climits>
#include <optional>
#include <utility>

#include "analyzer/rules.h"

namespace ncclrec::analyzer::engine {

std::optional<Verdict> pendingDivergence(const Engine& en, Inferred& inferred) {
  // Cause before symptom: a communicator whose pending ops disagree (an insertion, a deletion, a
  // mismatch) explains the waits on the others, even when a rank blocked there is what another
  // communicator's older pending op waits for (a root mismatch in a sub-communicator, an extra op
  // on one communicator of a group that spans several).
  for (const CommStreams* c : en.commOrder()) {
    if (pendingSince(*c) == INT64_MAX) continue;
    if (std::optional<Verdict> d = en.divergenceOn(*c, inferred)) return d;
  }
  return std::nullopt;
}

std::optional<Verdict> firstDivergenceOrStop(const Engine& en, Inferred& inferred) {
  Verdict v;
  for (const CommStreams* c : en.commOrder()) {
    if (en.diagnoseComm(*c, v, inferred)) return v;
  }
  return std::nullopt;
}

}  // namespace ncclrec::analyzer::engine
