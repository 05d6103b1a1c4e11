// The headlines of the op-order verdicts (rank_gated_collective, skipped_collective and the five
// mismatches) and of the ranks that stopped between ops (rank_exited, rank_crashed,
// rank_not_running, from a stream that ended): the one place their English is written. Each is made
// from the verdict its rule filled (class, culprits, communicator, op, sequence number, call site:
// the fields the JSON gives) and from what the other ranks did instead, so that the headline cannot
// name another op, rank or place than the JSON does. blame.h then appends where the waiting ranks
// are.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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
// first argument that differs (op, count, datatype, reduction, root); kNoHang when none does.
VerdictClass mismatchOf(const EvidenceOp& mine, const EvidenceOp& theirs);

// How the culprits' stream of a communicator ended while the others wait in the next op: the
// part of a stopped-rank finding that the Verdict's fields (the culprits, the op the others wait
// in) do not hold.
struct Stop {
  enum class How {
    kExited,      // "rank 3 exited"
    kCrashed,     // "rank 3 crashed (SIGSEGV)": `signal`
    kDiedUnseen,  // no exit mark, and its peers lost the connection to it
    kDiedSilent,  // no exit mark, heartbeat stopped `silent_ns` before the newest recording
    kNotRunning,  // its process is there, not running: `why` (phrases.h notRunningPhrase)
  };
  How how = How::kExited;
  int signal = 0;
  int64_t silent_ns = 0;
  std::string why;
  uint64_t same = 0;     // ops like the one the others wait in that the culprits issued
  CallSite waited_site;  // where the others issued theirs
  std::vector<int> others;
  bool others_failed = false;  // the others' op failed (`result`) rather than waits
  int result = 0;
};

// "rank 3 exited after 99 all-reduces from train_step(); ranks 0-2 are in their 100th".
std::string stopHeadline(const Verdict& v, const Stop& stop);

}  // namespace ncclrec::analyzer
