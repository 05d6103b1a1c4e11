// The analyzer's verdict rules and the one order they are tried in (rules.cc): each rule looks
// for one pattern in the recordings and returns its verdict, or nullopt; the first verdict wins,
// so a rule comes after every rule whose verdict is a cause of what it would see. Internal to
// the analyzer; diagnose() (diagnose.h) runs them.
//
// A rule finds; the cause steps the table declares for it (NamedRule::causes) may then replace
// its verdict with an earlier cause. A rule takes the Engine (engine.h) mutable: the alignment and
// the p2p stop record the ranks they find dead from their peers' errors (Engine::markDead), which
// the status list reports.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "analyzer/engine.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer::engine {

using Rule = std::optional<Verdict> (*)(Engine&);

// A cause step on a rule's verdict: when `v` is the symptom of something earlier (a divergence of
// the same ranks, a rank that left, a collective that holds a peer up), replaces it with that
// cause (the symptom becomes its `what followed` row, becomeCause) and returns true.
using Explainer = bool (*)(Engine& en, Verdict& v);

struct NamedRule {
  std::string_view name;  // for tests and comments; not printed
  Rule find;
  // Tried in order on the rule's verdict; the first that explains it replaces it. "Cause before
  // symptom" is declared here, in the table, rather than by rules calling rules.
  std::span<const Explainer> causes = {};
};

// Every rule, in the order diagnose() tries them (rules.cc). The last one always decides.
std::span<const NamedRule> verdictRules();

// Runs verdictRules() in order; the first verdict, with each rank's status added.
Verdict runRules(Engine& engine);

// The cause steps (Explainer) the table declares, by file:
// root_cause.cc: an earlier divergence of the same ranks, issued before each of their newest calls
// (Engine::preferEarlierCause): explains a wait cycle, a stream that stopped, a divergence.
bool earlierDivergence(Engine& en, Verdict& v);
// wait_rules.cc: an unmatched send or receive whose pair stopped because one of its ranks only
// reacted to a peer that left on its own: that leaver.
bool leaverBehindP2pWait(Engine& en, Verdict& v);
// root_cause.cc: a divergence (or a collective some ranks issued alone) on a communicator with ops
// pending that holds the unmatched call's peer up (Engine::collectiveCauseOfP2pWait).
bool collectiveBehindP2pWait(Engine& en, Verdict& v);
// skip_rules.cc: a collective that one rank skipped before going into a send or receive that its
// peers, waiting in that collective, post only after it (by the rank's own history of both calls):
// skipped_collective (skippedBeforeP2p).
bool skipBehindP2pWait(Engine& en, Verdict& v);
std::optional<Verdict> skippedBeforeP2p(Engine& en);

}  // namespace ncclrec::analyzer::engine
