// The per-process recorder: the black box, the comm table, stacks, completion tracking, the
// watchdog and the dump triggers. interpose/ calls it around every NCCL entry point.
//
// Life cycle: nothing exists until the first NCCL call of the process (Recorder::get()). If
// initialization fails, one warning goes to stderr and get() returns nullptr from then on, so
// every call passes straight through. After fork(), the child starts a fresh recorder (its own
// black box) at its first NCCL call; it never writes into the parent's.
//
// Threads: begin()/end() are the record path: any thread, no allocation, lock, syscall or log.
// Comm creation and dumps may allocate and lock. The watchdog thread owns hang detection,
// completion polling and asynchronous dumps.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "format/bbox_layout.h"
#include "format/op_type.h"
#include "format/root_address.h"
#include "recorder/blackbox.h"
#include "recorder/comm_table.h"
#include "recorder/device_identity.h"
#include "recorder/in_progress.h"
#include "recorder/params.h"

namespace ncclrec::recorder {

class CudaCompletion;
class PythonFrames;
class StackTable;
class Watchdog;

struct OpArgs {
  format::OpType op = format::OpType::kUnknown;
  const void* comm = nullptr;  // ncclComm_t, or nullptr
  uint64_t count = 0;
  int dtype = -1;
  int redop = -1;
  int peer = -1;  // root or peer
  const void* stream = nullptr;
  int aux = 0;
  int aux2 = 0;
  uint64_t aux64 = 0;
  // For calls that create a communicator: its id and this rank's place, known before the call.
  uint64_t comm_id = 0;
  int rank = -1;
  int nranks = 0;
  // Completion comes from elsewhere (NCCL's profiler callbacks, opStarted/opCompleted): begin()
  // leaves the op enqueued with no start time and no CUDA markers.
  bool deferred = false;
};

// What identifies the communicator a creating call makes, besides its OpArgs (comm_id, rank,
// nranks): for commCreating() and commCreated().
struct CreationArgs {
  uint64_t parent_id = 0;      // split, shrink
  int color = -1;              // split
  int key = -1;                // split
  format::RootAddress root;    // init: the unique id's bootstrap root
  int blocking = -1;           // ncclConfig_t::blocking; -1 without a config
  const char* name = nullptr;  // ncclConfig_t::commName
};

// What begin() hands to end(). Lives on the caller's stack.
struct CallHandle {
  format::Event* slot = nullptr;  // nullptr: nothing recorded
  uint64_t index = 0;
  const void* stream = nullptr;  // kept here: the slot may be overwritten during a long call
  int32_t cuda_ticket = -1;
  bool timed_by_cuda = false;
  CommState* comm = nullptr;  // the op's communicator, when the recorder knows it
  // NCCL's profiler callbacks took over the op's completion (interpose/profiler_plugin.cc): end()
  // and the group end leave a successful op to them.
  bool profiler_completes = false;
  // NCCLREC_COMPLETION=auto with CUDA markers at hand: the plugin adopted the op, and whoever
  // moves this word out of kOwnerUndecided first completes it. The plugin takes it (kOwnerPlugin)
  // when NCCL starts the op's task with kernel channels (they report the GPU's progress); else
  // the recorder does (kOwnerMarker) when the op's launch is known to have happened: after the
  // call, at the outermost GroupEnd, or at the settle of a nonblocking communicator.
  std::atomic<uint8_t>* arbiter = nullptr;
};

inline constexpr uint8_t kOwnerUndecided = 0;
inline constexpr uint8_t kOwnerPlugin = 1;
inline constexpr uint8_t kOwnerMarker = 2;

class Recorder {
 public:
  // The process's recorder, created at the first call; nullptr when disabled or when it could not
  // initialize (already said once on stderr).
  static Recorder* get();

  // Record path. `skip_frames` = frames of the shim between the user's code and this call.
  CallHandle begin(const OpArgs& args, int skip_frames);
  void end(CallHandle& call, int result);
  // What a wrapper learns about its call only after the call returned (a child comm's id, the
  // rank's device, an async-error mark), written into the call's event; nothing when the call was
  // not recorded or a wrap has reused its slot meanwhile.
  static void setEventAux64(const CallHandle& call, uint64_t value);
  static void setEventDevice(const CallHandle& call, int32_t device);
  static void addEventFlags(const CallHandle& call, uint32_t flags);
  // A deferred op (OpArgs::deferred) began running / ended; any thread, record-path rules. Each is
  // a no-op when the slot was reused meanwhile; opStarted also when the op already ended.
  static void opStarted(const CallHandle& call, int64_t now_ns);
  void opCompleted(const CallHandle& call, int result);
  // A deferred send/recv whose peer NCCL names only at launch (the profiler's P2p event): sets
  // the peer and takes the op's per-peer sequence number then.
  static void setP2pPeer(const CallHandle& call, int peer);
  // The op's communicator's index in the black box's comm table (format::kNoComm when unknown):
  // what its transport counters (format/bbox_links.h) are filed under.
  static uint32_t commIndexOf(const CallHandle& call);

