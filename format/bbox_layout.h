// The black box: one file per process, mapped MAP_SHARED by the recorder and read (live, or after
// the process died) by the reader, ncclrec-top and the dump writer.
//
//   [BboxHeader, 4 KiB][Event x ring_capacity][CommRecord x comm_capacity]
//   [StackRecord x stack_capacity][ModuleRecord x module_capacity]
//   [PyCodeRecord x pycode_capacity][Python blob, pyblob_bytes]   (only in Python processes)
//   [ThreadRecord x thread_capacity]   (every thread's stack at the latest dump; may be absent)
//   [LinkRecord x link_capacity]       (transport progress per connection; may be absent)
//
// All offsets and sizes are in the header, so a reader never assumes them. Every struct is
// trivially copyable with a fixed size (static_asserts below); multi-byte fields are the host's
// byte order (the file is read on the machine or architecture that wrote it).
//
// Concurrency protocol (writers are the recording threads and the watchdog, in one process;
// readers may be other processes):
// - Event slots: a writer claims index i with fetch_add on BboxHeader::write_index, stores
//   Event::seq = 2*i+1 (odd: being written), fills the slot, then stores seq = 2*i+2 with release.
//   A reader loads seq (acquire), copies the slot, loads seq again; equal and even means a whole
//   event of index seq/2-1. Fields updated after publication (state, start_ns, end_ns, result;
//   aux64 and device of the calls that create communicators) are single aligned words written
//   with atomic stores; readers load them atomically.
// - Thread records: the dumping thread rewrites the whole region at each dump under a sequence
//   word (threads_seq odd while writing, even when done); a reader copies the region and keeps
//   the copy only when threads_seq was the same even value before and after.
// - Link records: an open-addressing table keyed by (comm_index, channel, peer, direction). A
//   writer claims an empty slot by moving `valid` from 0 to kClaimingMark (compare-exchange),
//   writes the key, then stores kValidMark with release; the key never changes after that. The
//   counters are single aligned words written with relaxed atomic adds and stores; a reader
//   loads them atomically, one by one (a copy may mix two instants: counters only grow).
// - Comm, stack, module and Python code records: `valid` is stored last with release; a reader
//   ignores records whose `valid` is not kValidMark. Their other fields never change after that,
//   except the counters documented as live. Blob bytes a PyCodeRecord points at are written
//   before its `valid`.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace ncclrec::format {

inline constexpr char kBboxMagic[8] = {'N', 'C', 'R', 'E', 'C', 'B', 'B', 'X'};
inline constexpr uint32_t kBboxVersion = 1;
inline constexpr uint32_t kValidMark = 0x56414c44;  // "VALD"
inline constexpr uint32_t kClaimingMark = 1;        // a link record whose key is being written
inline constexpr uint32_t kNoStack = 0xffffffffu;
inline constexpr uint32_t kNoComm = 0xffffffffu;
// Frames per interned stack: native (NCCLREC_STACK_DEPTH, at most 64) plus Python
// (NCCLREC_PYTHON_DEPTH, at most 64).
inline constexpr uint32_t kMaxStackDepth = 128;
inline constexpr size_t kHeaderBytes = 4096;

// Flags on Event::flags.
inline constexpr uint32_t kEventInGroup = 1u << 0;    // issued between GroupStart and GroupEnd
inline constexpr uint32_t kEventCudaTimed = 1u << 1;  // completion tracked with CUDA events
inline constexpr uint32_t kEventStackTruncated = 1u << 2;
inline constexpr uint32_t kEventAsyncError = 1u << 3;  // GetAsyncError reported an error in aux
// Issued on a stream capturing a CUDA graph: its work runs at graph launches, not tracked here;
// complete once the watchdog saw its marker was captured.
inline constexpr uint32_t kEventGraphCaptured = 1u << 4;
// Started and completed by NCCL's profiler callbacks (Coll/P2p and KernelCh events).
inline constexpr uint32_t kEventProfilerTimed = 1u << 5;

