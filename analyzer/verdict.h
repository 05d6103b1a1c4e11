// What ncclrec-analyze concludes about a job: one verdict, its evidence and each rank's status.
// Built by diagnose() (diagnose.h), printed by report.h. Class names and their exit codes are part
// of the JSON schema in docs/analyzer.md: append only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analyzer/callsite.h"
#include "format/op_type.h"

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
  kDeviceCollision,
  kCommAborted,
  kCommDestroyed,
  // A communicator's creation that does not finish (rules/comm_creation.h).
  kCommMemberMissing,
  kCommIdMismatch,
  kCommInitMismatch,
  kBootstrapStuck,
  // A rank whose process stopped running (stopped, in uninterruptible sleep, silent) while its
  // peers wait for it (rules/rank_not_running.h, truncation.cc).
  kRankNotRunning,
  // Every rank entered the same collective and runs, but one connection stopped moving data: the
  // sender sent steps its receiver never got (rules/transport_stalled.h).
  kTransportStalled,
  // Every rank waits in the same collective and runs, but one rank's GPU holds the op back: its
  // kernel never started there while it runs on the others, or started and never finished while
  // the others' finished (rules/device_stalled.h).
  kDeviceStalled,
  // A multi-node job: the ranks node 0 sees wait in one op for ranks of a node it could no longer
  // hear from (rules/node_unreachable.h).
  kNodeUnreachable,
};
// The last class of the enum: a new class goes after it and becomes the last.
inline constexpr VerdictClass kLastVerdictClass = VerdictClass::kNodeUnreachable;

// "rank_gated_collective", ...
std::string_view verdictClassName(VerdictClass c);
// exit_codes.h: kExitOk, kExitHang or kExitUndecided.
int exitCodeFor(VerdictClass c);
// An insertion, deletion or substitution between ranks' streams on one communicator (not a
// truncation).
bool isDivergence(VerdictClass c);
// The headline names only the culprits (an insertion, deletion, substitution, unmatched send or
// receive, deadlock cycle): where the waiting ranks are is appended to it.
bool namesOnlyCulprits(VerdictClass c);

// One op of one rank near the divergence, for the evidence table.
struct EvidenceOp {
  uint64_t seq = 0;
  format::OpType op = format::OpType::kUnknown;
  uint64_t count = 0;
  int dtype = -1;
  int redop = -1;
  int root = -1;
  format::EventState state = format::EventState::kEmpty;
  int result = 0;  // ncclResult_t, meaningful once the call returned
  CallSite site;
  friend bool operator==(const EvidenceOp&, const EvidenceOp&) = default;
};

// One row of the evidence table: ranks whose ops around the divergence are identical.
struct EvidenceRow {
  std::vector<int> ranks;       // global ranks, ascending
  std::vector<EvidenceOp> ops;  // ascending seq; a rank's stream may end before the others'
  std::string note;             // "exited", "crashed (SIGKILL?)", ...; "" when none
};

// One cell of an EvidenceTable.
struct TableCell {
  enum class Kind { kNone, kNumber, kText, kOp };
  Kind kind = Kind::kNone;
  int64_t number = 0;
  std::string text;
  EvidenceOp op;
  static TableCell none() { return {}; }
  static TableCell of(int64_t n) { return {Kind::kNumber, n, {}, {}}; }
  static TableCell of(std::string t) { return {Kind::kText, 0, std::move(t), {}}; }
  static TableCell of(EvidenceOp o) { return {Kind::kOp, 0, {}, std::move(o)}; }
  friend bool operator==(const TableCell&, const TableCell&) = default;
};

// Evidence that is not one communicator's slots: the sends and receives of a pair of ranks, the
// wait cycle across communicators, each rank's device. One row per fact; `columns` are also the
// JSON keys (snake_case).
struct EvidenceTable {
  std::string title;  // "sends and receives between ranks 0 and 1 on comm c0ffee00"
  std::vector<std::string> columns;
  std::vector<std::vector<TableCell>> rows;  // columns.size() cells each
  std::vector<bool> marked;                  // per row: the verdict's own fact ('>' in text)
};

// Where one rank stands when the recordings end.
enum class RankState {
  kNoData,      // no black box or dump
  kExited,      // exit mark
  kCrashed,     // fatal signal
  kDead,        // no exit mark, silent (stale heartbeat) or lost by its peers
  kWaiting,     // in a collective or p2p op
  kInHostCode,  // alive, in no NCCL op
  kNotRunning,  // its process is there but runs none of its code (stopped, uninterruptible)
};
// "no data", "exited", "crashed", "dead", "waiting", "in host code", "not running": the status
// words of the listings and of the JSON's "status" (docs/analyzer.md).
std::string_view rankStateName(RankState s);

// How one rank stands, for the per-rank status list.
struct RankStatus {
  int rank = -1;
  RankState state = RankState::kNoData;
  std::string detail;  // "ncclAllReduce #7 at trainStep() for 3.2s", ...
};

// Every thread of one rank at its latest thread snapshot (whereabouts.h), for the report.
struct RankThreads {
  int rank = -1;
  int nccl_tid = 0;                 // the thread that issues its NCCL calls (or its main thread)
  int64_t snapshot_ns = 0;          // when the snapshot was taken
  int64_t since_last_call_ns = -1;  // from its last NCCL call to the snapshot; -1 when no call
  std::vector<format::ThreadState> threads;
  std::vector<CallSite> places;    // per thread: the user frame (whereabouts.h placeOf)
  std::vector<std::string> doing;  // per thread: "running", "sleeping in read", ...
};

struct Verdict {
  VerdictClass cls = VerdictClass::kUndecided;
  // The culprits (global, ascending): only the ranks whose behaviour differs from their peers',
  // the smallest set that explains the observation; empty when none.
  std::vector<int> ranks;
  // The ranks merely blocked by the culprits (waiting in an op, or failed in one because a culprit
  // left), ascending; empty when nothing waits (no_hang, slow_rank).
  std::vector<int> waiting;
  uint64_t comm_id = 0;
  uint64_t seq = 0;  // the op's sequence number on comm_id; 0 when none
  format::OpType op = format::OpType::kUnknown;
  CallSite site;           // where the culprit op was issued (or the last one, for truncations)
  std::string headline;    // one line, no newline
  uint64_t first_seq = 0;  // the evidence table starts here
  std::vector<EvidenceRow> evidence;
  std::vector<EvidenceTable> tables;  // for the classes that do not align slots
  std::vector<CallSite> stacks;       // the differing call sites, full stacks
  std::vector<RankStatus> status;
  std::vector<std::string> missing;  // undecided: what data would decide it
  std::vector<RankThreads> threads;  // every thread of the stopped ranks, where snapshots say
};

// The evidence cell of one recorded call, its call site named from `sites` where its own stack
// has no names.
EvidenceOp evidenceOpOf(const format::RankData& rank, const format::EventRecord& e,
                        const CallSites& sites);
// The same, with its call site already known.
EvidenceOp evidenceOpOf(const format::EventRecord& e, CallSite site);

// "0", "1-3", "0,2,5-7".
std::string formatRanks(const std::vector<int>& ranks);
// "rank 0", "ranks 1-3".
std::string ranksWord(const std::vector<int>& ranks);
// The first 8 of the 16 hex digits of a communicator id, as listings show it.
std::string shortCommId(uint64_t comm_id);

}  // namespace ncclrec::analyzer
