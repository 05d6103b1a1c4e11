// Clocks of the record path: the base ones (base/clock.h, through the vDSO, no
// syscall, no allocation), under the names the recorder's files call them by.
#pragma once

#include "base/clock.h"

namespace ncclrec::recorder {

using base::coarseRealtimeNs;
using base::monotonicNs;
using base::realtimeNs;

}  // namespace ncclrec::recorder
