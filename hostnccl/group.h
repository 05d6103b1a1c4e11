// ncclGroupStart/ncclGroupEnd: operations issued inside a group are queued per thread and run
// together at the outermost ncclGroupEnd, as NCCL requires for point-to-point patterns.
#pragma once

#include "hostnccl/collectives.h"
#include "third_party/nccl/nccl.h"

namespace ncclrec::hostnccl {

ncclResult_t groupStart();
ncclResult_t groupEnd();
// Ends the group without running what it queued (ncclGroupSimulateEnd).
ncclResult_t groupDiscard();

// Queues `a` when a group is open on this thread; otherwise runs it now, blocking.
ncclResult_t submit(const OpArgs& a);

}  // namespace ncclrec::hostnccl
