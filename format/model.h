// The in-memory model of one process's recording, the same whether it was loaded from a live or
// dead black box (*.bbox) or from a protobuf dump (*.ncclrec.pb). The analyzer and ncclrec-top
// work on this model only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "format/bbox_layout.h"
#include "format/event_context.h"
#include "format/op_type.h"

namespace ncclrec::format {

// One frame of a call stack: native (a return address, symbolized from debug info) or Python
// (a code object and instruction offset, named from the code object's metadata).
struct Frame {
  uint64_t address = 0;        // absolute return address in the recorded process; 0 for Python
  std::string module;          // path of the ELF object holding it, "" when unknown
  uint64_t module_offset = 0;  // address - module load bias
  std::string function;        // demangled; "" when unknown
  std::string file;            // source file from debug info; "" when unknown
  int line = 0;                // 0 when unknown
  // Python frames: `function` is the code object's qualified name (co_qualname, else co_name),
  // `file` its co_filename, `line` the line of the instruction being run; module is "".
  bool python = false;
  friend bool operator==(const Frame&, const Frame&) = default;
};

struct Stack {
  uint32_t id = 0;
  // Python frames first (innermost first), then native frames (innermost, the caller of the NCCL
  // function, first). A stack recorded on a thread without Python frames has native ones only.
  std::vector<Frame> frames;
  bool symbolized = false;  // function names resolved (dumps); bboxes hold addresses only
  friend bool operator==(const Stack&, const Stack&) = default;
};

struct Module {
  std::string path;
  uint64_t base = 0;
  uint64_t size = 0;
  std::string build_id;  // lowercase hex, "" when the object has none
  friend bool operator==(const Module&, const Module&) = default;
};

struct Comm {
  uint32_t index = 0;  // index in the process's comm table
  uint64_t comm_id = 0;
  uint64_t parent_id = 0;
  uint64_t handle = 0;
  int rank = -1;
  int nranks = 0;
  int device = -1;
  int global_rank = -1;
  int color = -1;
  int key = -1;
  OpType created_by = OpType::kUnknown;
  int init_result = 0;
  uint32_t state = 0;     // kComm* bits of bbox_layout.h
  uint64_t coll_seq = 0;  // collectives issued on it
  int64_t created_ns = 0;
  int64_t ended_ns = 0;
  std::string name;
  std::string bus_id;          // PCI bus id "0000:3b:00.0"; "" when unknown
  std::string uuid;            // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (as nvidia-smi -L); ""
  uint32_t device_source = 0;  // kDevice* of bbox_layout.h
  // The bootstrap root the init's unique id names, "10.0.0.1:41234" or "[fe80::1]:41234"; "" when
  // unknown (bbox_layout.h CommRecord::root_*).
  std::string root;
  int blocking = -1;  // ncclConfig_t::blocking: 1 or 0; -1 when the creating call had no config
  friend bool operator==(const Comm&, const Comm&) = default;
};
// Whether the communicator was still being created when recorded (bbox_layout.h kCommCreating).
inline bool inCreation(const Comm& c) { return commInCreation(c.state); }

// One recorded call, every field in its own member: what readers and writers fill before they
// store it as an EventRecord. The widths hold every value a recording can carry (event indices,
// sequence numbers and user-space stream handles below 2^48; ranks below 2^23; Linux thread ids
// below 2^22; ncclResult_t, dtype and device ordinals below 2^7; kEvent* flags and group depths
// below 2^8); a reader stores a larger value from a damaged file truncated to the width. aux, aux2
// and aux64 (op-specific, non-zero on the few calls that create or shrink communicators) live
// beside the events, in RankData::event_aux.
struct EventFields {
  // Position in the process's event stream, 0-based, gap-free when no loss.
  uint64_t index : 48 = 0;
  OpType op : 16 = OpType::kUnknown;
  uint64_t op_seq : 48 = 0;
  EventState state : 8 = EventState::kEmpty;
  int dtype : 8 = -1;  // -1 when the op has none
  uint64_t stream : 48 = 0;
  int redop : 16 = -1;  // -1 when the op has none
  uint64_t comm_id = 0;
  uint64_t count = 0;
  int64_t enqueue_ns = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int rank : 24 = -1;
  uint32_t flags : 8 = 0;
  int nranks : 24 = 0;
  uint32_t group_depth : 8 = 0;
  int peer : 24 = -1;
  int result : 8 = 0;
  uint32_t tid : 24 = 0;
  int device : 8 = -1;
  uint32_t comm_index = 0xffffffffu;
  uint32_t stack_id = 0xffffffffu;
};

// One recorded call as the analyzer holds it, by the million (100,000 ranks x 2,000 calls is 200
// million of them): 48 bytes instead of EventFields' 88. The fields that vary from call to call
// are bit-fields of their own; those that repeat (communicator, rank, stream, thread, stack, peer
// and the timestamps' high bits) are one interned EventContext (event_context.h), read through
// the accessors. Built from an EventFields; a setter re-interns, for tests and rare edits.
struct EventRecord {
  EventRecord() = default;  // the default EventFields
  explicit EventRecord(const EventFields& f);
  EventFields fields() const;

