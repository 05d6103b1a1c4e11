// Clocks of the record path: the base ones (recorder/format/base/clock.h, through the vDSO, no
// syscall, no allocation), under the names the recorder's files call them by.
#pragma once

#include "recorder/format/base/clock.h"

namespace ncclrec::recorder {

using base::monotonicNs;
using base::realtimeNs;

}  // namespace ncclrec::recorder
