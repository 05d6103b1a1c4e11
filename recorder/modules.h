// The module map: which ELF objects are loaded where, with their GNU build ids, so that the
// return addresses in the stack table can be symbolized later, offline if need be.
#pragma once

#include "format/bbox_layout.h"

namespace ncclrec::recorder {

// Writes one ModuleRecord per loaded object (dl_iterate_phdr order: the main program first) into
// the black box's module table, up to module_capacity, and sets module_count to the number
// written. Call it once at start and again at dump time to catch objects dlopen'ed since:
// records that did not change are left alone, changed ones are unpublished (valid = 0) while
// they are rewritten, and records past the new count are unpublished. Returns the number of
// records written, or -1 when the header has no module table.
// Not on the record path (takes a mutex, holds the loader's lock while it runs); never call it
// from a signal handler.
int writeModuleMap(format::BboxHeader* header);

}  // namespace ncclrec::recorder
