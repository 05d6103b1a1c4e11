// Culprits and waiters: "cause before symptom, deviant before victim" (docs/analyzer.md). A verdict
// names in `ranks` only the ranks that did something their peers did not; this file finds the
// ranks merely blocked by them (Verdict::waiting) and says so in the headline. Used by
// diagnose() once a verdict is found.
#pragma once

#include <string>
#include <vector>

#include "analyzer/callsite.h"
#include "analyzer/verdict.h"
#include "format/reader.h"

namespace ncclrec::analyzer {

// The ranks, other than v.ranks, blocked in a collective or p2p op (their newest one is pending),
// or whose newest one failed with a remote or system error (a peer left while they waited).
// Empty for the classes that are not hangs (no_hang, slow_rank) and for ranks that crashed, died
// or have no data.
std::vector<int> waitingRanks(const format::LoadedSet& set, const Verdict& v);

// "; ranks 1-3 wait for it in #412 from train_step() train.py:40": where the waiting ranks are,
// by op (at most two places: "; rank 0 waits for it in ncclAllReduce #1 from logLoss() t.cc:40,
// rank 2 in ncclRecv #3 from recv() t.cc:74"), else "; ranks 0-5 wait for it" ("for them" with
// several culprits). Empty when v.waiting is.
std::string waitingPhrase(const format::LoadedSet& set, const CallSites& sites, const Verdict& v);

// Fills v.waiting; for the classes whose headline names only the culprits (an insertion, a
// deletion, a substitution, an unmatched send or receive, a deadlock cycle), appends
// waitingPhrase() to it.
void addWaiting(const format::LoadedSet& set, const CallSites& sites, Verdict& v);

}  // namespace ncclrec::analyzer