// Flags on CommRecord::state (live: updated with atomic or-stores).
inline constexpr uint32_t kCommInitialized = 1u << 0;
inline constexpr uint32_t kCommFinalized = 1u << 1;
inline constexpr uint32_t kCommDestroyed = 1u << 2;
inline constexpr uint32_t kCommAborted = 1u << 3;
inline constexpr uint32_t kCommRevoked = 1u << 4;
inline constexpr uint32_t kCommInitFailed = 1u << 5;
inline constexpr uint32_t kCommAsyncErrorSeen = 1u << 6;  // GetAsyncError reported an error
// The record was claimed when the creating call began (ncclCommInitRank*, ncclCommSplit,
// ncclCommShrink): until kCommInitialized or kCommInitFailed joins it, the communicator is being
// created (or its process died in the call). A nonblocking creation stays so until the user's
// ncclCommGetAsyncError sees it settle.
inline constexpr uint32_t kCommCreating = 1u << 7;
// Being created: claimed at the start and not yet initialized or failed.
inline constexpr bool commInCreation(uint32_t state) {
  return (state & kCommCreating) != 0 && (state & (kCommInitialized | kCommInitFailed)) == 0;
}

// CommRecord::device_source: who said which device the rank was on.
inline constexpr uint32_t kDeviceUnknown = 0;
inline constexpr uint32_t kDeviceFromComm = 1;         // ncclCommCuDevice of the new comm
inline constexpr uint32_t kDeviceFromHostnccl = 2;     // hostncclGetDevice (hostnccl only)
inline constexpr uint32_t kDeviceFromCudaContext = 3;  // cuCtxGetDevice on the calling thread

// One NCCL call. 128 bytes, two cache lines.
struct alignas(64) Event {
  uint64_t seq;         // publication word, see the protocol above
  uint64_t comm_id;     // job-wide communicator id (equal on all its ranks); 0 when none
  uint64_t op_seq;      // 1-based: per-comm collective number, or per-peer send/recv number
  uint64_t count;       // elements (recvcount for ReduceScatter, sendcount for AllGather)
  uint64_t stream;      // cudaStream_t value
  int64_t enqueue_ns;   // CLOCK_REALTIME when the call was entered
  int64_t start_ns;     // live: when the op was seen started (CUDA) or entered (host)
  int64_t end_ns;       // live: when the op completed or the call failed; 0 while incomplete
  uint32_t stack_id;    // index into the stack table, or kNoStack
  uint32_t comm_index;  // index into the comm table, or kNoComm
  int32_t rank;         // rank in the communicator, -1 when none
  int32_t nranks;
  int32_t peer;         // root for rooted collectives, peer for send/recv, -1 otherwise
  int32_t device;       // live for comm-creating calls: set when they return (-1 while unknown)
  int32_t redop;        // ncclRedOp_t value, -1 when the op has none
  uint32_t tid;         // kernel thread id of the caller
  uint16_t op;          // OpType
  uint8_t dtype;        // ncclDataType_t, 0xff when the op has none
  uint8_t group_depth;  // ncclGroupStart nesting when the call was made
  uint8_t state;        // live: EventState
  uint8_t reserved0[3];
  int32_t result;  // live: ncclResult_t returned (or the async error for GetAsyncError)
  uint32_t flags;  // kEvent* bits
  int32_t aux;     // op-specific: split color, shrink exclude count, revoke flags
  int32_t aux2;    // op-specific: split key
  uint64_t aux64;  // op-specific: child comm id for split/shrink/init
};
static_assert(sizeof(Event) == 128, "Event must stay two cache lines");
static_assert(std::is_trivially_copyable_v<Event>);
static_assert(offsetof(Event, start_ns) % 8 == 0 && offsetof(Event, end_ns) % 8 == 0 &&
              offsetof(Event, aux64) % 8 == 0 && offsetof(Event, device) % 4 == 0);

