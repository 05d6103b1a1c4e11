// Internal to the analyzer (rules/wait_cycle.cc): who broke a wait cycle across communicators. A
// cycle is a cross_comm_deadlock only when no member deviated from its peers; when one member did
// not issue an op that every other member of that communicator issued (at least two of them), that
// member is the culprit (it skipped the op, or inserted another one on the other communicator
// first) and the cycle is its evidence (docs/analyzer.md, "cause before symptom, deviant before
// victim").
#pragma once

#include <optional>
#include <vector>

#include "analyzer/callsite.h"
#include "analyzer/verdict.h"
#include "analyzer/wait_graph.h"
#include "format/reader.h"

namespace ncclrec::analyzer {

// What findWaitCycle() reads: the recordings and their wait-for graph (wait_graph.h), whose
// indexes are into set.ranks.
struct CycleFacts {
  const format::LoadedSet& set;
  const CallSites& sites;
  const WaitGraph& g;
};

// The cycle as a table: each rank, where it waits, and where the rank it waits for is blocked.
EvidenceTable cycleTable(const CycleFacts& facts, const std::vector<size_t>& cycle);

// The verdict naming the one member of the strongly connected part `scc` that deviated from its
// peers, with `table` as its evidence; nullopt when none or more than one did. A member blocked
// in a send or receive (WaitKind::kSendReceive) may be named only by its own history.
std::optional<Verdict> blameDeviant(const CycleFacts& facts, const std::vector<size_t>& scc,
                                    EvidenceTable table);

}  // namespace ncclrec::analyzer
