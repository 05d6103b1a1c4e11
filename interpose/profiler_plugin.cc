// libncclrec.so as NCCL's profiler plugin (NCCL >= 2.28, profiler API v5 and v6; the ABI is
// third_party/nccl/nccl_profiler.h). Plugin-only mode: NCCL_PROFILER_PLUGIN=/path/libncclrec.so
// with no LD_PRELOAD records every collective and point-to-point op of programs the shim cannot
// see (NCCL linked statically, or reached in ways a preload misses).
//
//   init            the recorder starts (first time) and the communicator is registered under
//                   NCCL's commId (equal on all ranks); a kCommInitRank event marks it
//   CollApi/P2pApi  the op is recorded (Recorder::begin, deferred): call stack and Python frames
//                   of the calling thread, which is inside the user's NCCL call
//   GroupApi        groups of depth > 1 (the user's) mark their ops kEventInGroup
//   Coll/P2p start  the op runs (kStarted); nChannels says how many KernelCh events to expect
//   KernelCh start  a kernel channel runs on the GPU: counted in the communicator's kernel record
//                   (format/bbox_links.h), which the Coll/P2p start told the op and its channels
//   KernelCh stop   with the KernelChStop state: one channel done; failed without it
//   completion      the Coll/P2p event stopped and all its channels stopped (NCCL stops Coll at
//                   enqueue, hostnccl after the data moved: either order); with no channel
//                   (nChannels 0, or no KernelCh in the mask) the Coll/P2p stop completes it
//   ProxyOp         the op's transport on one (channel, peer, direction): its link record in the
//                   black box (format/bbox_links.h) is found or claimed, and told the op and nSteps
//   ProxyStep       start: a step posted; SendWait, RecvFlushWait or RecvGPUWait: its data moved
//                   (handed to the network, or arrived); stop: done (and moved, if not yet)
//   finalize        the communicator is marked destroyed
//
// Under LD_PRELOAD the wrappers record every call. A CollApi/P2pApi event raised inside a wrapper
// (CurrentCall) is not recorded a second time: the plugin takes over that op's completion instead
// (the wrapper's ring slot travels here through the thread-local CurrentCall), unless CUDA
// markers already time it. NCCLREC_COMPLETION=profiler makes the shim select itself
// (NCCL_PROFILER_PLUGIN=STATIC_PLUGIN, when the user chose no plugin) before NCCL's first init,
// and turns CUDA markers off. NCCLREC_COMPLETION=auto with a CUDA driver selects it likewise and
// splits the work op by op (CallHandle::arbiter): the plugin completes the ops NCCL starts with
// kernel channels, and the wrapper records its one end marker for the others, after the call:
// the Coll/P2p start of a lone call runs inside it on the calling thread, so the wrapper knows
// then, at no driver call, whether a marker is needed.
//
// Record path (everything but init/finalize): no allocation, lock or log. Ops live in a fixed
// pool reused round-robin; an op still in flight when the pool wraps (kPoolSize later ops) is
// no longer followed and stays incomplete in the record.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "format/bbox_layout.h"
#include "format/bbox_links.h"
#include "format/op_type.h"
#include "interpose/call.h"
#include "recorder/clock.h"
#include "recorder/log.h"
#include "third_party/nccl/nccl_profiler.h"

