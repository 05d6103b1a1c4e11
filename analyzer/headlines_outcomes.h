// The headlines of the verdicts that name no rank that broke the program's order: no hang
// (no_hang), a rank the others keep waiting for without a hang (slow_rank), a call that failed
// with nothing left pending (nccl_error), and every recorded rank waiting in one op with nothing
// to tell the transport from the device (undecided). The words, from the verdict (culprits,
// communicator, op, sequence number, call site) and the facts below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/verdict.h"

namespace ncclrec::analyzer {

// "no hang: every recorded collective completed (16 ops on 1 communicator across 4 ranks)".
struct Completed {
  size_t ops = 0;
  size_t comms = 0;
  size_t ranks = 0;
};
std::string noHangHeadline(const Completed& c);

// slow_rank (the verdict: the rank, its communicator): "no hang, but rank 2 was the last to issue
// 30 of 40 collectives (75%) on comm c0ffee00: the others wait for it (1.20 s, 80% of all their
// waiting, 40% of 3.00 s)".
struct SlowShare {
  size_t last = 0;    // the collectives it was the last to issue
  size_t full = 0;    // of those every member completed
  double waited = 0;  // how long the others waited for it, ns
  double total = 0;   // how long they waited for anyone, ns
  double span = 0;    // from the first enqueue to the last, ns (0: no waiting told)
};
std::string slowRankHeadline(const Verdict& v, const SlowShare& l);

// nccl_error, a call that failed with nothing pending after it (the verdict: the rank, the call,
// its sequence number (0: none) and communicator (0: none), its call site): "rank 2: ncclAllReduce
// #3 on comm c0ffee00 from f() a.cc:3 returned NCCL error 6".
std::string failedCallHeadline(const Verdict& v, int result);

// undecided, every recorded rank in the verdict's op: "ranks 0-3 wait in ncclAllReduce #6 on comm
// c0ffee00 and agree on every op before it; no data for rank 4", and the missing-evidence line.
std::string allWaitHeadline(const Verdict& v, const std::vector<int>& present,
                            const std::vector<int>& no_data);
std::string allWaitMissing(const std::vector<int>& no_data);

}  // namespace ncclrec::analyzer
