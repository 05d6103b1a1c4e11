// The headlines of the op-order verdicts (rank_gated_collective, skipped_collective and the five
// mismatches), of the ranks that stopped between ops (rank_exited, rank_crashed, rank_not_running,
// from a stream that ended, or with nothing pending while its peers' calls then failed), of the
// sends and receives that do not pair (p2p_mismatch), of a rank gone while its peer waits in a
// send or receive, and of the communicator calls that left others waiting (comm_aborted,
// comm_destroyed, a split not every member called, a group that left a peer out), and of a wait
// cycle across communicators (cross_comm_deadlock): the one place their English is written. Each is
// made from the verdict its rule filled (class, culprits, communicator, op, sequence number, call
// site: the fields the JSON gives) and from what the other ranks did instead, so that the headline
// cannot name another op, rank or place than the JSON does. blame.h then appends where the waiting
// ranks are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/headlines_liveness.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer {

// What the ranks that did not deviate did where the culprits deviated, or what the culprits did
// after: the part of an op-order finding that the Verdict's fields do not hold.
struct Instead {
  enum class Kind {
    // alone: "; ranks 0,3 issued ncclBroadcast from f() a.cc:3 as their #7"
    kOthersIssued,
    // alone: "; ranks 0,3 issued no collective there"
    kOthersIssuedNone,
    // alone, where the others' streams end: "; ranks 0,3 issued no collective there after #6
    // and went no further on it"
    kOthersWentNoFurther,
    // alone, on a communicator the others never used: "; ranks 0,3 never issued a collective
    // on it (one destroyed it when done)"
    kOthersNeverUsedIt,
    // skipped: "; it issued ncclBroadcast from f() a.cc:3 instead"
    kCulpritsIssued,
    // skipped, into a send or receive: "; it went on to ncclSend #2 with rank 1 from f() a.cc:3,
    // which its peers reach only after it"
    kCulpritWentOnToP2p,
    // a mismatch: the op the others passed in the same slot
    kOthersPassed,
    // alone, in a wait cycle across communicators, before the op its peers wait in: " before
    // ncclBroadcast #3 on comm beef0000 from f() a.cc:3 that ranks 1,2 issued; there it waits in
    // <the verdict's op> for ranks 1,2, which wait for it on comm beef0000"
    kBeforeTheirs,
    // skipped, in a wait cycle: ", or put it off: it waits in ncclAllReduce #4 on comm c0ffee00
    // from g() b.cc:9 for rank 1, which waits for it on comm beef0000"
    kOrPutOff,
  };
  Kind kind = Kind::kOthersIssuedNone;
  std::vector<int> others;  // the ranks that did not deviate, ascending
  EvidenceOp op;            // the op issued instead (all kinds but kOthersIssuedNone, -NoFurther,
                            // -NeverUsedIt); in a wait cycle, the culprit's other op
  int peer = -1;            // kCulpritWentOnToP2p: the rank it sends to or receives from
  // In a wait cycle: `op`'s communicator, the ranks the culprit waits for, and whether they all
  // wait for it in the op it did not issue.
  uint64_t comm_id = 0;
  std::vector<int> waits_for;
  bool they_wait_for_it = false;

  static Instead of(Kind kind, std::vector<int> others, EvidenceOp op = {}, int peer = -1) {
    Instead i;
    i.kind = kind;
    i.others = std::move(others);
    i.op = std::move(op);
    i.peer = peer;
    return i;
  }
};

// rank_gated_collective: "rank 0 alone (rank == 0) issued ncclAllReduce #7 on comm c0ffee00
// from saveCheckpoint() train.cc:33; ranks 1-3 issued ..."; `all` is every rank of the
// communicator, for the condition that picks the culprits out (none when empty).
std::string aloneHeadline(const Verdict& v, const std::vector<int>& all, const Instead& instead);

// skipped_collective: "rank 3 skipped ncclAllReduce #6 on comm c0ffee00 from logLoss()
// train.cc:40 that ranks 0-2 issued; it issued ncclBroadcast from ... instead".
std::string skippedHeadline(const Verdict& v, const Instead& instead);

// op_, size_, dtype_, redop_ and root_mismatch: "ncclAllReduce #6 on comm c0ffee00: rank 3 passes
// count 64, ranks 0-2 pass 4096 (float32) (f() a.cc:3 vs g() b.cc:9)"; `mine` is the culprits'
// op, `instead.op` the others' (kOthersPassed); `same_site` when both come from one place.
std::string mismatchHeadline(const Verdict& v, const EvidenceOp& mine, const Instead& instead,
                             bool same_site);

// The mismatch class of the culprits' op `mine` against the others' `theirs` in one slot, by the
// first argument that differs (op, count, datatype, reduction, root); none when none does.
std::optional<VerdictClass> mismatchOf(const EvidenceOp& mine, const EvidenceOp& theirs);

