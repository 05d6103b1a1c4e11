// The analyzer's verdict rules and the one order they are tried in (rules.cc): each rule looks
// for one pattern in the recordings and returns its verdict, or nullopt; the first verdict wins,
// so a rule comes after every rule whose verdict is a cause of what it would see. Internal to
// the analyzer; diagnose() (diagnose.h) runs them.
//
// A rule finds; the cause steps the table declares for it (NamedRule::causes) may then replace
// its verdict with an earlier cause. Rules and cause steps read the Engine (engine.h) const; what
// they infer beyond its facts, the ranks found dead from their peers' errors (the alignment, the
// p2p stop, the end of a chain of waits), they add to the run's Inferred, which the rule that
// decides hands on to its cause steps and the status list reports.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "analyzer/engine.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer::engine {

using Rule = std::optional<Verdict> (*)(const Engine&, Inferred&);

// A cause step on a rule's verdict: when `v` is the symptom of something earlier (a divergence of
// the same ranks, a rank that left, a collective that holds a peer up), replaces it with that
// cause (the symptom becomes its `what followed` row, becomeCause) and returns true.
using Explainer = bool (*)(const Engine& en, Inferred& inferred, Verdict& v);

struct NamedRule {
  std::string_view name;  // for tests and comments; not printed
  Rule find;
  // Tried in order on the rule's verdict; the first that explains it replaces it. "Cause before
  // symptom" is declared here, in the table, rather than by rules calling rules.
  std::span<const Explainer> causes = {};
};

// Every rule, in the order diagnose() tries them (rules.cc). The last one always decides.
std::span<const NamedRule> verdictRules();

// Runs verdictRules() in order, with one Inferred; the first verdict, with each rank's status
// added.
Verdict runRules(const Engine& engine);

// The cause steps (Explainer) the table declares, by file:
// root_cause.cc: an earlier divergence of the same ranks, issued before each of their newest calls,
// or a lone first collective of theirs that holds them (Engine::preferEarlierCause): explains a
// wait cycle, a stream that stopped, a divergence.
bool earlierDivergence(const Engine& en, Inferred& inferred, Verdict& v);
// wait_rules.cc: an unmatched send or receive whose pair stopped because one of its ranks only
// reacted to a peer that left on its own: that leaver.
bool leaverBehindP2pWait(const Engine& en, Inferred& inferred, Verdict& v);
// root_cause.cc: a divergence (or a collective some ranks issued alone) on a communicator with ops
// pending that holds the unmatched call's peer up (Engine::collectiveCauseOfP2pWait).
bool collectiveBehindP2pWait(const Engine& en, Inferred& inferred, Verdict& v);
// skip_rules.cc: a collective that one rank skipped before going into a send or receive that its
// peers, waiting in that collective, post only after it (by the rank's own history of both calls):
// skipped_collective (skippedBeforeP2p).
bool skipBehindP2pWait(const Engine& en, Inferred& inferred, Verdict& v);
std::optional<Verdict> skippedBeforeP2p(const Engine& en, const Inferred& inferred);

}  // namespace ncclrec::analyzer::engine
