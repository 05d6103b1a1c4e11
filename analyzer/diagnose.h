// The alignment engine: per communicator, each rank's ordered stream of collectives (failed calls
// left out), compared like a diff on (op, call site, shape) to find and classify the first
// divergence: an op only some ranks issued (insertion: a gated collective), an op some ranks
// skipped (deletion), the same slot with different arguments (substitution: a mismatch), or a
// stream that stopped (truncation: the rank exited, crashed, is blocked on another communicator
// or is stuck in host code). Never throws on any recording.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/callsite.h"
#include "analyzer/verdict.h"
#include "format/reader.h"

namespace ncclrec::analyzer {

struct DiagnoseOptions {
  // A rank with no exit mark whose last sign of life (heartbeat, dump) is this much older than
  // the newest one of the job is taken for dead (killed, SIGKILL).
  int64_t stale_heartbeat_ns = 2'000'000'000;
  // Patterns of Python library layers added to the defaults (site_rule.h, --library-frames).
  std::vector<std::string> library_frames;
};

Verdict diagnose(const format::LoadedSet& set, const DiagnoseOptions& options = {});
// With the call sites already learnt from set.ranks (CallSites, callsite.h), shared with the other
// outputs of one analysis (--trace).
Verdict diagnose(const format::LoadedSet& set, const DiagnoseOptions& options,
                 const CallSites& sites);

}  // namespace ncclrec::analyzer