  uint64_t index : 48 = 0;
  OpType op : 16 = OpType::kUnknown;
  uint64_t op_seq : 48 = 0;
  EventState state : 8 = EventState::kEmpty;
  int dtype : 8 = -1;
  uint64_t count = 0;

  const EventContext& context() const {
    return event_contexts::at(ctx_lo_ | (uint32_t{ctx_hi_} << 24));
  }
  uint64_t commId() const { return context().comm_id; }
  uint64_t stream() const { return context().stream; }
  int rank() const { return context().rank; }
  int nranks() const { return context().nranks; }
  int peer() const { return context().peer; }
  int device() const { return context().device; }
  uint32_t tid() const { return context().tid; }
  uint32_t commIndex() const { return context().comm_index; }
  uint32_t stackId() const { return context().stack_id; }
  int64_t enqueueNs() const { return join(context().enqueue_hi, enqueue_lo_); }
  int64_t startNs() const { return join(context().start_hi, start_lo_); }
  int64_t endNs() const { return join(context().end_hi, end_lo_); }

  void setCommId(uint64_t v) {
    edit([v](EventFields& f) { f.comm_id = v; });
  }
  void setStream(uint64_t v) {
    edit([v](EventFields& f) { f.stream = v; });
  }
  void setRank(int v) {
    edit([v](EventFields& f) { f.rank = v; });
  }
  void setNranks(int v) {
    edit([v](EventFields& f) { f.nranks = v; });
  }
  void setPeer(int v) {
    edit([v](EventFields& f) { f.peer = v; });
  }
  void setDevice(int v) {
    edit([v](EventFields& f) { f.device = v; });
  }
  void setTid(uint32_t v) {
    edit([v](EventFields& f) { f.tid = v; });
  }
  void setCommIndex(uint32_t v) {
    edit([v](EventFields& f) { f.comm_index = v; });
  }
  void setStackId(uint32_t v) {
    edit([v](EventFields& f) { f.stack_id = v; });
  }
  void setEnqueueNs(int64_t v) {
    edit([v](EventFields& f) { f.enqueue_ns = v; });
  }
  void setStartNs(int64_t v) {
    edit([v](EventFields& f) { f.start_ns = v; });
  }
  void setEndNs(int64_t v) {
    edit([v](EventFields& f) { f.end_ns = v; });
  }

  friend bool operator==(const EventRecord&, const EventRecord&) = default;

 private:
  static constexpr unsigned kLowBits = 40;  // of each timestamp; the rest is in the context
  static constexpr uint64_t kLowMask = (uint64_t{1} << kLowBits) - 1;
  static int64_t join(int32_t hi, uint64_t lo) {
    return static_cast<int64_t>((static_cast<uint64_t>(static_cast<int64_t>(hi)) << kLowBits) | lo);
  }
  template <typename F>
  void edit(F f) {
    EventFields w = fields();
    f(w);
    *this = EventRecord(w);
  }

