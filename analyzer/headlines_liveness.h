// The headlines of the hangs inside an op every rank entered, where nothing of the program
// diverged: a rank whose process stopped running (rank_not_running), a connection that stopped
// moving data (transport_stalled), a GPU that never started or never finished its kernel
// (device_stalled), nodes that went silent (node_unreachable), and the ranks that share one GPU
// (device_collision): the words, from the verdict (culprits, waiters, op, sequence number,
// communicator, call site: what the JSON gives) and the facts below. Why a process does not run
// (`NotRunning`) is also what the stop headlines (headlines.h) and the status list say of it. The
// op-order families are in headlines.h, the creation family in headlines_creation.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/verdict.h"

namespace ncclrec::analyzer {

// Why a rank's process runs none of its code: what the launcher read of it (proc(5) state letter
// and kernel wait channel), or, without a launcher, what the rank's own last dump saw of the
// thread that calls NCCL; and, where a rule looks for it, a black box that stopped beating and
// left no dump.
struct NotRunning {
  char process_state = 0;  // the launcher's: 'T' stopped, 't' traced, 'D' uninterruptible,
                           // another letter: it runs; 0: no launcher saw it
  std::string wchan;       // the process's wait channel ('D'), or the thread's
  int thread = 0;          // no launcher: the thread that calls NCCL, in 'D' when it dumped
  int64_t silent_ns = -1;  // no heartbeat for this long, and no dump (-1: none of that)
  bool said() const;       // whether any of it says the process does not run
};

// "its process is stopped (SIGSTOP, a debugger or a job-control stop)", "its process is in
// uninterruptible sleep in io_schedule (...)", "its thread that calls NCCL (4242) was in
// uninterruptible sleep in pipe_read when it dumped", then ", no heartbeat for 9.0s and no dump
// (frozen or killed: no launcher saw its process)"; "" when nothing says it does not run.
std::string notRunningPhrase(const NotRunning& n);

// rank_not_running inside the verdict's op: "rank 3 stopped running inside ncclAllReduce #3 on
// comm c0ffee00 from f() a.cc:3, which every rank issued with the same arguments: <why>; ranks
// 0-2 wait for it in #3". `why` is the first culprit's.
std::string stoppedInsideHeadline(const Verdict& v, const NotRunning& why);

// A rank as a transport or device headline places it: "rank 2 (host a)"; no host recorded:
// "rank 2".
struct RankHost {
  int rank = -1;
  std::string host;
};
std::string rankHostPhrase(const RankHost& r);

// transport_stalled (the verdict: the op, the ranks at the ends of the stalled connections, the
// others waiting): the first stalled connection, from `from` to `to`, and what the others share.
struct TransportStall {
  RankHost from, to;
  bool straddle = false;  // some ranks got all their data of the op and wait in the next one
  uint64_t lost = 0;      // steps `from` sent that `to` never received
  int channel = 0;
  int64_t last_sent_ns = 0;                             // clock time of `from`'s last send
  uint64_t op_received = 0;                             // `to`'s steps of the op received, of
  uint64_t op_steps = 0;                                // the op's steps (0: unknown)
  int64_t quiet_ns = 0;                                 // `to` received nothing for
  size_t more = 0;                                      // other stalled connections
  std::set<std::pair<std::string, std::string>> paths;  // (from host, to host) of each stalled one
};
// "data stopped moving between rank 2 (host a) and rank 3 (host b) inside ncclAllReduce #6 on
// comm c0ffee00 from f() a.cc:3, which every rank issued with the same arguments: rank 2 sent 3
// steps on channel 0 that rank 3 never received (its last send at 10:32:27.400); rank 3 has 5 of
// the 8 steps of #6 and received nothing for 9.8s; ranks 0-1 wait behind it; suspect the network
// path a -> b".
std::string transportStalledHeadline(const Verdict& v, const TransportStall& s);

// A rank's GPU as a device headline names it: "the GPU of rank 3 (host vm, bus 0000:3b:00.0)",
// "(host vm; its bus id is not recorded)".
struct Gpu {
  RankHost rank;
  std::string bus_id;  // its communicator's record of it; "" when none
};

// device_stalled (the verdict: the op the culprits are held in, their GPUs' ranks, the others).
struct DeviceStall {
  enum class How {
    // "the GPU of rank 3 (...) never started the kernel of ncclAllReduce #3 on comm c0ffee00
    // from f() a.cc:3, launched 9.0s ago, while the GPUs of ranks 0-2 run theirs; ...": `ago_ns`
    kNeverStarted,
    // by the kernel record's totals: "..., issued 9.0s ago: it runs no kernel channel of the
    // communicator while 4 launched channels wait (ops launched behind it), ...": `ago_ns`,
    // `queued`
    kQueuedBehind,
    // "the GPU of rank 3 (...) started the kernel of ... at 10:32:27.400 and it never finished,
    // though every step sent to it arrived, ...": `started_ns`
    kNeverFinished,
  };
  How how = How::kNeverStarted;
  std::vector<Gpu> gpus;  // the culprits', in the verdict's order
  int64_t ago_ns = 0;
  int64_t queued = 0;
  int64_t started_ns = 0;
};
std::string deviceStalledHeadline(const Verdict& v, const DeviceStall& s);

// device_collision: ranks of one host whose communicator creation was refused because they use
// one GPU, each group as "ranks 0-1 on host h both use device 0 (bus 0000:1a:00.0)", or, seen
// through CUDA_VISIBLE_DEVICES, "one GPU (bus ...; device 0-1 in their own numbering, ...)".
struct SharedGpu {
  std::vector<int> ranks;
  std::string host;
  std::set<int> ordinals;  // the device numbers the ranks used (-1: not recorded)
  std::string id;          // "bus <bus id>", else the uuid; "" when neither is recorded
};
// The verdict is the refused creation (op, communicator, call site); the largest group first.
std::string deviceCollisionHeadline(const Verdict& v, const std::vector<SharedGpu>& groups);

// node_unreachable (the verdict: the op every recorded rank waits in, the silent nodes' ranks as
// culprits, the recorded ranks as waiters).
struct SilentNodeRanks {
  int node = 0;
  std::string host;
  std::vector<int> ranks;  // its ranks with no data
  double silent_s = 0;
};
struct Unreachable {
  std::vector<SilentNodeRanks> nodes;
  std::vector<int> ahead;    // ranks that got through the op and wait in the next one
  std::vector<int> no_data;  // ranks with no data that are on no silent node
};
// "node 1 (host b, ranks 2-3) not heard from for 3.0 s; ranks 0-1 wait for them in
// ncclAllReduce #6 on comm c0ffee00 and agree on every op before it: the network between node 1
// and node 0 stopped, or that node did".
std::string nodeUnreachableHeadline(const Verdict& v, const Unreachable& u);
// The verdict's missing-evidence line: where the silent nodes' own recordings are.
std::string nodeUnreachableMissing(const Verdict& v, const Unreachable& u);

}  // namespace ncclrec::analyzer