// How the culprits' stream of a communicator ended while the others wait in the next op: the
// part of a stopped-rank finding that the Verdict's fields (the culprits, the op the others wait
// in) do not hold.
struct Stop {
  enum class How {
    kExited,      // "rank 3 exited"
    kCrashed,     // "rank 3 crashed (SIGSEGV)": `signal`
    kDiedUnseen,  // no exit mark, and its peers lost the connection to it
    kDiedSilent,  // no exit mark, heartbeat stopped `silent_ns` before the newest recording
    kNotRunning,  // its process is there, not running: `why`
  };
  How how = How::kExited;
  int signal = 0;
  int64_t silent_ns = 0;
  NotRunning why;
  uint64_t same = 0;     // ops like the one the others wait in that the culprits issued
  CallSite waited_site;  // where the others issued theirs
  std::vector<int> others;
  bool others_failed = false;  // the others' op failed (`result`) rather than waits
  int result = 0;
};

// "rank 3 exited after 99 all-reduces from train_step(); ranks 0-2 are in their 100th".
std::string stopHeadline(const Verdict& v, const Stop& stop);

// What one side of a send/receive pair posted to its peer on a communicator: how many calls, and
// the last of them when there is one.
struct P2pTally {
  uint64_t n = 0;
  uint64_t last_seq = 0;
  CallSite last_site;
};

// An op that a headline names besides the verdict's own: its op, sequence number, count,
// datatype, state, result and call site, on `comm_id`.
struct OpOn {
  EvidenceOp op;
  uint64_t comm_id = 0;
};
// "ncclSend #5 on comm c0ffee00 from f() a.cc:3".
std::string callAtPhrase(const OpOn& c);

// p2p_mismatch, a wait no call of the peer matches: "rank 1's ncclRecv #4 from rank 2 on comm
// c0ffee00 from f() a.cc:3 has no matching ncclSend: rank 2 posted 3 ncclSends to rank 1 (the
// last, #3, from g() b.cc:9)". The verdict is the waiting op; `theirs` what `peer` posted to it.
std::string p2pUnmatchedHeadline(const Verdict& v, int peer, const P2pTally& theirs);

// p2p_mismatch, a pair whose counts differ: "<the wait, as above> moves 64 float32; rank 2's
// matching ncclSend from g() b.cc:9 moves 128 float32". `mine` is the waiting op, `theirs` the
// peer's.
std::string p2pCountHeadline(const Verdict& v, int peer, const EvidenceOp& mine,
                             const EvidenceOp& theirs);

// p2p_mismatch, a loop one call short (the verdict's site is the loop's): "rank 2 posted one
// ncclSend fewer from f() a.cc:3 than its loop does, so its next, ncclSend #5 on comm c0ffee00
// from g() b.cc:9 (64 float32), met ncclRecv #5 on comm c0ffee00 from h() c.cc:1 (128 float32)".
std::string p2pShortRunHeadline(const Verdict& v, const OpOn& next, const OpOn& met);

// p2p_mismatch, a relay that dropped a send (the verdict's op is the send it never posted):
// "rank 2 completed 6 ncclRecvs from ranks 0,1 but posted 2 ncclSends to rank 3 on comm
// c0ffee00 (the last, #2, from f() a.cc:3)". With `paired_with`, the verdict's site is the one
// whose sends paired with the waiter's receives from that site in the earlier steps, not that of
// the last send: "(those for g() b.cc:9 from f() a.cc:3)".
std::string p2pRelayHeadline(const Verdict& v, uint64_t received, const std::vector<int>& sources,
                             int waiter, const P2pTally& sent,
                             const std::optional<CallSite>& paired_with = std::nullopt);

// p2p_mismatch, the side of a pair that posted fewer (the verdict's op is the first call it never
// posted): "rank 2 posted 3 ncclSends to rank 1 on comm c0ffee00 (the last, #3, from f() a.cc:3)
// but rank 1 posted 4 ncclRecvs from it (the other pairs of the communicator moved up to 4)".
struct P2pShortfall {
  int waiter = -1;
  P2pTally posted;      // the culprit's calls to the waiter (the verdict's op)
  uint64_t waited = 0;  // the waiter's calls to the culprit
  // The verdict's site is the one whose calls paired with the waiter's from `paired_with` in the
  // earlier steps, not that of the last call: "(those for g() b.cc:9 from f() a.cc:3)".
  bool by_role = false;
  CallSite paired_with;
  std::optional<size_t> others_moved;  // how far the communicator's other pairs got
};
std::string p2pShortfallHeadline(const Verdict& v, const P2pShortfall& s);