// One communicator as this process saw it, from the start of the call that creates it
// (kCommCreating), or one init call that failed (state kCommInitFailed, handle 0: the comm never
// existed, but which device the rank was on is the evidence). 256 bytes.
//
// A record claimed at the start of its creation is published with what the call's arguments say
// (comm_id, parent_id, color, key, created_by, rank and nranks of an init, root_*, blocking, name,
// event_index_lo); the call's outcome (handle, rank and nranks of a split's child, device,
// bus_id, uuid, device_source, init_result) is written when it returns, before kCommInitialized
// or kCommInitFailed is or-stored into `state` with release: a reader that sees either bit
// (acquire) sees them whole.
struct CommRecord {
  uint32_t valid;  // kValidMark once published
  uint32_t state;  // live: kComm* bits
  uint64_t comm_id;
  uint64_t parent_id;  // 0 unless created by split or shrink
  uint64_t handle;     // ncclComm_t value in this process
  uint64_t coll_seq;   // live: collectives issued so far on this comm (last op_seq)
  int32_t rank;
  int32_t nranks;
  int32_t device;
  int32_t global_rank;  // the process's global rank when the comm was created
  int32_t color;        // split color (-1 when not split)
  int32_t key;          // split key
  uint32_t created_by;  // OpType of the call that created it
  int32_t init_result;  // ncclResult_t of that call
  int64_t created_ns;
  int64_t ended_ns;         // live: finalize/destroy/abort time, 0 while open
  uint32_t event_index_lo;  // low 32 bits of the index of the creating event
  uint32_t reserved0;
  char name[64];  // ncclConfig_t::commName, NUL-terminated, may be empty
  // The device's identity on its host, read from the CUDA driver when the process has it loaded
  // and initialized; it tells GPUs apart where the ordinal `device` cannot (each process may see
  // another GPU as device 0 through CUDA_VISIBLE_DEVICES).
  char bus_id[32];         // PCI bus id "0000:3b:00.0", NUL-terminated; empty when unknown
  uint8_t uuid[16];        // cuDeviceGetUuid; all zero when unknown
  uint32_t device_source;  // kDevice*: where `device` came from
  // The bootstrap root that an init's unique id names (ncclGetUniqueId's process listens there),
  // read from the id's bytes in NCCL's layout or hostnccl's; root_family 0 when unknown (split,
  // shrink, init-all, an id of another layout).
  uint16_t root_family;   // AF_INET or AF_INET6
  uint16_t root_port;     // host byte order
  uint8_t root_addr[16];  // network byte order; the first 4 for AF_INET
  int32_t blocking;       // ncclConfig_t::blocking: 1 or 0; -1 when the call had no config
  uint8_t reserved1[20];
};
static_assert(sizeof(CommRecord) == 256);
static_assert(offsetof(CommRecord, bus_id) == 160 && offsetof(CommRecord, device_source) == 208 &&
              offsetof(CommRecord, root_family) == 212 && offsetof(CommRecord, blocking) == 232);
static_assert(std::is_trivially_copyable_v<CommRecord>);

// An interned call stack: return addresses only, symbolized later. Size depends on the depth
// the header declares: 16 + 8 * stack_depth bytes.
struct StackRecord {
  uint64_t hash;       // 0 = empty slot; written once when the slot is claimed
  uint32_t valid;      // kValidMark once frames are written
  uint32_t depth;      // frames used
  uint64_t frames[1];  // really stack_depth entries (flexible tail)
};
inline constexpr size_t stackRecordBytes(uint32_t depth) { return 16 + 8 * size_t{depth}; }

// A stack frame word is a native return address, or a Python frame: bit 63 set, bits 32..62 the
// index of its PyCodeRecord, bits 0..31 the byte offset of the instruction being run in the code
// object's bytecode (kPyNoOffset when unknown: the line is then the code's first line). User-space
// return addresses never have bit 63 set. Python frames come first in a stack, innermost first.
inline constexpr uint64_t kPyFrameTag = uint64_t{1} << 63;
inline constexpr uint32_t kPyNoOffset = 0xffffffffu;
inline constexpr uint32_t kPyNoCode = 0x7fffffffu;  // code object not recorded (table full)
inline constexpr bool isPythonFrameWord(uint64_t word) { return (word & kPyFrameTag) != 0; }
inline constexpr uint64_t pythonFrameWord(uint32_t code_index, uint32_t offset) {
  return kPyFrameTag | (uint64_t{code_index & 0x7fffffffu} << 32) | offset;
}
inline constexpr uint32_t pythonCodeIndex(uint64_t word) {
  return static_cast<uint32_t>(word >> 32) & 0x7fffffffu;
}
inline constexpr uint32_t pythonOffset(uint64_t word) { return static_cast<uint32_t>(word); }

