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
// `kernel` false: the operation is launched (Coll/P2p start) but its channel never starts
// (HOSTNCCL_STALL_KERNEL).
OpEvents opStart(const OpArgs& a, bool kernel = true);
void opDone(const OpArgs& a, OpEvents& e, bool ok);

// The Coll event of the collective running on this thread (set by runProfiled around it), the
// parent of its transport events; nullptr when none.
void* currentOp();
struct CurrentOpScope {
  explicit CurrentOpScope(void* op);
  ~CurrentOpScope();
  CurrentOpScope(const CurrentOpScope&) = delete;
  CurrentOpScope& operator=(const CurrentOpScope&) = delete;

 private:
  void* saved_;
};

// The transport events of an operation's messages, as NCCL's proxy raises them: one ProxyOp per
// (peer, direction) under the operation's Coll/P2p event `op`, with the number of messages it
// will carry (nSteps; hostnccl has one channel, 0); one ProxyStep per message: SendWait once a
// send is handed to Gloo, RecvGPUWait once a receive's data is in, stopped when the message
// completed. Each returns nullptr (and later calls ignore it) when the plugin did not ask for them.
void* proxyOpStart(Comm& c, void* op, int peer, bool isSend, int nSteps, size_t chunkBytes);
void* proxyStepStart(Comm& c, void* proxyOp, int step);
void proxyStepMoved(void* step, bool isSend);
void proxyStop(void* handle);

}  // namespace ncclrec::hostnccl::prof