namespace {

using ncclrec::format::OpType;
using ncclrec::recorder::CallHandle;
using ncclrec::recorder::Recorder;

// What a handle we return points at: its first member says which kind of event it is.
enum class Kind : uint8_t { kGroup, kApi, kTask, kChannel, kProxyOp, kProxyStep, kIgnored };

struct Op;
struct Tag {
  Kind kind;
  Op* op;
};

struct Op {
  Tag api{Kind::kApi, this};
  Tag task{Kind::kTask, this};
  Tag channel{Kind::kChannel, this};
  CallHandle call;
  bool from_shim = false;  // recorded by a wrapper: its peer and sequence number are known
  // The black box's comm table index, set at the task's start (the caller's thread, or NCCL's
  // progress thread) and read by the proxy thread's events.
  std::atomic<uint32_t> comm_index{ncclrec::format::kNoComm};
  // Its communicator's kernel record (format/bbox_links.h), when the black box keeps a link table
  // and the op runs kernel channels: set at the task's start, read by the channels' events.
  std::atomic<ncclrec::format::LinkRecord*> kernel{nullptr};
  std::atomic<int> channels_expected{0};
  std::atomic<int> channels_stopped{0};
  std::atomic<int> channels_ok{0};  // stopped with the KernelChStop state (the work was done)
  std::atomic<bool> task_stopped{false};
  std::atomic<bool> done{false};
  // NCCLREC_COMPLETION=auto with CUDA markers: the op's completer is decided through this word
  // (CallHandle::arbiter); the plugin completes it only when it took it (kOwnerPlugin).
  bool arbitrated = false;
  std::atomic<uint8_t> owner{ncclrec::recorder::kOwnerUndecided};
};

constexpr uint32_t kPoolSize = 8192;  // power of two

// A ProxyOp or ProxyStep event: the connection's link record, and for a step whether its data
// was seen moving. Reused round-robin like ops, from two pools: a proxy op lives as long as its
// op (a long one raises thousands of steps meanwhile), a step only while it is in flight.
struct ProxyTag {
  Tag tag{Kind::kProxyStep, nullptr};  // first: the handle NCCL holds is &tag
  std::atomic<bool> moved{false};
  ncclrec::format::LinkRecord* link = nullptr;
};
constexpr uint32_t kProxyPoolSize = 16384;  // power of two, each pool
ProxyTag gProxyOpPool[kProxyPoolSize];
ProxyTag gProxyStepPool[kProxyPoolSize];
std::atomic<uint64_t> gProxyOpNext{0};
std::atomic<uint64_t> gProxyStepNext{0};

// Whether NCCL has reported a kernel channel done in this process (NCCLREC_COMPLETION=auto). Until
// then the plugin takes no op from the wrapper's marker: an NCCL whose kernel channels never
// report (a proxy that feeds no kernel events, an unexpected event mask) must not leave every op
// waiting for stops that never come. Set once, read per op with one relaxed load.
std::atomic<bool> gKernelChannelsReport{false};
Op gPool[kPoolSize];
std::atomic<uint64_t> gNext{0};
Tag gGroupOuter{Kind::kGroup, nullptr};   // NCCL's implicit group of a lone call
Tag gGroupUser{Kind::kGroup, nullptr};    // a user's ncclGroupStart/End
Tag gGroupShim{Kind::kIgnored, nullptr};  // a group the wrappers already track
Tag gIgnored{Kind::kIgnored, nullptr};

// One per communicator (the plugin context); also the handle the recorder files it under.
struct PluginComm {
  uint64_t comm_id;
  int rank;
  int nranks;
  bool shim;                   // the wrappers registered it (and record its life cycle)
  PluginComm* next = nullptr;  // every one ever made (gAllComms)
  // Its kernel record in the black box's link table (format/bbox_links.h), claimed at its first
  // launched op.
  std::atomic<ncclrec::format::LinkRecord*> kernel{nullptr};
};

// Contexts outlive their communicator (the comm table may still name one, as a dead handle), so
// they are never freed: kept on one list, reachable, not leaked (once per communicator init).
std::atomic<PluginComm*> gAllComms{nullptr};

void keep(PluginComm* comm) {
  PluginComm* head = gAllComms.load(std::memory_order_relaxed);
  do {
    comm->next = head;
  } while (!gAllComms.compare_exchange_weak(head, comm, std::memory_order_release,
                                            std::memory_order_relaxed));
}

// Set by the communicator-creating wrappers: the shim is preloaded and registers communicators
// itself, so init must not register them a second time.
std::atomic<bool> gShimCreatesComms{false};

OpType opOf(const char* func) {
  char name[40] = "nccl";
  if (func == nullptr || std::strlen(func) > sizeof(name) - 5) return OpType::kUnknown;
  std::strcpy(name + 4, func);
  return ncclrec::format::opFromName(name);
}

int dtypeOf(const char* name) {
  static const char* const kNames[] = {"ncclInt8",     "ncclUint8",      "ncclInt32",
                                       "ncclUint32",   "ncclInt64",      "ncclUint64",
                                       "ncclFloat16",  "ncclFloat32",    "ncclFloat64",
                                       "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  for (int i = 0; i < 12; ++i) {
    if (name != nullptr && std::strcmp(name, kNames[i]) == 0) return i;
  }
  return -1;
}

void finish(Op* op) {
  if (op->arbitrated && op->owner.load() != ncclrec::recorder::kOwnerPlugin) return;
  if (op->done.exchange(true)) return;
  const int result =
      op->channels_ok.load() < op->channels_stopped.load() ? ncclInternalError : ncclSuccess;
  if (Recorder* r = Recorder::get()) r->opCompleted(op->call, result);
}

// Completion rule (file comment): called after each stop of the op's task or channels.
void maybeFinish(Op* op) {
  if (!op->task_stopped.load()) return;
  if (op->channels_stopped.load() >= op->channels_expected.load()) finish(op);
}

// The API event of one op: recorded now, on the calling thread (the user's call is on the stack).
Op* claimOp() {
  Op* op = &gPool[gNext.fetch_add(1, std::memory_order_relaxed) & (kPoolSize - 1)];
  op->channels_expected.store(0, std::memory_order_relaxed);
  op->channels_stopped.store(0, std::memory_order_relaxed);
  op->channels_ok.store(0, std::memory_order_relaxed);
  op->task_stopped.store(false, std::memory_order_relaxed);
  op->done.store(false, std::memory_order_relaxed);
  op->arbitrated = false;
  op->owner.store(ncclrec::recorder::kOwnerUndecided, std::memory_order_relaxed);
  op->comm_index.store(ncclrec::format::kNoComm, std::memory_order_relaxed);
  op->kernel.store(nullptr, std::memory_order_relaxed);
  return op;
}

// An API event inside a wrapper: the op is the wrapper's; its completion becomes ours, or, with
// NCCLREC_COMPLETION=auto and CUDA markers at hand, ours only if NCCL runs it with kernel channels
// (startTask); the wrapper's end marker times it otherwise, so ops NCCL gives no KernelCh events
// (1-rank communicators, symmetric kernels, copy-engine collectives) are still timed on the GPU.
void* adoptShimCall(Recorder* r) {
  CallHandle* shim = ncclrec::interpose::CurrentCall::get();
  if (shim == nullptr || shim->slot == nullptr) return &gIgnored;
  const bool arbitrate = r->arbitratesCompletion();
  if (shim->timed_by_cuda && !arbitrate) return &gIgnored;
  Op* op = claimOp();
  op->call = *shim;
  op->from_shim = true;
  op->arbitrated = arbitrate;
  if (arbitrate) shim->arbiter = &op->owner;
  shim->profiler_completes = true;
  Recorder::addEventFlags(op->call, ncclrec::format::kEventProfilerTimed);
  return &op->api;
}

__attribute__((always_inline)) inline void* startApi(PluginComm* comm, const ncclProfDescr& d) {
  Recorder* r = Recorder::get();
  if (r == nullptr) return &gIgnored;
  if (ncclrec::interpose::ReentryGuard::depth() > 0) return adoptShimCall(r);
  const bool coll = d.type == ncclProfCollApi;
  ncclrec::recorder::OpArgs a;
  a.op = opOf(coll ? d.collApi.func : d.p2pApi.func);
  if (a.op == OpType::kUnknown) return &gIgnored;
  a.comm = comm;
  a.count = coll ? d.collApi.count : d.p2pApi.count;
  a.dtype = dtypeOf(coll ? d.collApi.datatype : d.p2pApi.datatype);
  a.stream = coll ? d.collApi.stream : d.p2pApi.stream;
  a.peer = coll ? (ncclrec::format::hasRoot(a.op) ? d.collApi.root : -1) : -1;
  a.deferred = true;
  // The peer of a send/recv is only in the P2p event (at the group's launch): filled in there.
  Op* op = claimOp();
  op->from_shim = false;
  op->call = r->begin(a, ncclrec::interpose::kShimFrames);
  uint32_t flags = ncclrec::format::kEventProfilerTimed;
  if (coll ? d.collApi.graphCaptured : d.p2pApi.graphCaptured)
    flags |= ncclrec::format::kEventGraphCaptured;
  Recorder::addEventFlags(op->call, flags);
  return &op->api;
}

Op* opOfParent(void* parent) {
  auto* tag = static_cast<Tag*>(parent);
  return tag != nullptr && tag->kind == Kind::kApi ? tag->op : nullptr;
}

// The communicator's kernel record, claimed once per context (a hash probe saved per op). The
// record's key is written before it is published, so the cached one is checked against the op's
// comm index.
ncclrec::format::LinkRecord* kernelRecord(PluginComm* comm, Recorder* r, uint32_t comm_index) {
  ncclrec::format::LinkRecord* k =
      comm != nullptr ? comm->kernel.load(std::memory_order_acquire) : nullptr;
  if (k != nullptr && k->comm_index == comm_index) return k;
  k = ncclrec::format::findOrClaimKernelRecord(r->header(), comm_index);
  if (comm != nullptr && k != nullptr) comm->kernel.store(k, std::memory_order_release);
  return k;
}

void* startTask(PluginComm* comm, const ncclProfDescr& d) {
  Op* op = opOfParent(d.parentObj);
  if (op == nullptr) return &gIgnored;
  const int channels = d.type == ncclProfColl ? d.coll.nChannels : d.p2p.nChannels;
  op->channels_expected.store(channels, std::memory_order_relaxed);
  if (op->arbitrated && channels > 0 && gKernelChannelsReport.load(std::memory_order_relaxed)) {
    // The kernel's channels will report the op's progress: the wrapper's marker is not needed,
    // unless the wrapper already decided for it.
    uint8_t undecided = ncclrec::recorder::kOwnerUndecided;
    op->owner.compare_exchange_strong(undecided, ncclrec::recorder::kOwnerPlugin);
  }
  if (d.type == ncclProfP2p && !op->from_shim) Recorder::setP2pPeer(op->call, d.p2p.peer);
  const uint32_t comm_index = Recorder::commIndexOf(op->call);
  op->comm_index.store(comm_index, std::memory_order_release);
  const int64_t now = ncclrec::recorder::realtimeNs();
  Recorder* r = Recorder::get();
  if (channels > 0 && r != nullptr && comm_index != ncclrec::format::kNoComm &&
      op->call.slot != nullptr) {
    // Launched: its kernel channels are expected to start on the GPU.
    if (ncclrec::format::LinkRecord* k = kernelRecord(comm, r, comm_index)) {
      // The coarse clock, as the channels' start and stop: cheap, and the three in order.
      ncclrec::format::kernelOpLaunched(k, op->call.index, channels,
                                        ncclrec::recorder::coarseRealtimeNs());
      op->kernel.store(k, std::memory_order_release);
    }
  }
  Recorder::opStarted(op->call, now);
  return &op->task;
}

ProxyTag* claimProxyTag(Kind kind, ncclrec::format::LinkRecord* link) {
  const bool op = kind == Kind::kProxyOp;
  const uint64_t n = (op ? gProxyOpNext : gProxyStepNext).fetch_add(1, std::memory_order_relaxed);
  ProxyTag* t = &(op ? gProxyOpPool : gProxyStepPool)[n & (kProxyPoolSize - 1)];
  t->tag.kind = kind;
  t->link = link;
  t->moved.store(false, std::memory_order_relaxed);
  return t;
}

ProxyTag* proxyTagOf(Tag* tag) { return reinterpret_cast<ProxyTag*>(tag); }

// A proxy operation of an op we follow: its connection's counters learn the op and its steps.
void* startProxyOp(const ncclProfDescr& d) {
  auto* tag = static_cast<Tag*>(d.parentObj);
  if (tag == nullptr || tag->kind != Kind::kTask) return &gIgnored;
  Recorder* r = Recorder::get();
  const uint32_t comm_index = tag->op->comm_index.load(std::memory_order_acquire);
  if (r == nullptr || comm_index == ncclrec::format::kNoComm) return &gIgnored;
  ncclrec::format::LinkRecord* link = ncclrec::format::findOrClaimLink(
      r->header(), comm_index, d.proxyOp.channelId, d.proxyOp.peer, d.proxyOp.isSend != 0);
  if (link == nullptr) return &gIgnored;
  ncclrec::format::linkOpStarted(
      link, tag->op->call.slot != nullptr ? tag->op->call.index : ncclrec::format::kNoLinkOp,
      d.proxyOp.nSteps, ncclrec::recorder::realtimeNs());
  return &claimProxyTag(Kind::kProxyOp, link)->tag;
}

void* startProxyStep(const ncclProfDescr& d) {
  auto* parent = static_cast<Tag*>(d.parentObj);
  if (parent == nullptr || parent->kind != Kind::kProxyOp) return &gIgnored;
  ncclrec::format::LinkRecord* link = proxyTagOf(parent)->link;
  ncclrec::format::linkStepPosted(link, ncclrec::recorder::coarseRealtimeNs());
  return &claimProxyTag(Kind::kProxyStep, link)->tag;
}

// NCCL's proxy step states (profiler v4-v6): the step's data handed to the network, or arrived.
constexpr ncclProfState kProxyStepSendWait = 9;
constexpr ncclProfState kProxyStepRecvFlushWait = 11;
constexpr ncclProfState kProxyStepRecvGPUWait = 12;

// A step's events come from the thread that progresses its connection: a plain test and set.
void stepMoved(ProxyTag* step) {
  if (!step->moved.load(std::memory_order_relaxed)) {
    step->moved.store(true, std::memory_order_relaxed);
    ncclrec::format::linkStepMoved(step->link, ncclrec::recorder::coarseRealtimeNs());
  }
}

// The events asked for at every init; the proxy's when the black box keeps a link table.
constexpr int kMask = ncclProfGroupApi | ncclProfCollApi | ncclProfP2pApi | ncclProfColl |
                      ncclProfP2p | ncclProfKernelCh;
constexpr int kProxyMask = ncclProfProxyOp | ncclProfProxyStep;

ncclResult_t pluginInit(void** context, uint64_t comm_id, int* mask, const char* name,
                        int /*nnodes*/, int nranks, int rank, ncclProfLogFn /*log*/) {
  *context = nullptr;
  *mask = 0;
  Recorder* r = Recorder::get();
  if (r == nullptr) return ncclSuccess;  // disabled, or said why once: NCCL runs unprofiled
  const bool shim = gShimCreatesComms.load();
  auto* comm = new (std::nothrow) PluginComm{comm_id, rank, nranks, shim};
  if (comm == nullptr) return ncclSuccess;
  keep(comm);
  *mask = kMask | (r->header()->link_capacity > 0 ? kProxyMask : 0);
  *context = comm;
  if (shim) return ncclSuccess;
  ncclrec::recorder::OpArgs creator;
  creator.op = OpType::kCommInitRank;
  creator.comm_id = comm_id;
  creator.aux64 = comm_id;
  creator.rank = rank;
  creator.nranks = nranks;
  CallHandle call = r->begin(creator, ncclrec::interpose::kShimFrames);
  ncclrec::recorder::CreationArgs args;
  args.name = name != nullptr && *name ? name : nullptr;
  r->commCreated(comm, creator, call, args, ncclSuccess, r->identifyDevice(-1, nullptr),
                 ncclrec::format::kNoComm);
  r->end(call, ncclSuccess);
  return ncclSuccess;
}

ncclResult_t pluginStart(void* context, void** handle, ncclProfDescr* d) {
  *handle = &gIgnored;
  if (context == nullptr || d == nullptr) return ncclSuccess;
  switch (d->type) {
    case ncclProfGroupApi:
      if (ncclrec::interpose::ReentryGuard::depth() > 0) {
        *handle = &gGroupShim;
      } else if (d->groupApi.groupDepth > 1) {
        if (Recorder* r = Recorder::get()) r->groupStarted();
        *handle = &gGroupUser;
      } else {
        *handle = &gGroupOuter;
      }
      break;
    case ncclProfCollApi:
    case ncclProfP2pApi:
      *handle = startApi(static_cast<PluginComm*>(context), *d);
      break;
    case ncclProfColl:
    case ncclProfP2p:
      *handle = startTask(static_cast<PluginComm*>(context), *d);
      break;
    case ncclProfKernelCh:
      if (auto* tag = static_cast<Tag*>(d->parentObj); tag != nullptr && tag->kind == Kind::kTask) {
        *handle = &tag->op->channel;
        if (auto* k = tag->op->kernel.load(std::memory_order_acquire))
          ncclrec::format::kernelChannelStarted(k, ncclrec::recorder::coarseRealtimeNs());
      }
      break;
    case ncclProfProxyOp:
      *handle = startProxyOp(*d);
      break;
    case ncclProfProxyStep:
      *handle = startProxyStep(*d);
      break;
    default:
      break;
  }
  return ncclSuccess;
}

ncclResult_t pluginStop(void* handle) {
  auto* tag = static_cast<Tag*>(handle);
  if (tag == nullptr) return ncclSuccess;
  switch (tag->kind) {
    case Kind::kGroup:
      if (tag == &gGroupUser) {
        if (Recorder* r = Recorder::get()) r->groupEnded(ncclSuccess, false);
      }
      break;
    case Kind::kTask:
      tag->op->task_stopped.store(true);
      maybeFinish(tag->op);
      break;
    case Kind::kChannel:
      if (auto* k = tag->op->kernel.load(std::memory_order_acquire))
        ncclrec::format::kernelChannelStopped(k, ncclrec::recorder::coarseRealtimeNs());
      tag->op->channels_stopped.fetch_add(1);
      maybeFinish(tag->op);
      break;
    case Kind::kProxyStep: {
      ProxyTag* step = proxyTagOf(tag);
      stepMoved(step);
      ncclrec::format::linkStepDone(step->link, ncclrec::recorder::coarseRealtimeNs());
      break;
    }
    default:
      break;
  }
  return ncclSuccess;
}

ncclResult_t pluginState(void* handle, ncclProfState state, ncclProfStateArgs* /*args*/) {
  auto* tag = static_cast<Tag*>(handle);
  if (tag != nullptr && tag->kind == Kind::kProxyStep &&
      (state == kProxyStepSendWait || state == kProxyStepRecvFlushWait ||
       state == kProxyStepRecvGPUWait)) {
    stepMoved(proxyTagOf(tag));
    return ncclSuccess;
  }
  if (tag != nullptr && tag->kind == Kind::kChannel && state == ncclProfStateKernelChStop) {
    tag->op->channels_ok.fetch_add(1);
    if (!gKernelChannelsReport.load(std::memory_order_relaxed)) {
      gKernelChannelsReport.store(true, std::memory_order_relaxed);
    }
  }
  return ncclSuccess;
}

ncclResult_t pluginFinalize(void* context) {
  auto* comm = static_cast<PluginComm*>(context);
  if (comm == nullptr || comm->shim) return ncclSuccess;
  if (Recorder* r = Recorder::get()) r->commEnded(comm, ncclrec::format::kCommDestroyed);
  // The PluginComm stays allocated: the comm table may still name it (as a dead handle).
  return ncclSuccess;
}

}  // namespace