// PyCodeRecord::line_format: how its line table is encoded (format/python_lines.h).
inline constexpr uint32_t kPyLinesNone = 0;
inline constexpr uint32_t kPyLinesLnotab = 1;     // CPython 3.9 co_lnotab
inline constexpr uint32_t kPyLinesPep626 = 2;     // CPython 3.10 co_linetable
inline constexpr uint32_t kPyLinesLocations = 3;  // CPython 3.11+ co_linetable (locations table)

// One Python code object, copied the first time a frame of it was recorded, so dumps and the
// black boxes of killed processes name Python frames without the process. Strings and the line
// table live in the blob region; offsets are from the blob's start. 64 bytes.
struct PyCodeRecord {
  uint32_t valid;
  uint32_t line_format;  // kPyLines*
  uint64_t code;         // address of the code object in the recorded process
  uint64_t fingerprint;  // tells a code object from a later one at the same address
  int32_t first_line;    // co_firstlineno
  uint32_t filename_len;
  uint32_t qualname_len;
  uint32_t linetable_len;
  uint64_t filename_off;  // co_filename, UTF-8
  uint64_t qualname_off;  // co_qualname (co_name before 3.11), UTF-8
  uint64_t linetable_off;
};
static_assert(sizeof(PyCodeRecord) == 64);
static_assert(std::is_trivially_copyable_v<PyCodeRecord>);

// ThreadRecord::status: how the thread's stack was obtained.
inline constexpr uint32_t kThreadAnswered = 1;  // it captured its own stack in a signal handler
inline constexpr uint32_t kThreadDumper =
    2;  // the thread that took the snapshot (captured directly)
inline constexpr uint32_t kThreadNoAnswer = 3;  // it did not answer in time: kernel state only
inline constexpr uint32_t kThreadGone = 4;      // it exited before it could be asked
inline constexpr uint32_t kThreadNotAsked = 5;  // over capacity, or still busy with an old request
// ThreadRecord::flags.
inline constexpr uint32_t kThreadSignalBlocked = 1u << 0;  // the snapshot signal is in SigBlk
inline constexpr uint32_t kThreadSignalIgnored = 1u << 1;  // ... or in SigIgn
inline constexpr uint32_t kThreadFramesTruncated = 1u << 2;
// Not asked: it was blocked in a call that a signal handler cuts short with EINTR whatever
// SA_RESTART says (nanosleep, poll, select, epoll_wait...; signal(7)), in a process without a
// Python interpreter (CPython retries its own such calls). Asking would change what it does.
inline constexpr uint32_t kThreadInSleepingCall = 1u << 3;
// It did not capture its own stack, but its Python frames were read from the interpreter's
// thread list (recorder/python_threads.cc): python_depth frames, no native ones.
inline constexpr uint32_t kThreadPythonListed = 1u << 4;
// Not asked (kThreadInSleepingCall), but its native frames were unwound at dump time from the
// stack pointer and program counter the kernel saved when it entered its call
// (recorder/dump/sleep_unwind.h): in dumps only, never in the black box itself.
inline constexpr uint32_t kThreadUnwoundAsleep = 1u << 5;
inline constexpr uint32_t kThreadMaxFrames = 128;

