// A rank in the reader's model (format/model.h: a dump, a black box read whole, or one
// an agent sent) as ncclrec-top's entry: its last kRecentOps events, its communicators, the
// stacks those events use and its transport counters.
#pragma once

#include <cstdint>

#include "format/model.h"
#include "live/snapshot.h"

namespace ncclrec::live {

// Liveness from the marks only (exited, crashed, else alive); the caller knows better when it
// can see the process. `shift_ns` is added to every timestamp (another host's clock offset).
RankEntry entryFromRankData(const format::RankData& data, int64_t shift_ns = 0);

// One recorded call as ncclrec-top's op: the one conversion for a live black box's slot
// (bbox_watch.cc, through format::eventFieldsOf) and a rank read whole (entryFromRankData).
// `shift_ns` as above; a zero timestamp (not reached) stays zero.
OpView opViewOf(const format::EventFields& f, int64_t shift_ns = 0);

}  // namespace ncclrec::live