 public:
  uint64_t enqueue_lo_ : 40 = 0;
  uint32_t flags : 8 = 0;
  uint32_t group_depth : 8 = 0;
  int result : 8 = 0;
  uint64_t start_lo_ : 40 = 0;
  uint32_t ctx_lo_ : 24 = 0;
  uint64_t end_lo_ : 40 = 0;
  uint32_t ctx_hi_ : 8 = 0;
  int redop : 16 = -1;
};
static_assert(sizeof(EventRecord) == 48, "EventRecord grew: it is held per call at fleet scale");

inline EventRecord::EventRecord(const EventFields& f)
    : index(f.index),
      op(f.op),
      op_seq(f.op_seq),
      state(f.state),
      dtype(f.dtype),
      count(f.count),
      enqueue_lo_(static_cast<uint64_t>(f.enqueue_ns) & kLowMask),
      flags(f.flags),
      group_depth(f.group_depth),
      result(f.result),
      start_lo_(static_cast<uint64_t>(f.start_ns) & kLowMask),
      end_lo_(static_cast<uint64_t>(f.end_ns) & kLowMask),
      redop(f.redop) {
  EventContext c;
  c.comm_id = f.comm_id;
  c.stream = f.stream;
  c.enqueue_hi = static_cast<int32_t>(f.enqueue_ns >> kLowBits);
  c.start_hi = static_cast<int32_t>(f.start_ns >> kLowBits);
  c.end_hi = static_cast<int32_t>(f.end_ns >> kLowBits);
  c.rank = f.rank;
  c.nranks = f.nranks;
  c.peer = f.peer;
  c.device = f.device;
  c.tid = f.tid;
  c.comm_index = f.comm_index;
  c.stack_id = f.stack_id;
  const uint32_t id = event_contexts::intern(c);
  ctx_lo_ = id & 0xffffffu;
  ctx_hi_ = id >> 24;
}

inline EventFields EventRecord::fields() const {
  const EventContext& c = context();
  EventFields f;
  f.index = index;
  f.op = op;
  f.op_seq = op_seq;
  f.state = state;
  f.dtype = dtype;
  f.stream = c.stream;
  f.redop = redop;
  f.comm_id = c.comm_id;
  f.count = count;
  f.enqueue_ns = enqueueNs();
  f.start_ns = startNs();
  f.end_ns = endNs();
  f.rank = c.rank;
  f.flags = flags;
  f.nranks = c.nranks;
  f.group_depth = group_depth;
  f.peer = c.peer;
  f.result = result;
  f.tid = c.tid;
  f.device = c.device;
  f.comm_index = c.comm_index;
  f.stack_id = c.stack_id;
  return f;
}

// The op-specific words of one event (bbox_layout.h Event::aux, aux2, aux64), kept only for the
// events where one of them is non-zero.
struct EventAux {
  uint64_t index = 0;  // EventRecord::index of the event
  int aux = 0;
  int aux2 = 0;
  uint64_t aux64 = 0;
  friend bool operator==(const EventAux&, const EventAux&) = default;
};

// One thread of the process at the latest thread snapshot (bbox_layout.h ThreadRecord): where it
// was when the process dumped, whether or not it ever called NCCL.
struct ThreadState {
  int tid = 0;
  std::string name;        // comm ("python3", "pt_data_worker"); "" when unknown
  uint32_t status = 0;     // kThread* status of bbox_layout.h
  uint32_t flags = 0;      // kThread* flags
  char kernel_state = 0;   // R, S, D, T, t, Z... from /proc; 0 when unknown
  std::string wchan;       // kernel function it sleeps in; "" when none
  uint64_t cpu_ticks = 0;  // user + system time, clock ticks
  // Python frames first (innermost first), then native frames (innermost first: the interrupted
  // instruction). Empty for a thread that did not answer.
  std::vector<Frame> frames;
  bool symbolized = false;
  friend bool operator==(const ThreadState&, const ThreadState&) = default;
};

// Transport progress of one connection: a communicator's channel to or from one peer
// (bbox_layout.h LinkRecord; several records of one key are added up). Counters are cumulative;
// the op* words describe the newest proxy operation, whose steps are the last op_steps of them.
struct Link {
  uint64_t comm_id = 0;  // from the comm table; 0 when unknown
  uint32_t comm_index = kNoComm;
  int peer = -1;
  int channel = 0;
  bool is_send = false;
  uint64_t op_index = kNoLinkOp;  // ring index of the newest proxy op's NCCL call
  uint32_t op_steps = 0;
  uint32_t op_base = 0;  // `planned` (mod 2^32) before the newest proxy op
  uint64_t planned = 0, posted = 0, moved = 0, done = 0;
  int64_t op_start_ns = 0, posted_ns = 0, moved_ns = 0, done_ns = 0;

