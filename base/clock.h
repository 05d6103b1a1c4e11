// Clocks, for every component: clock_gettime through the vDSO (no syscall, no allocation, no
// lock), so the record path and signal handlers may call these too (clock_gettime is
// async-signal-safe).
#pragma once

#include <time.h>

#include <cstdint>

namespace ncclrec::base {

// Wall-clock nanoseconds (CLOCK_REALTIME): the clock of every timestamp in black boxes and dumps,
// comparable across the ranks of a job on hosts whose clocks are synchronized.
inline int64_t realtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// CLOCK_REALTIME to the kernel's tick (1-4 ms), at a fraction of realtimeNs()'s cost: for
// timestamps taken many times per op whose use is seconds-scale (the link table's "last moved").
inline int64_t coarseRealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// Monotonic nanoseconds (CLOCK_MONOTONIC): for intervals within one process.
inline int64_t monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

}  // namespace ncclrec::base
