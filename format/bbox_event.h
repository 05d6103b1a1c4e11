#pragma once
// One black-box ring slot (bbox_layout.h's Event, copied out by readEvent) as the model's
// EventFields: the one field-by-field conversion that the dump reader (bbox_reader.cc) and the
// live watchers (live/bbox_watch.cc) both use.

#include <cstdint>

#include "format/bbox_layout.h"
#include "format/model.h"

namespace ncclrec::format {

// `index` is the slot's position in the process's event stream. A dtype of 0xff (none) is -1.
EventFields eventFieldsOf(const Event& e, uint64_t index);

}  // namespace ncclrec::format