// A rank's newest collective or send/receive (newestCommOp), as a stop headline tells it.
struct LastOp {
  bool any = false;        // false: "its last NCCL op never came"
  EvidenceOp op;           // op, sequence number, call site
  bool completed = false;  // then `ago_ns` before the newest recording
  int64_t ago_ns = 0;
};

// "its last NCCL op (ncclBroadcast #2 from main() main.cc:52) completed 2.3s ago".
std::string lastOpPhrase(const LastOp& last);

// A rank that stopped while another waits for it in a send or receive (p2p_stop), or that left
// with nothing pending before its peers' calls failed (leavers): how, and its last op.
struct Gone {
  enum class How {
    kExited,   // "exited"
    kCrashed,  // "crashed (SIGSEGV)": `signal`
    kDied,     // no exit mark, dead by the recordings
    kInHost,   // alive, in host code
  };
  How how = How::kExited;
  int signal = 0;
  LastOp last;
};

// p2p_stop, the verdict being the gone rank with the waiting send or receive (op, sequence
// number, communicator): "rank 2 exited without ending the communicator: its last NCCL op (...);
// rank 1 waits in its ncclRecv #4 from rank 2 on comm c0ffee00 from f() a.cc:3", or "... rank 1
// failed in its ... (NCCL error 6)" when `failed` with `result`.
std::string peerGoneHeadline(const Verdict& v, const Gone& gone, int waiter,
                             const CallSite& waited_site, bool failed, int result);

// leavers, the verdict being the rank that left with the first call that failed for it (op,
// sequence number, communicator): "rank 2 exited with nothing pending: its last NCCL op (...);
// ranks 0-1 then failed (NCCL error 6: the peer was gone), ncclAllReduce #4 on comm c0ffee00
// first".
std::string leftFirstHeadline(const Verdict& v, const Gone& gone, const std::vector<int>& victims,
                              int result);

// comm_aborted, comm_destroyed (the verdict: the rank, its abort or destroy and its call site):
// "rank 1 destroyed comm c0ffee00 (ncclCommDestroy from f() a.cc:3) after its ncclAllReduce #4
// from g() b.cc:9 and went on (ncclAllReduce on comm beef0000 from h() c.cc:1); ranks 0,2 issued
// ncclAllReduce #5 from g() b.cc:9 on it and wait in it".
struct CommEnd {
  std::optional<OpOn> last;     // its last collective on it; none: "before any collective on it"
  std::optional<OpOn> went_on;  // after a destroy, its first NCCL op
  std::vector<int> others;      // the ranks that issued `theirs` on it
  OpOn theirs;                  // its state and result tell how they stand in it
};
std::string commEndHeadline(const Verdict& v, const CommEnd& end);

// A split that not every member of the communicator called (the verdict: the split's
// communicator and call site; skipped_collective when the callers are more, the skippers named,
// else rank_gated_collective, the callers named): "rank 3 skipped ncclCommSplit of comm c0ffee00
// from f() a.cc:3 that ranks 0-2 called after collective #4; it issued ncclAllReduce #5 from
// g() b.cc:9 instead", "rank 0 alone (rank == 0) called ncclCommSplit of comm ...; ranks 1-3
// issued ... instead".
struct SplitTaken {
  std::vector<int> callers, skippers, all;  // ascending
  uint64_t after_seq = 0;                   // the collective the callers called it after (0: none)
  OpOn instead;                             // what the first skipper issued instead
};
std::string partialSplitHeadline(const Verdict& v, const SplitTaken& s);

// p2p_mismatch, a group of sends and receives that left a peer out (the verdict: the rank that
// left it out, the call it did not post, the group's call site): "rank 2 left rank 1 out of its
// grouped sends and receives #4 on comm c0ffee00 from f() a.cc:3: that group posts to rank 0
// only, while rank 1's group #4 waits in ncclSend #4 to rank 2".
struct GroupLeftOut {
  int left = -1;                  // the rank left out
  uint64_t group = 0;             // the groups' number, from 1
  std::vector<int> posts_to;      // the peers the culprit's group posts to
  std::vector<EvidenceOp> waits;  // the left-out rank's pending calls with the culprit
};
std::string groupLeftOutHeadline(const Verdict& v, const GroupLeftOut& g);

// cross_comm_deadlock (the verdict: the ranks of the cycle): "ranks 0-1 deadlock across
// communicators: rank 0 waits in ncclAllReduce #3 on comm c0ffee00 from f() a.cc:3 for rank 1,
// which waits in ncclBroadcast #2 on comm beef0000 from g() b.cc:9 for rank 0". One step per rank
// of the cycle, in its order.
struct CycleStep {
  int rank = -1;
  OpOn waits_in;
  int waits_for = -1;
};
std::string deadlockHeadline(const Verdict& v, const std::vector<CycleStep>& cycle);

}  // namespace ncclrec::analyzer
