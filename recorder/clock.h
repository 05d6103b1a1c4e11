// Clocks of the record path: clock_gettime goes through the vDSO (no syscall).
#pragma once

#include <time.h>

#include <cstdint>

namespace ncclrec::recorder {

// Wall-clock nanoseconds (CLOCK_REALTIME): comparable across the ranks of a job on hosts whose
// clocks are synchronized, which is what the analyzer needs to order ranks' events.
inline int64_t realtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

inline int64_t monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

}  // namespace ncclrec::recorder
