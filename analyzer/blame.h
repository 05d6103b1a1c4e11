// Culprits and waiters: "cause before symptom, deviant before victim" (docs/analyzer.md). A verdict
// names in `ranks` only the ranks that did something their peers did not; this file finds the
// ranks merely blocked by them (Verdict::waiting) and says so in the headline. Used by
// diagnose() once a verdict is found.
#pragma once

#include <string>
#include <vector>

#include "analyzer/callsite.h"
#include "analyzer/headlines_where.h"
#include "analyzer/verdict.h"
#include "format/reader.h"

namespace ncclrec::analyzer {

// The ranks, other than v.ranks, blocked in a collective or p2p op (their newest one is pending),
// or whose newest one failed with a remote or system error (a peer left while they waited).
// Empty for the classes that are not hangs (no_hang, slow_rank) and for ranks that crashed, died
// or have no data.
std::vector<int> waitingRanks(const format::LoadedSet& set, const Verdict& v);

// Where the waiting ranks (v.waiting) are, grouped by op, ordered by their lowest rank, when at
// most two places (headlines_where.h waitingPhrase: "; ranks 1-3 wait for it in #412 from
// train_step() train.py:40"); empty when more, or none is known.
std::vector<WaitPlace> waitPlaces(const format::LoadedSet& set, const CallSites& sites,
                                  const Verdict& v);

// Fills v.waiting; for the classes whose headline names only the culprits (an insertion, a
// deletion, a substitution, an unmatched send or receive, a deadlock cycle), appends where they
// wait (waitingPhrase) to it.
void addWaiting(const format::LoadedSet& set, const CallSites& sites, Verdict& v);

}  // namespace ncclrec::analyzer
