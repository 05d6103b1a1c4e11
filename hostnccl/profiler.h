// Drives an NCCL profiler plugin (include/nccl_profiler.h) the way NCCL 2.28 does, so a plugin
// (libncclrec.so among them) can be tested end to end without GPUs.
//
// NCCL_PROFILER_PLUGIN, read at the first communicator init of the process (one plugin per
// process, as in NCCL): unset, "" or "none": no plugin; "STATIC_PLUGIN": the symbols are looked
// up in the global scope (a preloaded library can serve); anything else is dlopen'ed as given,
// then as libnccl-profiler-<value>.so. ncclProfiler_v6 is asked for first, then ncclProfiler_v5.
// A plugin that cannot be loaded, or whose init fails, is reported once on stderr and the
// communicator runs without it; a plugin whose event callbacks fail is reported once and no
// longer called.
//
// Which thread calls what: commInit/commFinalize run on the thread creating/destroying the
// communicator; the *Api events on the thread calling the NCCL API; opStart/opDone on whichever
// thread runs the operation (the caller, or a background thread for nonblocking communicators
// and multi-communicator groups).
#pragma once

#include <cstdint>

#include "hostnccl/collectives.h"
#include "hostnccl/comm.h"

namespace ncclrec::hostnccl::prof {

// Loads the plugin (first call only) and calls its init for `c`.
void commInit(Comm& c);
// Calls finalize for `c` if its init succeeded.
void commFinalize(Comm& c);

// The API events of one call on the calling thread: apiStart starts the GroupApi event (unless
// one is open on this thread) and the CollApi/P2pApi event, whose handle goes into a.profApi;
// apiStop stops the latter. `userDepth` is the depth of the user's open groups.
void apiStart(OpArgs& a, int userDepth);
void apiStop(const OpArgs& a);
// The outermost group end on this thread: entered (GroupEndApiStart), and done (GroupApi stop).
void groupEndEnter();
void groupDone();

// The progress events of one operation: Coll/P2p start plus its one KernelCh-like channel when
// the operation starts running; at the end, the channel stops (with the KernelChStop state only
// if the data moved, `ok`) and then the Coll/P2p event.
struct OpEvents {
  void* op = nullptr;
  void* channel = nullptr;
};
OpEvents opStart(const OpArgs& a);
void opDone(const OpArgs& a, OpEvents& e, bool ok);

}  // namespace ncclrec::hostnccl::prof