// One thread of the process at the latest snapshot (recorder/thread_snapshot.h). frames[] holds
// python_depth Python frame words, then native_depth return addresses (the first one is the
// interrupted instruction), innermost first, in the stack word format above. 1152 bytes.
struct ThreadRecord {
  int32_t tid;
  uint32_t status;    // kThread* status
  uint32_t flags;     // kThread* flags
  char kernel_state;  // field 3 of /proc/self/task/TID/stat: R, S, D, T, t, Z...; 0 when unknown
  uint8_t reserved0[3];
  char comm[16];   // /proc/self/task/TID/comm, NUL-terminated
  char wchan[64];  // /proc/self/task/TID/wchan: the kernel function it sleeps in; "" or "0": none
  uint64_t cpu_ticks;  // utime + stime from stat, in clock ticks
  uint32_t native_depth;
  uint32_t python_depth;
  uint64_t reserved1[2];
  uint64_t frames[kThreadMaxFrames];
};
static_assert(sizeof(ThreadRecord) == 1152);
static_assert(std::is_trivially_copyable_v<ThreadRecord>);

// One loaded ELF object, for offline symbolization. 512 bytes.
struct ModuleRecord {
  uint32_t valid;
  uint32_t build_id_len;
  uint64_t base;  // load bias (dlpi_addr)
  uint64_t size;  // extent of its PT_LOAD segments from base
  uint8_t build_id[40];
  char path[448];
};
static_assert(sizeof(ModuleRecord) == 512);

// Transport progress of one connection of the process: its steps over communicator comm_index's
// channel `channel` to or from `peer`, fed by NCCL's proxy events (ProxyOp, ProxyStep) through the
// profiler plugin (hostnccl raises the same events for its own per-peer messages). Counters are
// cumulative over the communicator's life, so one record serves every op; the op of the newest
// proxy operation says which op the last op_steps of them belong to (steps complete in order on
// a connection). 96 bytes.
//
//   planned  steps of every proxy op started (sum of nSteps)
//   posted   steps started (send: the step waits for the GPU's data; receive: its buffer posted)
//   moved    send: handed to the network (SendWait); receive: its data arrived (RecvFlushWait or
//            RecvGPUWait)
//   done     steps stopped (send: the network took it all; receive: handed to the GPU)
//
// A record whose peer is kKernelPeer (channel 0, is_send 0) is the communicator's kernel record
// instead: its "proxy ops" are the NCCL ops the process launched (Coll/P2p start, op_steps their
// kernel channels) and its "steps" their kernel channels, posted when a channel started on the
// GPU (KernelCh start) and done when it stopped: an op whose channels never started on one rank
// while they run on its peers points at that rank's GPU or stream.
struct LinkRecord {
  uint32_t valid;       // kValidMark once the key is written
  uint32_t comm_index;  // index into the comm table
  int32_t peer;         // the other end's rank in the communicator
  uint8_t channel;
  uint8_t is_send;  // 1: this process sends to `peer`; 0: receives from it
  uint8_t reserved0[2];
  // Live words.
  uint64_t op_event_index;  // ring index of the newest proxy op's NCCL call; kNoLinkOp if none
  uint32_t op_steps;        // nSteps of the newest proxy op
  uint32_t op_base;         // `planned` before it: its steps are the counters minus op_base
  uint64_t planned;
  uint64_t posted;
  uint64_t moved;
  uint64_t done;
  int64_t op_start_ns;  // CLOCK_REALTIME when the newest proxy op started
  int64_t posted_ns;    // ... and when each counter last grew
  int64_t moved_ns;
  int64_t done_ns;
};
inline constexpr uint64_t kNoLinkOp = ~uint64_t{0};
inline constexpr int32_t kKernelPeer = -1;  // LinkRecord::peer of a communicator's kernel record
static_assert(sizeof(LinkRecord) == 96);
static_assert(offsetof(LinkRecord, op_event_index) == 16 && offsetof(LinkRecord, planned) == 32 &&
              offsetof(LinkRecord, done_ns) == 88);
static_assert(std::is_trivially_copyable_v<LinkRecord>);

