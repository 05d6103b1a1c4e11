// The names of the live library (live/) that ncclrec-top draws, taken into ncclrec::tui so the
// drawing code reads as before; everything here is defined in live/.
#pragma once

#include "live/analysis.h"
#include "live/snapshot.h"

namespace ncclrec::tui {

using live::ageSeconds;
using live::CommGroup;
using live::CommMember;
using live::CommView;
using live::focusOp;
using live::focusStackRows;
using live::JobSummary;
using live::kThreadsKept;
using live::listedThreads;
using live::Liveness;
using live::livenessName;
using live::OpView;
using live::RankEntry;
using live::RankHistory;
using live::rankKey;
using live::RankStatus;
using live::Snapshot;
using live::StackMap;
using live::stackOf;
using live::symbolKey;
using live::SymbolTable;
using live::ThreadsView;

}  // namespace ncclrec::tui
