// The derived part of a Snapshot (snapshot.h): communicators grouped across ranks, how far each
// rank lags, the slowest rank, and whether progress stopped long enough to call it a hang. Pure
// functions of the snapshot's ranks and clock, run on the collector thread.
#pragma once

#include "live/snapshot.h"

namespace ncclrec::live {

// Fills snapshot->status, ->comms, ->summary and ->site_rule from ranks, symbols, library_frames,
// now_ns and hang_after_s.
//
// A rank lags on a communicator by the number of collectives the most advanced rank issued there
// beyond its own; the slowest rank lags most (ties: the one silent longest), or, when no rank
// lags, the one that entered its newest call last. A hang is an op left incomplete longer than
// hang_after_s while no rank made a call or completed one for that long; the banner then names
// the ranks behind: those that lag, else those not alive, else every rank waiting. A
// communicator a member waits on gets its stuck collective and, from the members' transport
// counters, its connections (CommGroup::connections).
void analyze(Snapshot* snapshot);

// Seconds since `ns` at `now_ns`, never negative.
double ageSeconds(int64_t now_ns, int64_t ns);

}  // namespace ncclrec::live

namespace ncclrec::live {

// The op the rank detail explains: the rank's oldest incomplete op, else its last op; index into
// rank.history->ops, -1 when it has none.
int focusOp(const RankEntry& rank, const RankStatus& status);
// The interned stack of `op`, nullptr when it has none or the table lacks it.
const format::Stack* stackOf(const RankEntry& rank, const OpView& op);
// Rows the rank detail needs for the focus op's stack: its frames, or 1 for "no stack".
int focusStackRows(const RankEntry& rank, const RankStatus& status);
// Threads the rank detail lists for the rank: ThreadsView::listed, 0 without a snapshot.
inline int listedThreads(const RankEntry& rank) {
  return rank.threads == nullptr ? 0 : static_cast<int>(rank.threads->listed);
}

}  // namespace ncclrec::live
