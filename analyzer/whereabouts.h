// Where a rank is now, from the thread snapshot its latest dump or black box carries
// (recorder/thread_snapshot.h): every thread's stack, native and Python. diagnose() calls
// addWhereabouts() last, so that the headlines of the verdicts about a rank that stopped calling
// NCCL (rank_stuck_in_host, rank_blocked_elsewhere, undecided) name where that rank is and how
// long after its last NCCL call, and the report lists every thread of those ranks.
// `ncclrec-analyze --stacks` prints every rank's threads, identical stacks across ranks collapsed.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "analyzer/callsite.h"
#include "analyzer/verdict.h"
#include "format/reader.h"

namespace ncclrec::analyzer {

// Where one thread is: the innermost user frame of its stack (Python frames outside library
// layers and the standard library, else native frames outside system and NCCL libraries), named
// with the names other ranks' dumps give black boxes.
struct ThreadPlace {
  CallSite site;      // site.frame: the user frame; unknown when the thread has no frames
  std::string doing;  // "running", "sleeping in clock_nanosleep", "no answer (signal blocked), S"
};
ThreadPlace placeOf(const format::ThreadState& thread, const CallSites& sites);

// The thread of `rank` that issues its NCCL calls (the caller of its last recorded call), else
// its main thread, else its first; nullptr without a snapshot.
const format::ThreadState* ncclThreadOf(const format::RankData& rank);

// Appends to the headline of a verdict about stopped ranks where each culprit is and how long
// after its last NCCL call ("; rank 2 is now in load_shard() data.py:81 (thread 4242 python3,
// running), 42.0 s after its last NCCL call"), and fills v.threads with the culprits' threads.
// Nothing for other classes or ranks without a snapshot.
void addWhereabouts(const format::LoadedSet& set, const CallSites& sites, Verdict& v);

// The report's section on v.threads ("threads of rank 2 ..."); nothing when empty.
void printThreadsText(const Verdict& v, std::ostream& out);

// Adds "threads" (each with its frames) to the entries of the JSON "ranks" array whose "rank" has
// threads in v.threads; a rank with threads but no entry gets one.
void addThreadsJson(const Verdict& v, nlohmann::ordered_json& ranks);

// `ncclrec-analyze --stacks`: every rank's threads, threads with the same stack on several ranks
// printed once ("ranks 0-6,8-15: ..."), groups held by fewer ranks first (the odd one out).
void printStacks(const format::LoadedSet& set, const CallSites& sites, std::ostream& out);

}  // namespace ncclrec::analyzer
