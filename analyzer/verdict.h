// What ncclrec-analyze concludes about a job: one verdict, its evidence and each rank's status.
// Built by diagnose() (diagnose.h), printed by report.h. Class names and their exit codes are part
// of the JSON schema in docs/analyzer.md: append only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/callsite.h"
#include "recorder/format/op_type.h"

namespace ncclrec::analyzer {

enum class VerdictClass {
  kNoHang,
  kUndecided,
  kRankGatedCollective,
  kSkippedCollective,
  kOpMismatch,
  kSizeMismatch,
  kDtypeMismatch,
  kRedopMismatch,
  kRootMismatch,
  kRankExited,
  kRankCrashed,
  kRankStuckInHost,
  kRankBlockedElsewhere,
  kCrossCommDeadlock,
  kNcclError,
  kP2pMismatch,
  kSlowRank,
};

// "rank_gated_collective", ...
std::string_view verdictClassName(VerdictClass c);
// exit_codes.h: kExitOk, kExitHang or kExitUndecided.
int exitCodeFor(VerdictClass c);

// One op of one rank near the divergence, for the evidence table.
struct EvidenceOp {
  uint64_t seq = 0;
  format::OpType op = format::OpType::kUnknown;
  uint64_t count = 0;
  int dtype = -1;
  int redop = -1;
  int root = -1;
  format::EventState state = format::EventState::kEmpty;
  CallSite site;
  friend bool operator==(const EvidenceOp&, const EvidenceOp&) = default;
};

// One row of the evidence table: ranks whose ops around the divergence are identical.
struct EvidenceRow {
  std::vector<int> ranks;       // global ranks, ascending
  std::vector<EvidenceOp> ops;  // ascending seq; a rank's stream may end before the others'
  std::string note;             // "exited", "crashed (SIGKILL?)", ...; "" when none
};

// How one rank stands, for the per-rank status list.
struct RankStatus {
  int rank = -1;
  std::string state;   // "waiting", "done", "exited", "crashed", "no data", "in host code", ...
  std::string detail;  // "ncclAllReduce #7 at trainStep() for 3.2s", ...
};

struct Verdict {
  VerdictClass cls = VerdictClass::kUndecided;
  std::vector<int> ranks;  // the culprit ranks (global), ascending; empty when none
  uint64_t comm_id = 0;
  uint64_t seq = 0;  // the op's sequence number on comm_id; 0 when none
  format::OpType op = format::OpType::kUnknown;
  CallSite site;           // where the culprit op was issued (or the last one, for truncations)
  std::string headline;    // one line, no newline
  uint64_t first_seq = 0;  // the evidence table starts here
  std::vector<EvidenceRow> evidence;
  std::vector<CallSite> stacks;  // the differing call sites, full stacks
  std::vector<RankStatus> status;
  std::vector<std::string> missing;  // undecided: what data would decide it
};

// "0", "1-3", "0,2,5-7".
std::string formatRanks(const std::vector<int>& ranks);
// "rank 0", "ranks 1-3".
std::string ranksWord(const std::vector<int>& ranks);
// The first 8 of the 16 hex digits of a communicator id, as listings show it.
std::string shortCommId(uint64_t comm_id);

}  // namespace ncclrec::analyzer
