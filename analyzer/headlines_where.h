// What every verdict's headline ends with, after its family's words (headlines*.h): where the
// ranks that wait for the culprits are (blame.cc addWaiting), and where the culprits are now, from
// their threads' stacks (whereabouts.cc addWhereabouts). The words, from the verdict and the
// facts below.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/verdict.h"

namespace ncclrec::analyzer {

// A group of waiting ranks at one place: the op they wait (or failed) in, its sequence number (0:
// a communicator's creation) and communicator, and its call site.
struct WaitPlace {
  std::vector<int> ranks;  // ascending
  uint64_t comm_id = 0;
  uint64_t seq = 0;
  format::OpType op = format::OpType::kUnknown;
  bool failed = false;
  CallSite site;
};

// "; ranks 0-2 wait for it in #6 from f() a.cc:3, rank 3 in ncclBroadcast #2 on comm beef0000
// from g() b.cc:9": the verdict's waiting ranks at each place, ordered by their lowest rank; the
// verdict's own op goes without its name and communicator. With no places (none known, or too
// many to name): "; ranks 0-3 wait for it"; nothing when no rank waits.
std::string waitingPhrase(const Verdict& v, const std::vector<WaitPlace>& places);

// Where a culprit is now, from its dump's thread snapshot: "; rank 3 is now in f() a.cc:3 (main
// thread 4242, sleeping in read), 2.0 s after its last NCCL call".
struct RankNow {
  int rank = -1;
  std::optional<CallSite> where;    // its innermost user frame; none: "at an unknown place"
  std::string thread;               // the thread and what it does, as the thread list says it
  int64_t since_last_call_ns = -1;  // -1: not known
};
std::string nowPhrase(const RankNow& n);

}  // namespace ncclrec::analyzer
