// The headlines of a stream that stopped while its peers wait for it, when the stopped rank is
// not gone (headlines.h stopHeadline has the exits, crashes and stops): its own NCCL call failed
// (nccl_error), it is still inside an op its peers got through (undecided), it is blocked in
// another communicator (rank_blocked_elsewhere), in host code (rank_stuck_in_host), or at the
// end of a chain of such waits, where the rank that ends it is named. The words, from the verdict
// (culprits, communicator, op, sequence number, call site) and the facts below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/headlines.h"
#include "analyzer/headlines_liveness.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer {

// Where the ranks that wait for the culprits are: `waiters` wait (or failed) in `op` (op,
// sequence number) of the culprits' communicator.
struct Waiters {
  std::vector<int> ranks;
  format::OpType op = format::OpType::kUnknown;
  uint64_t seq = 0;
  bool failed = false;  // they failed in it rather than wait
};

// nccl_error, the culprits' last NCCL call failed with an error of its own (the verdict's op and
// call site; `waiters` in the verdict's sequence number): "rank 3: ncclAllReduce on comm c0ffee00
// from f() a.cc:3 returned NCCL error 4 (invalid argument), then it exited; ranks 0-2 wait for it
// in ncclAllReduce #6".
struct OwnError {
  enum class Then { kExited, kDied, kNotRunning, kNothingSince };
  uint64_t comm_id = 0;  // the failed call's communicator (0: none)
  int result = 0;
  Then then = Then::kNothingSince;
};
std::string ownErrorHeadline(const Verdict& v, const OwnError& e, const Waiters& w);

// undecided, the culprits still inside the verdict's op (op, sequence number, communicator, call
// site), which the others got through: "rank 3 waits in ncclAllReduce #6 on comm c0ffee00 from
// f() a.cc:3, which ranks 0-2 got through: they wait in ncclAllReduce #7; the ranks agree on every
// op before it", and its missing-evidence line. `inside` are the ranks still in it (the verdict
// names no culprit).
std::string stillInsideHeadline(const Verdict& v, const std::vector<int>& inside, const Waiters& w);
std::string stillInsideMissing(const Verdict& v, const std::vector<int>& inside);

// Where a rank that another waits for in a collective is, as "; there it waits for rank 3, in
// host code: its last NCCL op ...": the ranks of that communicator that have not issued it and,
// when one, how it stands.
struct ThereWaitsFor {
  enum class How {
    kNone,     // nobody: no phrase
    kSeveral,  // several ranks: the list only
    kExited,   // ", which exited"
    kCrashed,  // ", which crashed (SIGSEGV)": `signal`
    kDied,     // ", which died without an exit mark"
    kBlocked,  // ", itself blocked in ncclBroadcast #3 on comm beef0000": `blocked_in`
    kInHost,   // ", in host code: its last NCCL op ...": `last`
  };
  How how = How::kNone;
  std::vector<int> ranks;
  int signal = 0;
  OpOn blocked_in;  // op and sequence number, on its communicator
  LastOp last;
};
std::string thereWaitsForPhrase(const ThereWaitsFor& t);

// rank_blocked_elsewhere: the culprits (the verdict's ranks) are blocked in `blocked_in` on another
// communicator (the verdict's call site is that op's), while the waiters wait for them in the
// verdict's op and sequence number on the verdict's communicator: "rank 1 is blocked in
// ncclBroadcast #3 on comm beef0000 from g() b.cc:9 while ranks 0,2 wait for it in ncclAllReduce #6
// on comm c0ffee00; there it waits for rank 3, ...".
std::string blockedElsewhereHeadline(const Verdict& v, const OpOn& blocked_in, const Waiters& w,
                                     const ThereWaitsFor& there);

// rank_stuck_in_host: "rank 3 is alive but stuck in host code: its last NCCL op (...) completed
// 2.3s ago; ranks 0-2 wait in ncclAllReduce #6".
std::string stuckInHostHeadline(const Verdict& v, const LastOp& last, const Waiters& w);

// One link of a chain of waits: global rank `rank` waits in `in` for stream rank `waits_for`
// (global rank `waits_for_rank`).
struct ChainStep {
  int rank = -1;
  OpOn in;
  size_t waits_for = 0;
  int waits_for_rank = -1;
};
// "; rank 1 waits for it in ncclBroadcast #3 on comm beef0000 from g() b.cc:9; ranks 0,2 wait
// for rank 1 in ncclAllReduce #6 on comm c0ffee00 from f() a.cc:3": the links from the culprit
// (stream rank `culprit`, "it"; SIZE_MAX: none is) outward, then where the first waiters are:
// `waiters` wait for `waited` in `outer`.
std::string chainPhrase(const std::vector<ChainStep>& outermost_first, size_t culprit,
                        const std::vector<int>& waiters, const std::vector<int>& waited,
                        const OpOn& outer);

// How the rank at the end of a chain of waits stands: "rank 3 exited: ", "rank 3 stopped running
// (<why>): ", "rank 3 crashed (SIGSEGV): ", "rank 3 died without an exit mark (...): ", "rank 3 is
// alive but stuck in host code: ", then its last op.
struct ChainEnd {
  enum class How { kExited, kNotRunning, kCrashed, kDied, kInHost };
  How how = How::kInHost;
  NotRunning why;
  int signal = 0;
  LastOp last;
};
// The verdict is the end's rank; `chain` from chainPhrase.
std::string chainEndHeadline(const Verdict& v, const ChainEnd& end, const std::string& chain);

}  // namespace ncclrec::analyzer
