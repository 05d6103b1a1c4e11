// The device_stalled rule: every rank of a communicator waits inside the same collective (or, in
// a ring, some already in the next one) and every rank runs, but the ranks' kernel records
// (format/bbox_layout.h kKernelPeer: ops launched, kernel channels started and stopped on the
// GPU, from NCCL's KernelCh events through the profiler plugin) say that one rank's GPU holds the
// op back:
//   - never started: the op was launched on every rank a second or more ago, and its kernel
//     channels run on every other rank's GPU but never started on this one's: its stream is held
//     by a kernel queued before that does not end, or the GPU stopped (Xid);
//   - never finished: its kernel started and did not stop a second or more later while its
//     peers' kernels finished the op (they wait in the next one), and no connection into it is
//     stalled (the transport counters say its data arrived).
// The culprits are those ranks, named with their GPU's PCI bus id (the comm record's). In the
// table before transport_stalled: a receiver whose kernel never runs leaves its senders' steps
// unconsumed, the symptom, not the cause.
#pragma once

#include <optional>

#include "analyzer/engine.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer::engine {

// How long a kernel must have been waited for (launched and not started, or started and not
// stopped while its peers' stopped) to count.
inline constexpr int64_t kDeviceStallNs = 1'000'000'000;

// device_stalled on the first communicator with ops pending (Engine::firstPending), as above;
// nullopt otherwise (no kernel records: NCCL's profiler plugin not in use, or no link table).
std::optional<Verdict> findDeviceStalled(const Engine& en);

}  // namespace ncclrec::analyzer::engine
