#include "analyzer/verdict.h"

#include <cstdio>
#include <iterator>
#include <utility>

#include "analyzer/exit_codes.h"
#include "base/text.h"

namespace ncclrec::analyzer {

std::string_view rankStateName(RankState s) {
  switch (s) {
    case RankState::kNoData:
      return "no data";
    case RankState::kExited:
      return "exited";
    case RankState::kCrashed:
      return "crashed";
    case RankState::kDead:
      return "dead";
    case RankState::kWaiting:
      return "waiting";
    case RankState::kInHostCode:
      return "in host code";
    case RankState::kNotRunning:
      return "not running";
  }
  return "unknown";
}

namespace {

// Every property of a verdict class, one row each, in the enum's order (checked below): the name
// printed and written to JSON, the exit status, and what kind of finding the class is.
struct ClassRow {
  VerdictClass cls;
  std::string_view name;
  int exit_code;
  bool divergence;           // ranks' streams on one communicator differ (not a truncation)
  bool names_only_culprits;  // the headline names the culprits; the waiting ranks are appended
};

constexpr ClassRow kClassRows[] = {
    {VerdictClass::kNoHang, "no_hang", kExitOk, false, false},
    {VerdictClass::kUndecided, "undecided", kExitUndecided, false, false},
    {VerdictClass::kRankGatedCollective, "rank_gated_collective", kExitHang, true, true},
    {VerdictClass::kSkippedCollective, "skipped_collective", kExitHang, true, true},
    {VerdictClass::kOpMismatch, "op_mismatch", kExitHang, true, true},
    {VerdictClass::kSizeMismatch, "size_mismatch", kExitHang, true, true},
    {VerdictClass::kDtypeMismatch, "dtype_mismatch", kExitHang, true, true},
    {VerdictClass::kRedopMismatch, "redop_mismatch", kExitHang, true, true},
    {VerdictClass::kRootMismatch, "root_mismatch", kExitHang, true, true},
    {VerdictClass::kRankExited, "rank_exited", kExitHang, false, false},
    {VerdictClass::kRankCrashed, "rank_crashed", kExitHang, false, false},
    {VerdictClass::kRankStuckInHost, "rank_stuck_in_host", kExitHang, false, false},
    {VerdictClass::kRankBlockedElsewhere, "rank_blocked_elsewhere", kExitHang, false, false},
    // Names the cycle only.
    {VerdictClass::kCrossCommDeadlock, "cross_comm_deadlock", kExitHang, false, true},
    {VerdictClass::kNcclError, "nccl_error", kExitHang, false, false},
    {VerdictClass::kP2pMismatch, "p2p_mismatch", kExitHang, false, true},
    {VerdictClass::kSlowRank, "slow_rank", kExitOk, false, false},
    {VerdictClass::kDeviceCollision, "device_collision", kExitHang, false, false},
    {VerdictClass::kCommAborted, "comm_aborted", kExitHang, false, false},
    {VerdictClass::kCommDestroyed, "comm_destroyed", kExitHang, false, false},
    {VerdictClass::kCommMemberMissing, "comm_member_missing", kExitHang, false, false},
    {VerdictClass::kCommIdMismatch, "comm_id_mismatch", kExitHang, false, false},
    {VerdictClass::kCommInitMismatch, "comm_init_mismatch", kExitHang, false, false},
    {VerdictClass::kBootstrapStuck, "bootstrap_stuck", kExitHang, false, false},
    {VerdictClass::kRankNotRunning, "rank_not_running", kExitHang, false, false},
    {VerdictClass::kTransportStalled, "transport_stalled", kExitHang, false, false},
    {VerdictClass::kDeviceStalled, "device_stalled", kExitHang, false, false},
    {VerdictClass::kNodeUnreachable, "node_unreachable", kExitHang, false, false},
};

constexpr bool rowsInEnumOrder() {
  for (size_t i = 0; i < std::size(kClassRows); ++i)
    if (static_cast<size_t>(kClassRows[i].cls) != i) return false;
  return std::size(kClassRows) == static_cast<size_t>(kLastVerdictClass) + 1;
}
static_assert(rowsInEnumOrder(), "kClassRows: one row per VerdictClass, in the enum's order");

const ClassRow* rowOf(VerdictClass c) {
  const auto i = static_cast<size_t>(c);
  return i < std::size(kClassRows) ? &kClassRows[i] : nullptr;
}

}  // namespace

std::string_view verdictClassName(VerdictClass c) {
  const ClassRow* row = rowOf(c);
  return row != nullptr ? row->name : "unknown";
}

int exitCodeFor(VerdictClass c) {
  const ClassRow* row = rowOf(c);
  return row != nullptr ? row->exit_code : kExitHang;
}

bool isDivergence(VerdictClass c) {
  const ClassRow* row = rowOf(c);
  return row != nullptr && row->divergence;
}

bool namesOnlyCulprits(VerdictClass c) {
  const ClassRow* row = rowOf(c);
  return row != nullptr && row->names_only_culprits;
}

EvidenceOp evidenceOpOf(const format::RankData& rank, const format::EventRecord& e,
                        const CallSites& sites) {
  return evidenceOpOf(e, callSiteOf(rank, e, sites));
}

EvidenceOp evidenceOpOf(const format::EventRecord& e, CallSite site) {
  EvidenceOp o;
  o.seq = e.op_seq;
  o.op = e.op;
  o.count = e.count;
  o.dtype = e.dtype;
  o.redop = e.redop;
  o.root = format::hasRoot(e.op) ? e.peer() : -1;
  o.state = e.state;
  o.result = e.result;
  o.site = std::move(site);
  return o;
}

std::string formatRanks(const std::vector<int>& ranks) { return base::numberRanges(ranks); }

}  // namespace ncclrec::analyzer

namespace ncclrec::analyzer {

std::string ranksWord(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + formatRanks(ranks);
}

std::string shortCommId(uint64_t comm_id) { return base::shortHex(comm_id); }

}  // namespace ncclrec::analyzer
