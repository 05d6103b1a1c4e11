// The in-memory model of one process's recording, the same whether it was loaded from a live or
// dead black box (*.bbox) or from a protobuf dump (*.ncclrec.pb). The analyzer and ncclrec-top
// work on this model only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "recorder/format/op_type.h"

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
  friend bool operator==(const Comm&, const Comm&) = default;
};

// One recorded call. Held by the million in the analyzer (32,768 ranks x 2,000 calls is 65 million
// of them), so fields share 64- and 32-bit words as bit-fields: 88 bytes instead of 144. The
// widths hold every value a recording can carry (event indices, sequence numbers and user-space
// stream handles below 2^48; ranks below 2^23; Linux thread ids below 2^22; ncclResult_t, dtype
// and device ordinals below 2^7; kEvent* flags and group depths below 2^8); a reader stores a
// larger value from a damaged file truncated to the width. aux, aux2 and aux64 (op-specific,
// non-zero on the few calls that create or shrink communicators) live beside the events, in
// RankData::event_aux.
struct EventRecord {
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
  friend bool operator==(const EventRecord&, const EventRecord&) = default;
};
static_assert(sizeof(EventRecord) == 88, "EventRecord grew: it is held per call at fleet scale");

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
  // Liveness and marks.
  int64_t heartbeat_ns = 0;
  bool exited = false;
  int64_t exit_ns = 0;
  int fatal_signal = 0;
  int64_t fatal_ns = 0;
  bool cuda_completion = false;
  int64_t hang_event_index = -1;
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
  friend bool operator==(const RankData&, const RankData&) = default;
};

}  // namespace ncclrec::format
