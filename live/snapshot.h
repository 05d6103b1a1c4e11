// What ncclrec-top shows, as one immutable value: the collector thread builds a Snapshot
// (collector.h) and hands it to the main thread, which only reads it (draw.h). Parts that did not
// change between two refreshes (a rank's history, the stack tables, the borrowed symbols) are
// shared between snapshots through shared_ptr<const ...>, so a refresh of a quiet job copies
// almost nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/connections.h"
#include "analyzer/site_rule.h"
#include "format/model.h"
#include "format/op_type.h"

namespace ncclrec::live {

inline constexpr uint32_t kNoStackId = 0xffffffffu;
// Recent calls kept per rank: enough for a screen of the rank detail and the sequence grid's
// columns at any usual width, little enough that 1024 ranks cost a few MB.
inline constexpr size_t kRecentOps = 64;

// One recent NCCL call of a rank: the fields the screens show.
struct OpView {
  uint64_t index = 0;  // position in the process's event stream
  format::OpType op = format::OpType::kUnknown;
  format::EventState state = format::EventState::kEmpty;
  uint64_t comm_id = 0;
  uint64_t op_seq = 0;
  uint64_t count = 0;
  int dtype = -1;
  int peer = -1;
  int result = 0;
  uint32_t stack_id = kNoStackId;
  int64_t enqueue_ns = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  bool incomplete() const {
    return state == format::EventState::kEnqueued || state == format::EventState::kStarted;
  }
  friend bool operator==(const OpView&, const OpView&) = default;
};

// One communicator as one rank sees it.
struct CommView {
  uint64_t comm_id = 0;
  int rank = -1;
  int nranks = 0;
  uint64_t coll_seq = 0;  // collectives this rank issued on it
  uint32_t state = 0;     // kComm* bits of bbox_layout.h
  int64_t ended_ns = 0;
  std::string name;
  friend bool operator==(const CommView&, const CommView&) = default;
};

// Interned stacks of one rank by id, frames with module and offset (names only when borrowed
// from a dump, see SymbolTable).
using StackMap = std::map<uint32_t, format::Stack>;

// The part of a rank that changes only when it makes or completes a call.
struct RankHistory {
  std::vector<OpView> ops;  // the most recent calls (at most kRecentOps), ascending index
  std::vector<CommView> comms;
  std::shared_ptr<const StackMap> stacks = std::make_shared<const StackMap>();
  uint64_t events_total = 0;
  uint64_t events_lost = 0;  // events the reader missed (overwritten or torn), of those it read
};

enum class Liveness {
  kAlive,
  kExited,      // ran its exit handlers (exit mark)
  kCrashed,     // a fatal signal (SIGSEGV, SIGABRT...) marked the black box
  kGone,        // killed from outside: no mark, no dump, and no process with its pid any more
                // (SIGKILL, SIGTERM, the OOM killer)
  kStopped,     // stopped after its dump: as kGone, but it dumped first (cxxrun stops a hung
                // job's ranks once they dumped)
  kStale,       // on another host, and its heartbeat stopped: dead or frozen
  kNotRunning,  // on this host, its heartbeat stopped and /proc shows its process stopped
                // (SIGSTOP, a debugger) or in uninterruptible sleep: RankEntry::process_state
};
// A rank with neither exit nor crash mark whose process is gone: stopped after its dump when it
// wrote one, else killed from outside.
inline Liveness goneLiveness(int64_t last_dump_ns) {
  return last_dump_ns > 0 ? Liveness::kStopped : Liveness::kGone;
}
std::string_view livenessName(Liveness liveness);

// Threads of a snapshot kept per rank (the rank detail lists at most 8), and their frames kept
// (innermost first: the user frame is among the first): 1024 ranks of 100 threads cost little.
inline constexpr size_t kThreadsKept = 8;
inline constexpr size_t kThreadFramesKept = 32;

// The rank's latest thread snapshot (recorder/thread_snapshot.h): where its threads were.
struct ThreadsView {
  int64_t taken_ns = 0;
  format::DumpReason reason = format::DumpReason::kNone;  // kSnapshot: on request, no dump
  size_t total = 0;                                       // threads in the snapshot
  size_t answered = 0;  // of those, the ones that captured their own stack
  size_t listed = 0;    // the ones the rank detail lists: all but the recorder's ("ncclrec-...")
  // The first kThreadsKept of those, the main thread first, then in the snapshot's order; frames
  // cut at kThreadFramesKept.
  std::vector<format::ThreadState> threads;
};
// The view of a whole snapshot of process `pid`.
std::shared_ptr<const ThreadsView> makeThreadsView(int pid, int64_t taken_ns,
                                                   format::DumpReason reason,
                                                   std::vector<format::ThreadState> threads);

// One process that recorded.
struct RankEntry {
  std::string source;  // file path, or "agent HOST:PORT: path"
  std::string host;
  int pid = 0;
  int global_rank = -1;
  int world_size = -1;
  int local_rank = -1;
  std::string run_id;
  std::string exe;
  int64_t start_ns = 0;
  int64_t heartbeat_ns = 0;
  int64_t exit_ns = 0;
  int64_t fatal_ns = 0;
  int fatal_signal = 0;
  Liveness liveness = Liveness::kAlive;
  // kNotRunning: the proc(5) state letter of its process and the kernel function it waits in.
  char process_state = 0;
  std::string process_wchan;
  int64_t hang_event_index = -1;  // the op its watchdog declared hung, -1 when none
  int64_t last_dump_ns = 0;       // its newest dump, 0 when it wrote none
  format::DumpReason last_dump_reason = format::DumpReason::kNone;
  std::shared_ptr<const ThreadsView> threads;  // null when it took no thread snapshot
  std::shared_ptr<const RankHistory> history = std::make_shared<const RankHistory>();
  // Its transport counters (format/model.h Link, from NCCL's profiler plugin), read while it
  // waits in a call (an op incomplete for analyzer::kTransportStallNs or longer) and from dumps;
  // null otherwise.
  std::shared_ptr<const std::vector<format::Link>> links;
};

// "host/pid": a rank's identity across snapshots (the collector's per-rank caches, the rank
// ncclrec-top's detail keeps showing).
std::string rankKey(const RankEntry& rank);

// Names of frames borrowed from the dumps in the directory (the dump writer symbolized them in
// the recorded process), by "module-basename+offset": the same binary loads at different
// addresses in different processes, never at a different offset.
using SymbolTable = std::unordered_map<std::string, format::Frame>;
std::string symbolKey(const std::string& module_path, uint64_t module_offset);

// Derived by analyze() (analysis.h) when the snapshot is built.
struct CommMember {
  size_t rank = 0;        // index into Snapshot::ranks
  int comm_rank = -1;     // rank in the communicator
  int nranks = 0;         // the size this rank made (or asks to make) it with
  uint64_t issued = 0;    // collectives issued on it (coll_seq)
  uint64_t pending = 0;   // op_seq of its oldest incomplete collective on it, 0 when none
  bool ended = false;     // destroyed, finalized or aborted on this rank
  bool creating = false;  // still in the call that creates it (format::commInCreation)
};

// One connection of a communicator's stuck collective (analyzer/connections.h), with its ends'
// global ranks (-1: that end recorded nothing).
struct ConnectionView {
  analyzer::Connection k;
  int from_rank = -1, to_rank = -1;
};

struct CommGroup {
  uint64_t comm_id = 0;
  int nranks = 0;
  std::string name;
  size_t creating = 0;  // members still in its creation: it is being created
  uint64_t max_issued = 0;
  uint64_t min_issued = 0;
  std::vector<CommMember> members;  // lagging first: fewest issued, then incomplete, then rank
  // The oldest collective a member waits in, 0 when none; and, when members recorded transport
  // counters, every connection of the communicator as of then: stalled first, then by (from, to,
  // channel).
  uint64_t stuck_seq = 0;
  std::vector<ConnectionView> connections;
};

struct RankStatus {
  uint64_t lag = 0;              // collectives behind the most advanced rank, over its comms
  int oldest_incomplete = -1;    // index into history->ops, -1 when every op completed
  int64_t last_progress_ns = 0;  // newest completion, else newest call
  int64_t last_call_ns = 0;      // newest call entered
  uint64_t lag_comm = 0;         // the comm where it lags most (0 when it does not)
  uint64_t lag_issued = 0;       // its issued count there
  uint64_t lag_max = 0;          // the most advanced rank's there
};

struct JobSummary {
  int alive = 0;
  int exited = 0;
  int crashed = 0;  // a fatal signal marked it
  int stopped = 0;  // stopped after its dump
  int killed = 0;   // gone without a mark or a dump
  int stale = 0;
  int not_running = 0;
  int slowest = -1;              // index into Snapshot::ranks, -1 when there is none
  int64_t last_progress_ns = 0;  // newest completion over every rank
  bool hang = false;             // progress stopped for longer than hang_after_s
  std::vector<size_t> behind;    // ranks the hang banner names
};

struct Snapshot {
  int64_t now_ns = 0;  // CLOCK_REALTIME when collected; every age is measured from it
  double hang_after_s = 60;
  std::string source_label;        // what is shown: "DIR: run R (newest of 3), attempt_1"
  std::string dir;                 // the directory whose black boxes were read; "" when none
  std::vector<std::string> notes;  // what could not be read, one line each, naming the file
  std::vector<RankEntry> ranks;    // by global rank, then host, then pid
  std::shared_ptr<const SymbolTable> symbols = std::make_shared<const SymbolTable>();
  std::vector<std::string> library_frames;  // Python library layers besides the defaults
  // Derived.
  // The call-site rule (analyzer/site_rule.h, the analyzer's), learnt from every rank's stacks
  // with the borrowed names: which frame of a stack the CALL SITE column shows.
  std::shared_ptr<const analyzer::SiteRule> site_rule =
      std::make_shared<const analyzer::SiteRule>();
  std::vector<RankStatus> status;  // parallel to ranks
  std::vector<CommGroup> comms;    // most ranks first, then by id
  JobSummary summary;
};

}  // namespace ncclrec::live
