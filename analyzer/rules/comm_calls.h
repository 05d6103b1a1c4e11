// What one rank did on one communicator, for the rules about calls around the slots
// (early_comm_end, partial_split): its collectives past a point, where it went
// on, whether it holds the communicator at all.
#pragma once

#include <cstdint>
#include <string>

#include "analyzer/callsite.h"
#include "format/reader.h"

namespace ncclrec::analyzer {

// A collective with a slot on a communicator that NCCL took (not rejected).
bool countedCollective(const format::EventRecord& e);
// A rank's earliest collective on `comm` past `seq`, or nullptr.
const format::EventRecord* firstPast(const format::RankData& r, uint64_t comm, uint64_t seq);
// Where a rank that skipped a split of `comm` went on: its first collective on `comm` past
// collective #seq, else the first op it issued after reaching that collective that never
// completed (pending or failed): point-to-point work on `comm`, or work on a communicator of its
// own later split (its one split paired with the others' earlier one); or its end of `comm`
// itself (destroyed or finalized there: it finished without the split;
// LifecycleRulesTest.ASkipperThatDestroyedTheParentAndLeftIsNamed); or nullptr.
const format::EventRecord* wentOnPast(const format::RankData& r, uint64_t comm, uint64_t seq);
// Whether the rank created, recorded or issued anything on `comm`.
bool holdsComm(const format::RankData& r, uint64_t comm);

}  // namespace ncclrec::analyzer
