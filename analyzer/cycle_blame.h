// Internal to the analyzer (waits.cc): who broke a wait cycle across communicators. A cycle is a
// cross_comm_deadlock only when no member deviated from its peers; when one member did not issue
// an op that every other member of that communicator issued (at least two of them), that member is
// the culprit (it skipped the op, or inserted another one on the other communicator first) and
// the cycle is its evidence (docs/analyzer.md, "cause before symptom, deviant before victim").
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "analyzer/callsite.h"
#include "analyzer/verdict.h"
#include "format/reader.h"

namespace ncclrec::analyzer {

// What findWaitCycle() learnt from the recordings; indexes are into set.ranks.
struct CycleFacts {
  const format::LoadedSet& set;
  const CallSites& sites;
  const std::vector<const format::EventRecord*>& blocked;        // the collective each one waits in
  const std::vector<std::vector<size_t>>& waits_for;             // who each one waits for
  const std::map<std::pair<uint64_t, int>, size_t>& process_of;  // (comm, comm rank) -> index
  const std::map<std::pair<size_t, uint64_t>, uint64_t>& reached;  // (index, comm) -> top seq
  const std::map<uint64_t, std::set<int>>& members;                // comm -> comm ranks
};

// A process blocked in no collective but in a send or receive whose counterpart its peer has not
// posted waits for that peer: `blocked` gets that call, `waits_for` the peer. Returns whether any
// such wait was added (a cycle through one is judged only by its members' own histories).
bool addP2pWaits(const format::LoadedSet& set,
                 const std::map<std::pair<uint64_t, int>, size_t>& process_of,
                 std::vector<const format::EventRecord*>& blocked,
                 std::vector<std::vector<size_t>>& waits_for);

// The cycle as a table: each rank, where it waits, and where the rank it waits for is blocked.
EvidenceTable cycleTable(const CycleFacts& facts, const std::vector<size_t>& cycle);

// The verdict naming the one member of the strongly connected part `scc` that deviated from its
// peers, with `table` as its evidence; nullopt when none or more than one did. A member blocked
// in a send or receive (addP2pWaits) may be named only by its own history.
std::optional<Verdict> blameDeviant(const CycleFacts& facts, const std::vector<size_t>& scc,
                                    EvidenceTable table);

}  // namespace ncclrec::analyzer
