// Creating and ending communicators: unique ids, init, split, shrink.
#pragma once

#include "hostnccl/comm.h"
#include "hostnccl/device.h"
#include "third_party/nccl/nccl.h"

namespace ncclrec::hostnccl {

// Starts this process's rendezvous service if needed and mints an id naming it.
ncclResult_t getUniqueId(ncclUniqueId* id);

// Joins the communicator `id` names; blocks until all `nranks` ranks joined (or HOSTNCCL_TIMEOUT).
// Fails with ncclInvalidUsage when another rank of the same host is on the same device.
ncclResult_t initRank(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank,
                      const Placement& placement);

// The same for a nonblocking communicator (ncclConfig_t::blocking = 0): *out is usable at once,
// the join runs in the background and the call returns ncclInProgress (async.h).
ncclResult_t initRankNonblocking(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank,
                                 const Placement& placement);

ncclResult_t initAll(ncclComm_t* comms, int ndev, const int* devlist);

// Collective over `parent`. Ranks passing NCCL_SPLIT_NOCOLOR get *out = nullptr.
ncclResult_t split(Comm& parent, int color, int key, ncclComm_t* out);

// Called by the ranks that stay; needs nothing from the excluded ranks nor from the parent's
// connections (they may be dead), only the rendezvous addresses learned at the parent's init.
ncclResult_t shrink(Comm& parent, const int* exclude, int excludeCount, ncclComm_t* out, int flags);

}  // namespace ncclrec::hostnccl
