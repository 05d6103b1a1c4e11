#include "analyzer/verdict.h"

#include <cstdio>

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
  }
  return "unknown";
}

std::string_view verdictClassName(VerdictClass c) {
  switch (c) {
    case VerdictClass::kNoHang:
      return "no_hang";
    case VerdictClass::kUndecided:
      return "undecided";
    case VerdictClass::kRankGatedCollective:
      return "rank_gated_collective";
    case VerdictClass::kSkippedCollective:
      return "skipped_collective";
    case VerdictClass::kOpMismatch:
      return "op_mismatch";
    case VerdictClass::kSizeMismatch:
      return "size_mismatch";
    case VerdictClass::kDtypeMismatch:
      return "dtype_mismatch";
    case VerdictClass::kRedopMismatch:
      return "redop_mismatch";
    case VerdictClass::kRootMismatch:
      return "root_mismatch";
    case VerdictClass::kRankExited:
      return "rank_exited";
    case VerdictClass::kRankCrashed:
      return "rank_crashed";
    case VerdictClass::kRankStuckInHost:
      return "rank_stuck_in_host";
    case VerdictClass::kRankBlockedElsewhere:
      return "rank_blocked_elsewhere";
    case VerdictClass::kCrossCommDeadlock:
      return "cross_comm_deadlock";
    case VerdictClass::kNcclError:
      return "nccl_error";
    case VerdictClass::kP2pMismatch:
      return "p2p_mismatch";
    case VerdictClass::kSlowRank:
      return "slow_rank";
    case VerdictClass::kDeviceCollision:
      return "device_collision";
    case VerdictClass::kCommAborted:
      return "comm_aborted";
    case VerdictClass::kCommDestroyed:
      return "comm_destroyed";
    case VerdictClass::kCommMemberMissing:
      return "comm_member_missing";
    case VerdictClass::kCommIdMismatch:
      return "comm_id_mismatch";
    case VerdictClass::kCommInitMismatch:
      return "comm_init_mismatch";
    case VerdictClass::kBootstrapStuck:
      return "bootstrap_stuck";
  }
  return "unknown";
}

int exitCodeFor(VerdictClass c) {
  switch (c) {
    case VerdictClass::kNoHang:
    case VerdictClass::kSlowRank:
      return kExitOk;
    case VerdictClass::kUndecided:
      return kExitUndecided;
    default:
      return kExitHang;
  }
}

EvidenceOp evidenceOpOf(const format::RankData& rank, const format::EventRecord& e,
                        const CallSites& sites) {
  EvidenceOp o;
  o.seq = e.op_seq;
  o.op = e.op;
  o.count = e.count;
  o.dtype = e.dtype;
  o.redop = e.redop;
  o.root = format::hasRoot(e.op) ? e.peer() : -1;
  o.state = e.state;
  o.result = e.result;
  o.site = callSiteOf(rank, e, sites);
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