  // The communicator's kernel record (bbox_layout.h kKernelPeer): ops launched, kernel channels
  // started (posted) and stopped (done), not a connection.
  bool isKernel() const { return peer == kKernelPeer; }
  // How many steps of the newest proxy op reached a counter: 0..op_steps.
  uint32_t opSteps(uint64_t counter) const {
    const auto d = static_cast<int32_t>(static_cast<uint32_t>(counter) - op_base);
    return d <= 0 ? 0 : std::min(static_cast<uint32_t>(d), op_steps);
  }
  friend bool operator==(const Link&, const Link&) = default;
};

enum class SourceKind { kBlackBox, kDump };

struct RankData {
  std::string source_path;
  SourceKind source = SourceKind::kBlackBox;
  uint32_t format_version = 0;
  // Identity.
  int pid = 0;
  int global_rank = -1;
  int world_size = -1;
  int local_rank = -1;
  std::string host;
  std::string run_id;
  std::string exe;
  int64_t start_ns = 0;
  // Its NCCL network settings (bbox_layout.h BboxHeader::net_env); "" when none was set.
  std::string net_env;
  // Liveness and marks.
  int64_t heartbeat_ns = 0;
  bool exited = false;
  int64_t exit_ns = 0;
  int fatal_signal = 0;
  int64_t fatal_ns = 0;
  bool cuda_completion = false;
  int64_t hang_event_index = -1;
  // What the launcher saw of the process when it reported (report.json, analyzer/launcher_facts.h):
  // its proc(5) state letter ('T' stopped, 'D' uninterruptible...) and kernel wait channel; 0 and
  // "" when unknown. Not part of the recording.
  char process_state = 0;
  std::string process_wchan;
  // Dump metadata (dumps only).
  DumpReason dump_reason = DumpReason::kNone;
  int64_t dump_ns = 0;
  std::string dump_detail;  // e.g. "op #412 ncclAllReduce incomplete for 61.0 s"
  // Content.
  uint64_t events_total = 0;        // events ever recorded by the process
  uint64_t events_lost = 0;         // overwritten by the ring before this snapshot
  uint32_t stacks_dropped = 0;      // stacks the table could not hold
  std::vector<EventRecord> events;  // ascending index
  std::vector<EventAux> event_aux;  // ascending index; only events with a non-zero aux word
  std::vector<Comm> comms;
  std::map<uint32_t, Stack> stacks;
  std::vector<Module> modules;
  // The latest thread snapshot (empty when none was taken).
  std::vector<ThreadState> threads;
  int64_t threads_ns = 0;                         // when it was taken
  DumpReason threads_reason = DumpReason::kNone;  // the dump it was taken for
  int threads_dumper_tid = 0;                     // the thread that took it
  // Transport progress per connection (empty when none was recorded); ascending by
  // (comm_index, channel, peer, is_send).
  std::vector<Link> links;
  uint32_t links_dropped = 0;  // connections the link table could not hold
  friend bool operator==(const RankData&, const RankData&) = default;
};

}  // namespace ncclrec::format