  // Groups (called by the GroupStart/GroupEnd wrappers around the real call).
  void groupStarted();
  // Before the real GroupEnd: returns true when this GroupEnd closes the outermost group.
  bool groupEnding();
  // After the real GroupEnd of the outermost group: completes the ops deferred in it.
  void groupEnded(int result, bool simulated);
  // Whether the calling thread is between ncclGroupStart and its ncclGroupEnd (NCCL defers a
  // communicator's creation there to the group's end).
  static bool inGroup();
  // ncclCommGetAsyncError reported `state` (not ncclInProgress) for `handle`: the ops left
  // enqueued by an ncclInProgress return complete (ncclSuccess) or fail (an error).
  void asyncSettled(const void* handle, int state);

  // Communicator life cycle (not the record path).
  // A creating call (init, split, shrink) begins, after begin(): claims the communicator's record
  // (kCommCreating) with what identifies what it creates, so that a creation that never returns
  // is on record; the returned index goes to commCreated/commInitFailed (kNoComm when the table
  // is full). `creator`: the child's id, rank and nranks where known before the call.
  uint32_t commCreating(const OpArgs& creator, uint64_t creator_event, const CreationArgs& args);
  // The creating call returned success or ncclInProgress (a nonblocking creation: the record
  // stays kCommCreating, and `call`, the creating call, is held in the new communicator's
  // in-progress queue until its settle). `record`: commCreating's index (kNoComm: none).
  void commCreated(const void* handle, const OpArgs& creator, CallHandle& call,
                   const CreationArgs& args, int result, const DeviceIdentity& device,
                   uint32_t record);
  // A creating call that failed: the comm never existed, but the attempt is recorded (a comm
  // record with kCommInitFailed and no handle) with the device the rank was on, because a refused
  // init (two ranks on one GPU) is explained by that device.
  void commInitFailed(const OpArgs& creator, uint64_t creator_event, int result,
                      const DeviceIdentity& device, uint32_t record);
  // The device of the calling thread's rank (device_identity.h), with NCCLREC_CUDA_LIBRARY.
  DeviceIdentity identifyDevice(int comm_device, HostncclGetDeviceFn hostnccl) const;
  void commEnded(const void* handle, uint32_t state_bits);
  CommState* findComm(const void* handle) const { return comms_->find(handle); }
  // Index of the next split/shrink on `parent` (for child ids).
  uint32_t nextSplitIndex(const void* parent);
  // Index of the next ncclCommInitAll of this process (for its comm id).
  uint32_t nextInitAllIndex();

  // Dumps. request: asynchronous (the watchdog writes it; safe from any thread, not from signal
  // handlers). now: synchronous, in the calling thread.
  void requestDump(format::DumpReason reason);
  bool dumpNow(format::DumpReason reason, const std::string& detail);
  // A thread snapshot into the black box only (reason kSnapshot), no dump file; in the calling
  // thread. The number of threads recorded (0 when snapshots are off or unsupported).
  uint32_t snapshotNow();

  format::BboxHeader* header() const { return box_->header(); }
  const Params& params() const { return params_; }
  const std::string& blackBoxPath() const { return box_->path(); }
  const format::RecordingName& blackBoxName() const { return box_->name(); }
  CudaCompletion* cuda() const { return cuda_.get(); }
  // NCCLREC_COMPLETION=auto with a CUDA driver: the profiler plugin times the ops that NCCL runs
  // with kernel channels and CUDA markers the others (CallHandle::arbiter).
  bool arbitratesCompletion() const { return arbitrates_; }

  // Called by the exit handler: marks the black box exited, stops the watchdog, final dump.
  void shutdown();
  // In a forked child: drop the parent's threads and mapping without touching them.
  void abandonForChild();

 private:
  friend class Watchdog;
  friend Recorder* createRecorder();
  Recorder() = default;
  bool init(std::string* error);
  void setProcessRank(int rank, int nranks);
  void completeEvent(format::Event* slot, uint64_t index, int result, int64_t now);
  // Holds an op until asyncSettled(); false when it cannot (unknown comm, queue full).
  bool holdInProgress(CommState* cs, const HeldOp& op);
  // An op with an arbiter: true when the profiler plugin completes it (then its CUDA ticket, if
  // any, is released unused); false when the caller must (the plugin is locked out).
  bool pluginTakes(std::atomic<uint8_t>* arbiter, format::Event* slot, uint64_t index,
                   int32_t ticket, const void* stream);
  // Records a held or grouped op's end marker; false when it has no ticket or the driver refused.
  bool markWithCuda(const HeldOp& op, bool ok);
  CommState* addComm(const CommInfo& info);

  Params params_;
  std::unique_ptr<BlackBox> box_;
  std::unique_ptr<CommTable> comms_;
  std::unique_ptr<StackTable> stacks_;
  std::unique_ptr<PythonFrames> python_;  // nullptr outside CPython processes
  int python_depth_ = 0;                  // Python frames per stack in use (0 without python_)
  std::unique_ptr<CudaCompletion> cuda_;
  bool arbitrates_ = false;
  std::unique_ptr<Watchdog> watchdog_;
  std::mutex dump_mutex_;
  std::atomic<uint32_t> initall_calls_{0};
  std::atomic<bool> shut_down_{false};
};

// Thread id of the calling thread, cached per thread (gettid is a syscall).
uint32_t currentTid();

}  // namespace ncclrec::recorder