struct BboxHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes;  // kHeaderBytes
  uint32_t event_bytes;   // sizeof(Event)
  uint32_t comm_bytes;    // sizeof(CommRecord)
  uint32_t stack_bytes;   // stackRecordBytes(stack_depth)
  uint32_t module_bytes;  // sizeof(ModuleRecord)
  uint64_t file_bytes;
  uint64_t ring_offset;
  uint64_t comm_offset;
  uint64_t stack_offset;
  uint64_t module_offset;
  uint32_t ring_capacity;  // a power of two
  uint32_t comm_capacity;
  uint32_t stack_capacity;
  uint32_t stack_depth;
  uint32_t module_capacity;
  uint32_t completion_mode;  // 0 host (return = complete), 1 CUDA events

  int32_t pid;
  int32_t global_rank;  // live: RANK, else rank in the first communicator; -1 until known
  int32_t world_size;   // live: WORLD_SIZE, else nranks of the first communicator; -1
  int32_t local_rank;   // LOCAL_RANK or -1
  int64_t start_realtime_ns;
  int64_t start_monotonic_ns;
  char host[64];
  char run_id[64];
  char exe[256];

  // Live words, written by the recorder while the process runs.
  uint64_t write_index;  // events claimed so far (the next index)
  uint32_t comm_count;   // comm records claimed
  uint32_t stack_count;  // stack records claimed
  uint32_t module_count;
  uint32_t stacks_dropped;  // stacks not interned because the table was full
  int64_t heartbeat_ns;     // watchdog's last poll (CLOCK_REALTIME)
  uint32_t exited;          // 1 once the process ran its exit handlers
  int32_t fatal_signal;     // signal number of a fatal signal, 0 if none
  int64_t exit_ns;
  int64_t fatal_ns;
  uint32_t dump_count;
  uint32_t last_dump_reason;  // DumpReason
  int64_t last_dump_ns;
  int64_t hang_event_index;  // index of the op the watchdog declared hung, -1 if none

  // Python (all zero in a process without a supported CPython interpreter). stack_depth above
  // counts native and Python frames together; python_depth is the Python share.
  uint32_t python_version;  // (major << 8) | minor, e.g. 0x030b for 3.11; 0 when none
  uint32_t python_depth;
  uint64_t pycode_offset;
  uint32_t pycode_bytes;  // sizeof(PyCodeRecord)
  uint32_t pycode_capacity;
  uint64_t pyblob_offset;
  uint64_t pyblob_bytes;
  uint32_t pycode_count;    // live: records claimed
  uint32_t pycode_dropped;  // live: code objects not recorded (records or blob full)
  uint64_t pyblob_used;     // live: blob bytes claimed

  // Thread snapshot (all zero when the process takes none: NCCLREC_SNAPSHOT_SIGNAL=0, or a file
  // written before snapshots existed).
  uint64_t threads_offset;
  uint32_t thread_bytes;       // sizeof(ThreadRecord)
  uint32_t thread_capacity;    // records in the region
  uint32_t threads_seq;        // live: sequence word, see the protocol above
  uint32_t thread_count;       // live: records of the latest snapshot
  int64_t threads_ns;          // live: when the latest snapshot was taken (CLOCK_REALTIME)
  uint32_t threads_reason;     // live: DumpReason of the dump it was taken for
  int32_t threads_dumper_tid;  // live: the thread that took it

  // The process's NCCL network settings when its recorder started ("NCCL_SOCKET_IFNAME=eth1
  // NCCL_IB_HCA=mlx5_0"; space-separated, the variables of recorder/net_env.h that are set),
  // NUL-terminated, empty when none is set or in a file written before it existed: the evidence
  // when a communicator's bootstrap cannot connect.
  char net_env[512];

  // Transport progress (all zero when the process keeps none: NCCLREC_MAX_LINKS=0, or a file
  // written before it existed).
  uint64_t links_offset;
  uint32_t link_bytes;     // sizeof(LinkRecord)
  uint32_t link_capacity;  // slots of the table
  uint32_t link_count;     // live: slots claimed
  uint32_t links_dropped;  // live: connections not recorded (table full)
};
static_assert(sizeof(BboxHeader) <= kHeaderBytes);
static_assert(std::is_trivially_copyable_v<BboxHeader>);

}  // namespace ncclrec::format
