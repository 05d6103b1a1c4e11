#include "recorder/recorder.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "format/bbox_ring.h"
#include "format/nccl_result.h"
#include "format/version.h"
#include "recorder/clock.h"
#include "recorder/cuda_completion.h"
#include "recorder/dump_client.h"
#include "recorder/log.h"
#include "recorder/modules.h"
#include "recorder/python_frames.h"
#include "recorder/signals.h"
#include "recorder/stacks.h"
#include "recorder/thread_snapshot.h"
#include "recorder/watchdog.h"

namespace ncclrec::recorder {
namespace {

using format::atomicField;
using format::EventState;
using format::OpType;

enum InitState : int { kUninit = 0, kReady = 1, kOff = 2 };

std::atomic<int> g_state{kUninit};
std::atomic<Recorder*> g_recorder{nullptr};
pthread_mutex_t g_init_mutex = PTHREAD_MUTEX_INITIALIZER;
bool g_process_hooks_installed = false;  // under g_init_mutex

constexpr uint32_t kMaxGroupOps = 4096;
using format::acceptedResult;
using format::kNcclInProgress;

// Ops issued inside ncclGroupStart/End on this thread: they run at the outermost GroupEnd, so
// their completion is decided there. Allocated at the thread's first GroupStart (TLS stays small
// for the many threads of processes that never group).
struct GroupState {
  uint32_t depth = 0;
  uint32_t count = 0;
  struct Pending {
    uint64_t index;
    format::Event* slot;
    const void* stream;
    int32_t ticket;
    CommState* comm;
    std::atomic<uint8_t>* arbiter;
    bool creates;  // a communicator's creation, deferred by NCCL to the group's end
  } pending[kMaxGroupOps];
};

thread_local GroupState* tls_group __attribute__((tls_model("initial-exec"))) = nullptr;
thread_local uint32_t tls_tid __attribute__((tls_model("initial-exec"))) = 0;

bool takesStream(OpType op) { return format::isCollective(op) || format::isP2p(op); }

void exitHandler() {
  Recorder* r = g_recorder.load(std::memory_order_acquire);
  if (r != nullptr) r->shutdown();
}

void atforkPrepare() { pthread_mutex_lock(&g_init_mutex); }
void atforkParent() { pthread_mutex_unlock(&g_init_mutex); }
void atforkChild() {
  // The child must never write into the parent's black box, and has none of its threads. The old
  // recorder is abandoned (leaked: its destructor would join a thread that does not exist here).
  Recorder* r = g_recorder.exchange(nullptr, std::memory_order_acq_rel);
  forgetSignalTargets();
  if (r != nullptr) r->abandonForChild();  // leaked on purpose
  g_state.store(kUninit, std::memory_order_release);
  tls_tid = 0;
  pthread_mutex_unlock(&g_init_mutex);
}

}  // namespace

uint32_t currentTid() {
  if (tls_tid == 0) tls_tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return tls_tid;
}

Recorder* createRecorder() {
  std::vector<std::string> problems;
  Params params = readParams(&problems);
  logConfig().level.store(params.log_level, std::memory_order_relaxed);
  logConfig().subsys.store(params.log_subsys, std::memory_order_relaxed);
  NCCLREC_INFO(kLogInit, "libncclrec.so %s", format::versionString());
  for (const std::string& p : problems) NCCLREC_WARN(kLogInit, "%s", p.c_str());
  if (params.disable) {
    NCCLREC_INFO(kLogInit, "NCCLREC_DISABLE is set: recording nothing");
    return nullptr;
  }
  auto* r = new Recorder();
  r->params_ = std::move(params);
  std::string error;
  if (!r->init(&error)) {
    NCCLREC_WARN(kLogInit, "cannot record (%s); NCCL calls pass through unrecorded", error.c_str());
    delete r;
    return nullptr;
  }
  return r;
}

Recorder* Recorder::get() {
  const int state = g_state.load(std::memory_order_acquire);
  if (state == kReady) return g_recorder.load(std::memory_order_relaxed);
  if (state == kOff) return nullptr;
  pthread_mutex_lock(&g_init_mutex);
  if (g_state.load(std::memory_order_relaxed) == kUninit) {
    if (!g_process_hooks_installed) {
      g_process_hooks_installed = true;
      pthread_atfork(atforkPrepare, atforkParent, atforkChild);
      atexit(exitHandler);
    }
    Recorder* r = createRecorder();
    g_recorder.store(r, std::memory_order_release);
    g_state.store(r != nullptr ? kReady : kOff, std::memory_order_release);
  }
  pthread_mutex_unlock(&g_init_mutex);
  return g_recorder.load(std::memory_order_acquire);
}

bool Recorder::init(std::string* error) {
  PythonRegions regions;
  if (params_.python_depth > 0) {
    std::string why;
    python_ = PythonFrames::detect(&why);
    if (!why.empty())
      NCCLREC_WARN(kLogStack, "no Python frames: %s; native stacks only", why.c_str());
    if (python_) {
      regions.depth = static_cast<uint32_t>(params_.python_depth);
      regions.code_capacity = PythonFrames::kCodeCapacity;
      regions.blob_bytes = PythonFrames::kBlobBytes;
    }
  }
  box_ = BlackBox::create(params_, error, regions);
  if (!box_) return false;
  format::BboxHeader* h = box_->header();
  comms_ = std::make_unique<CommTable>(h, params_.max_comms);
  if (python_ && python_->attach(h)) {
    python_depth_ = params_.python_depth;
    NCCLREC_INFO(kLogStack, "stacks: up to %d Python frames (CPython %u.%u)", python_depth_,
                 python_->version() >> 8, python_->version() & 0xff);
  } else {
    python_.reset();
  }
  if (params_.stack_depth > 0 || params_.snapshot_signal > 0) {
    const char* why = nullptr;
    const auto mode = params_.unwind == UnwindChoice::kLibunwind      ? UnwindMode::kLibunwind
                      : params_.unwind == UnwindChoice::kFramePointer ? UnwindMode::kFramePointer
                                                                      : UnwindMode::kAuto;
    const bool libunwind = initUnwinder(mode, &why);
    if (why != nullptr) NCCLREC_INFO(kLogStack, "stacks: %s", why);
    NCCLREC_INFO(kLogStack, "stacks: %d frames with %s", params_.stack_depth,
                 libunwind ? "libunwind" : "frame pointers");
  }
  if (h->stack_depth > 0) stacks_ = std::make_unique<StackTable>(h);
  writeModuleMap(h);
  // profiler: NCCL's profiler callbacks complete the ops (interpose/profiler_plugin.cc), else
  // the call's return does; no CUDA markers.
  if (params_.completion != CompletionChoice::kHost &&
      params_.completion != CompletionChoice::kProfiler) {
    std::string why;
    const bool full = params_.completion == CompletionChoice::kCudaFull;
    cuda_ = CudaCompletion::create(
        CudaCompletion::kDefaultMaxPending, params_.cuda_library.c_str(), &why,
        full ? CudaCompletion::Markers::kStartAndEnd : CudaCompletion::Markers::kEnd);
    if (!cuda_ && params_.completion != CompletionChoice::kAuto)
      NCCLREC_WARN(kLogCuda, "NCCLREC_COMPLETION=%s but %s: using call return",
                   full ? "cuda-full" : "cuda", why.c_str());
    else if (!cuda_)
      NCCLREC_INFO(kLogCuda, "no CUDA completion tracking (%s): call return = completion",
                   why.c_str());
  }
  arbitrates_ = cuda_ && params_.completion == CompletionChoice::kAuto;
  h->completion_mode = cuda_ ? 1 : 0;
  watchdog_ = std::make_unique<Watchdog>(this);
  if (!watchdog_->start(error)) return false;
  installSignalHandlers(h, watchdog_->wakeFd(), params_.dump_signal, params_.fatal_signals);
  if (h->thread_capacity > 0 && !snapshotsSupported()) {
    NCCLREC_INFO(kLogInit, "no thread snapshots in a ThreadSanitizer build");
  } else if (h->thread_capacity > 0) {
    const SnapshotOptions snapshot{params_.snapshot_signal, params_.snapshot_ms, 64,
                                   python_ ? 64 : 0, python_.get()};
    if (!installSnapshotHandler(snapshot))
      NCCLREC_WARN(kLogInit, "no thread snapshots: cannot handle signal %d", snapshot.signal);
  }
  NCCLREC_INFO(kLogInit, "recording to %s (ring %u events, timeout %.1f s)", box_->path().c_str(),
               params_.ring_capacity, params_.timeout_s);
  return true;
}

void Recorder::abandonForChild() {
  // Leak what holds threads or driver state: the watchdog's std::thread has no thread in the
  // child. Only the mapping is released, so nothing of ours writes to the parent's file.
  if (watchdog_) (void)watchdog_.release();
  if (cuda_) (void)cuda_.release();
  if (box_) box_->abandon();
}

__attribute__((noinline)) CallHandle Recorder::begin(const OpArgs& a, int skip_frames) {
  CallHandle call;
  format::BboxHeader* h = box_->header();
  uint64_t frames[format::kMaxStackDepth];
  // Python frames first (the thread's own, read without the GIL), then native return addresses.
  const int py_depth = python_ ? python_->capture(frames, python_depth_) : 0;
  int native_depth = 0;
  if (stacks_ && params_.stack_depth > 0) {
    native_depth = captureStack(frames + py_depth, params_.stack_depth, skip_frames + 1);
  }
  const int depth = py_depth + native_depth;
  const int64_t now = realtimeNs();

  uint64_t index = 0;
  format::Event* e = format::claimEvent(h, &index);
  CommState* cs = a.comm != nullptr ? comms_->find(a.comm) : nullptr;
  e->comm_id = cs != nullptr ? cs->comm_id : a.comm_id;
  e->comm_index = cs != nullptr ? cs->index : format::kNoComm;
  e->rank = cs != nullptr ? cs->rank : a.rank;
  e->nranks = cs != nullptr ? cs->nranks : a.nranks;
  // The fields a reader loads atomically (readEvent: those set after publication too) are
  // stored atomically, relaxed: a plain mov on x86-64 and AArch64, and ThreadSanitizer sees both
  // sides of a ring wrap that overlaps a reader's copy.
  atomicField(e->device).store(cs != nullptr ? cs->device : -1, std::memory_order_relaxed);
  uint64_t seq = 0;
  if (cs != nullptr) {
    if (format::isCollective(a.op)) {
      seq = atomicField(cs->record->coll_seq).fetch_add(1, std::memory_order_relaxed) + 1;
    } else if (format::isP2p(a.op) && a.peer >= 0 && a.peer < cs->nranks) {
      auto& counters = a.op == OpType::kSend ? cs->send_seq : cs->recv_seq;
      seq = counters[a.peer].fetch_add(1, std::memory_order_relaxed) + 1;
    }
  }
  e->op_seq = seq;
  e->count = a.count;
  e->stream = reinterpret_cast<uintptr_t>(a.stream);
  e->enqueue_ns = now;
  e->stack_id = depth > 0 ? stacks_->intern(frames, depth) : format::kNoStack;
  e->peer = a.peer;
  e->redop = a.redop;
  e->tid = currentTid();
  e->op = static_cast<uint16_t>(a.op);
  e->dtype = a.dtype < 0 ? 0xff : static_cast<uint8_t>(a.dtype);
  const uint32_t group_depth = tls_group != nullptr ? tls_group->depth : 0;
  e->group_depth = static_cast<uint8_t>(group_depth > 255 ? 255 : group_depth);
  e->aux = a.aux;
  e->aux2 = a.aux2;
  atomicField(e->aux64).store(a.aux64, std::memory_order_relaxed);
  uint32_t flags = 0;
  if (group_depth > 0) flags |= format::kEventInGroup;
  if ((native_depth == params_.stack_depth && native_depth > 0) ||
      (py_depth == python_depth_ && py_depth > 0))
    flags |= format::kEventStackTruncated;
  // CUDA markers go around calls that launch work now; grouped ops launch at GroupEnd.
  if (cuda_ && group_depth == 0 && takesStream(a.op) && !a.deferred) {
    call.cuda_ticket = cuda_->beforeCall(const_cast<void*>(a.stream));
    call.timed_by_cuda = call.cuda_ticket >= 0;
  }
  if (call.timed_by_cuda) flags |= format::kEventCudaTimed;
  e->flags = flags;
  atomicField(e->start_ns)
      .store(call.timed_by_cuda || a.deferred ? 0 : now, std::memory_order_relaxed);
  atomicField(e->end_ns).store(0, std::memory_order_relaxed);
  atomicField(e->result).store(0, std::memory_order_relaxed);
  atomicField(e->state).store(static_cast<uint8_t>(EventState::kEnqueued),
                              std::memory_order_relaxed);
  format::publishEvent(e, index);
  call.slot = e;
  call.index = index;
  call.stream = a.stream;
  call.comm = cs;
  return call;
}

void Recorder::setEventAux64(const CallHandle& call, uint64_t value) {
  if (call.slot != nullptr && format::slotHolds(call.slot, call.index))
    atomicField(call.slot->aux64).store(value, std::memory_order_relaxed);
}

void Recorder::setEventDevice(const CallHandle& call, int32_t device) {
  if (call.slot != nullptr && format::slotHolds(call.slot, call.index))
    atomicField(call.slot->device).store(device, std::memory_order_relaxed);
}

void Recorder::addEventFlags(const CallHandle& call, uint32_t flags) {
  if (call.slot != nullptr && format::slotHolds(call.slot, call.index))
    atomicField(call.slot->flags).fetch_or(flags, std::memory_order_relaxed);
}

void Recorder::completeEvent(format::Event* slot, uint64_t index, int result, int64_t now) {
  if (!format::slotHolds(slot, index)) return;  // overwritten by a wrap while in flight
  const bool ok = acceptedResult(result);
  atomicField(slot->result).store(result, std::memory_order_relaxed);
  atomicField(slot->end_ns).store(now, std::memory_order_relaxed);
  atomicField(slot->state)
      .store(static_cast<uint8_t>(ok ? EventState::kCompleted : EventState::kFailed),
             std::memory_order_release);
}

void Recorder::end(CallHandle& call, int result) {
  if (call.slot == nullptr) return;
  format::Event* e = call.slot;
  const bool ok = acceptedResult(result);
  const auto op = static_cast<OpType>(e->op);
  if (call.profiler_completes && ok && call.arbiter == nullptr) {
    if (format::slotHolds(e, call.index))
      atomicField(e->result).store(result, std::memory_order_relaxed);
    return;
  }
  GroupState* g = tls_group;
  const bool creates = format::isCommCreation(op);
  if (ok && g != nullptr && g->depth > 0 && (takesStream(op) || creates)) {
    // Runs at the outermost GroupEnd: stays enqueued until then.
    if (g->count < kMaxGroupOps) {
      g->pending[g->count++] = {call.index, e, call.stream, -1, call.comm, call.arbiter, creates};
      return;
    }
  }
  const int32_t ticket = call.timed_by_cuda ? call.cuda_ticket : -1;
  // A nonblocking communicator's op: NCCL launches it later, from its own thread.
  if (result == kNcclInProgress && (takesStream(op) || creates) &&
      holdInProgress(call.comm, {call.index, e, call.stream, ticket, call.arbiter})) {
    return;
  }
  if ((ok && pluginTakes(call.arbiter, e, call.index, ticket, call.stream)) ||
      (call.timed_by_cuda &&
       cuda_->afterCall(call.cuda_ticket, const_cast<void*>(call.stream), call.index, ok))) {
    // The plugin or the watchdog completes it; only the return code is known now.
    if (format::slotHolds(e, call.index))
      atomicField(e->result).store(result, std::memory_order_relaxed);
    return;
  }
  if (call.timed_by_cuda && format::slotHolds(e, call.index)) {
    // The driver could not take the end marker: fall back to host completion.
    atomicField(e->flags).fetch_and(~format::kEventCudaTimed, std::memory_order_relaxed);
    if (atomicField(e->start_ns).load(std::memory_order_relaxed) == 0)
      atomicField(e->start_ns).store(e->enqueue_ns, std::memory_order_relaxed);
  }
  completeEvent(e, call.index, result, realtimeNs());
  if (!ok) requestDump(format::DumpReason::kNcclError);
}

void Recorder::groupStarted() {
  if (tls_group == nullptr) tls_group = new (std::nothrow) GroupState();
  if (tls_group != nullptr) ++tls_group->depth;
}

bool Recorder::groupEnding() {
  GroupState* g = tls_group;
  if (g == nullptr || g->depth != 1) return false;
  if (cuda_) {
    for (uint32_t i = 0; i < g->count; ++i)
      g->pending[i].ticket = cuda_->beforeCall(const_cast<void*>(g->pending[i].stream));
  }
  return true;
}

bool Recorder::inGroup() {
  const GroupState* g = tls_group;
  return g != nullptr && g->depth > 0;
}

void Recorder::groupEnded(int result, bool simulated) {
  GroupState* g = tls_group;
  if (g == nullptr || g->depth == 0) return;
  if (--g->depth > 0) return;
  const bool ok = acceptedResult(result) && !simulated;
  const int64_t now = realtimeNs();
  for (uint32_t i = 0; i < g->count; ++i) {
    GroupState::Pending& p = g->pending[i];
    const HeldOp held{p.index, p.slot, p.stream, p.ticket, p.arbiter};
    // Launched later by NCCL's thread: the settle decides (in_progress.cc).
    if (result == kNcclInProgress && !simulated && holdInProgress(p.comm, held)) continue;
    if (p.creates && !simulated) comms_->settleCreation(p.comm, ok);
    if (ok && pluginTakes(p.arbiter, p.slot, p.index, p.ticket, p.stream)) continue;
    if (markWithCuda(held, ok)) continue;
    completeEvent(p.slot, p.index, result, now);
  }
  g->count = 0;
  if (!acceptedResult(result)) requestDump(format::DumpReason::kNcclError);
}

void Recorder::requestDump(format::DumpReason reason) {
  if (watchdog_) watchdog_->requestDump(reason);
}

bool Recorder::dumpNow(format::DumpReason reason, const std::string& detail) {
  std::lock_guard<std::mutex> lock(dump_mutex_);
  format::BboxHeader* h = box_->header();
  writeModuleMap(h);  // objects dlopen'ed since the start
  const SnapshotResult snap = takeThreadSnapshot(h, static_cast<uint32_t>(reason));
  if (snap.threads > 0) {
    NCCLREC_INFO(kLogDump, "thread snapshot: %u of %u threads answered in %.1f ms", snap.answered,
                 snap.threads, snap.elapsed_ns / 1e6);
  }
  std::string path, error;
  const bool ok = writeDump(*this, reason, detail, &path, &error);
  if (ok) {
    atomicField(h->dump_count).fetch_add(1, std::memory_order_relaxed);
    atomicField(h->last_dump_reason).store(static_cast<uint32_t>(reason));
    atomicField(h->last_dump_ns).store(realtimeNs());
    NCCLREC_INFO(kLogDump, "dumped (%s) to %s", std::string(dumpReasonName(reason)).c_str(),
                 path.c_str());
  } else {
    NCCLREC_WARN(kLogDump, "dump (%s) failed: %s", std::string(dumpReasonName(reason)).c_str(),
                 error.c_str());
  }
  return ok;
}

uint32_t Recorder::snapshotNow() {
  std::lock_guard<std::mutex> lock(dump_mutex_);
  format::BboxHeader* h = box_->header();
  writeModuleMap(h);  // the threads may stand in objects dlopen'ed since the start
  const SnapshotResult snap =
      takeThreadSnapshot(h, static_cast<uint32_t>(format::DumpReason::kSnapshot));
  if (snap.threads > 0) {
    NCCLREC_INFO(kLogDump, "thread snapshot on request: %u of %u threads answered in %.1f ms",
                 snap.answered, snap.threads, snap.elapsed_ns / 1e6);
  }
  return snap.threads;
}

void Recorder::shutdown() {
  if (shut_down_.exchange(true)) return;
  format::BboxHeader* h = box_->header();
  atomicField(h->exit_ns).store(realtimeNs(), std::memory_order_relaxed);
  atomicField(h->exited).store(1, std::memory_order_release);
  if (watchdog_) {
    watchdog_->stop();
    if (takeSignalDumpRequest()) watchdog_->requestDump(format::DumpReason::kSignal);
    watchdog_->performRequestedDumps();
  }
  if (params_.dump_on_exit) dumpNow(format::DumpReason::kExit, "process exited");
}

}  // namespace ncclrec::recorder