void ncclrec::interpose::selectProfilerPlugin() {
  gShimCreatesComms.store(true);
  static std::atomic<bool> done{false};
  if (done.load(std::memory_order_acquire) || done.exchange(true)) return;
  Recorder* r = Recorder::get();
  if (r == nullptr) return;
  const bool profiler = r->params().completion == ncclrec::recorder::CompletionChoice::kProfiler;
  if (!profiler && !r->arbitratesCompletion()) return;
  const char* why = profiler ? "NCCLREC_COMPLETION=profiler" : "NCCLREC_COMPLETION=auto";
  const char* chosen = std::getenv("NCCL_PROFILER_PLUGIN");
  if (chosen == nullptr || *chosen == '\0') {
    // Read by NCCL at this first init, on this thread: no other thread reads it concurrently
    // unless the program itself races NCCL inits, which NCCL does not support either.
    setenv("NCCL_PROFILER_PLUGIN", "STATIC_PLUGIN", 1);
    NCCLREC_INFO(kLogInit, "%s: NCCL_PROFILER_PLUGIN=STATIC_PLUGIN (libncclrec.so)", why);
  } else if (std::strcmp(chosen, "none") == 0) {
    NCCLREC_INFO(kLogInit, "%s with NCCL_PROFILER_PLUGIN=none: ops complete %s", why,
                 profiler ? "when their call returns" : "by CUDA markers");
  } else if (std::strcmp(chosen, "STATIC_PLUGIN") != 0 &&
             std::strstr(chosen, "ncclrec") == nullptr) {
    NCCLREC_WARN(kLogInit, "%s but NCCL_PROFILER_PLUGIN=%s is the user's: ops complete %s", why,
                 chosen, profiler ? "when their call returns" : "by CUDA markers");
  }
}

NCCLREC_EXPORT ncclProfPlugin ncclProfiler_v5 = {"ncclrec",  pluginInit,  pluginStart,
                                                 pluginStop, pluginState, pluginFinalize};
NCCLREC_EXPORT ncclProfPlugin ncclProfiler_v6 = {"ncclrec",  pluginInit,  pluginStart,
                                                 pluginStop, pluginState, pluginFinalize};
