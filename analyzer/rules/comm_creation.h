// The verdicts of a communicator whose creation does not finish (docs/analyzer.md, "Hangs in
// communicator creation"): ranks wait in ncclCommInitRank* for members that never join, for an id
// that can never fill, with arguments that disagree, or for a bootstrap that cannot connect. The
// ranks in the creation are the victims; the verdict names the rank that deviated. Run before
// every other wait rule (rules.cc): from another communicator, a rank blocked in a creation looks
// like a rank that stopped in host code.
#pragma once

#include <optional>
#include <vector>

#include "analyzer/creation.h"
#include "analyzer/engine.h"
#include "analyzer/headlines_creation.h"

namespace ncclrec::analyzer::engine {

// The first of: comm_init_mismatch (nranks that disagree, a rank two processes claim, a rank
// outside [0, nranks)), comm_id_mismatch (one communicator given several unique ids),
// comm_member_missing / rank_exited / rank_crashed / rank_gated_collective (a member that never
// joined, and where it is), bootstrap_stuck (every member joined alike and it does not finish).
std::optional<Verdict> findCreationHang(const Engine& en);

// creation_args.cc: processes that run as one rank of the job (its RANK), each joining a
// communicator (comm_init_mismatch).
std::optional<Verdict> processesShareARank(const Engine& en, const std::vector<Creation>& all);
// creation_args.cc: the arguments of one id's joiners disagree (comm_init_mismatch).
std::optional<Verdict> argumentsDisagree(const Engine& en, const Creation& c);
// creation_args.cc: every member joined alike and the creation has not finished for a while
// (bootstrap_stuck).
std::optional<Verdict> bootstrapStuck(const Engine& en, const Creation& c);

// What the creation rules share (comm_creation.cc).
// The creation as a headline names it (headlines_creation.h creationPhrase: "ncclCommInitRank of
// comm 1a2b3c4d (4 ranks) from buildEvalGroup() main.cc:24").
CreationRef creationOf(const Engine& en, const Creation& c);
// The evidence table of a creation: its joiners, and the processes `away` that did not join.
EvidenceTable creationTable(const Engine& en, const Creation& c, const std::vector<size_t>& away,
                            const std::vector<int>& marked);
// The verdict's communicator, op, call site and stack from the creation's first joiner.
void fromCreation(const Engine& en, const Creation& c, Verdict& v);
// Who made the creation's id (headlines_creation.h madeByPhrase: "made by rank 0
// (ncclGetUniqueId from initProcessGroup() main.cc:25)", "made by no recorded rank").
IdMaker makerOf(const Engine& en, const Creation& c);
// Global ranks of the joiners, ascending, without repeats.
std::vector<int> joinerRanks(const Creation& c);

}  // namespace ncclrec::analyzer::engine
