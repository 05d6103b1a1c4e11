// What one recorded call, and one rank's list of calls, say to the verdict rules: pending, refused,
// failed because a peer was gone, and a rank's newest call of a kind. The one definition the rules
// share (diagnose.cc, truncation.cc, leavers.cc, p2p_blame.cc, p2p_stop.cc, rules/,
// blame.cc, evidence.cc). Pure functions over format's records.
#pragma once

#include <vector>

#include "format/nccl_result.h"
#include "format/reader.h"

namespace ncclrec::analyzer {

// Enqueued or started: the call has not completed (of a record, or of the state an EvidenceOp
// keeps).
inline bool isIncomplete(format::EventState s) {
  return s == format::EventState::kEnqueued || s == format::EventState::kStarted;
}
inline bool isIncomplete(const format::EventRecord& e) { return isIncomplete(e.state); }

// The call a send or receive pairs with: ncclRecv for ncclSend, ncclSend for ncclRecv.
inline format::OpType counterpartOf(format::OpType op) {
  return op == format::OpType::kSend ? format::OpType::kRecv : format::OpType::kSend;
}

// A call NCCL refused before issuing it (bad argument or usage) never pairs with anything; one
// that failed after issuing (a peer vanished, a system error) holds its slot in the stream.
inline bool rejected(const format::EventRecord& e) {
  return e.state == format::EventState::kFailed &&
         (e.result == format::kNcclInvalidArgument || e.result == format::kNcclInvalidUsage);
}

// An op the job is stuck in or stopped at.
inline bool unfinished(const format::EventRecord& e) {
  return isIncomplete(e) || e.state == format::EventState::kFailed;
}

// Failed because a peer vanished (NCCL's remote or system error): the op waited for it, the
// symptom of another rank's stop, not a cause.
inline bool lostPeer(const format::EventRecord& e) {
  return e.state == format::EventState::kFailed &&
         (e.result == format::kNcclRemoteError || e.result == format::kNcclSystemError);
}

// A collective or a point-to-point call.
inline bool isCommOp(const format::EventRecord& e) {
  return format::isCollective(e.op) || format::isP2p(e.op);
}

// A call that talks to peers: a collective, a send or receive, a communicator's life cycle
// (init, split, destroy, abort...) or the ncclGroupEnd that issues a group.
inline bool talksToPeers(const format::EventRecord& e) {
  return isCommOp(e) || format::isCommLifecycle(e.op) || e.op == format::OpType::kGroupEnd;
}

// The rank's newest collective or point-to-point call (issue order), nullptr when it made none.
const format::EventRecord* newestCommOp(const format::RankData& r);

// The rank's newest collective or point-to-point call still pending, nullptr when none.
const format::EventRecord* newestPendingCommOp(const format::RankData& r);

// The calls the rank waits in: newestPendingCommOp() and, when it was issued in a group, every
// collective or send/receive of that group (since the ncclGroupStart that opened it, same thread)
// still pending, in issue order; a group ends only when all of them do. Empty when none pends.
std::vector<const format::EventRecord*> pendingGroupOps(const format::RankData& r);

// The rank's newest call that creates a communicator (format::isCommCreation) still pending,
// nullptr when none.
const format::EventRecord* newestPendingCreation(const format::RankData& r);

// The rank's newest call that talks to peers (talksToPeers()), nullptr when none.
const format::EventRecord* newestPeerCall(const format::RankData& r);

}  // namespace ncclrec::analyzer
