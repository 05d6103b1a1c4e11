// A check outside the per-slot alignment: when nothing hangs, a rank that is consistently the
// last to reach each collective (slow_rank).
//
// device_collision (two ranks of one host on one GPU) is not diagnosed: events carry the device
// ordinal, which is relative to each process's CUDA_VISIBLE_DEVICES (every rank may see its own
// GPU as device 0); the recorder would need the device's UUID or PCI bus id.
#pragma once

#include <optional>

#include "analyzer/callsite.h"
#include "analyzer/verdict.h"
#include "format/reader.h"

namespace ncclrec::analyzer {

// Over the completed collectives issued by every rank of a communicator (at least kSlowMinOps),
// one rank enqueued last in a share of them that chance (every rank equally likely to be last)
// would give one of the ranks less often than kSlowChance, the others waited for it (each
// collective's last enqueue minus the one before) kSlowMinWaitNs in all, and either that share is
// at least kSlowShare, or their waiting for it is at least kSlowWaitShare of all their waiting and
// kSlowWaitOfSpan of the time the collectives span: a rank late to one collective of each step is
// a straggler too, a rank a few microseconds late in a short run is not.
inline constexpr size_t kSlowMinOps = 8;
inline constexpr double kSlowShare = 0.75;
inline constexpr double kSlowChance = 1e-3;
inline constexpr double kSlowWaitShare = 0.75;
inline constexpr double kSlowWaitOfSpan = 0.05;
inline constexpr double kSlowMinWaitNs = 100e6;
std::optional<Verdict> findSlowRank(const format::LoadedSet& set, const CallSites& sites);

}  // namespace ncclrec::analyzer
