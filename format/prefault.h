// Readers fill vectors of millions of events (1024 ranks x 2000 events is 270 MiB of model). On
// some virtual machines a page fault costs several microseconds, and first-touch faults were more
// than half of ncclrec-analyze's load time (docs/performance.md). The kernel can instead populate
// a whole range in one call (MADV_POPULATE_WRITE, Linux 5.14); where it cannot, nothing changes.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ncclrec::format {

// Populates the whole pages inside [begin, end) for writing. Best effort: a kernel without
// MADV_POPULATE_WRITE answers EINVAL and the pages fault in one by one as before.
inline void prefaultForWrite(const void* begin, const void* end) {
  constexpr uintptr_t kPage = 4096;  // a larger page size only leaves more of the range alone
  const uintptr_t first = (reinterpret_cast<uintptr_t>(begin) + kPage - 1) & ~(kPage - 1);
  const uintptr_t last = reinterpret_cast<uintptr_t>(end) & ~(kPage - 1);
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_WRITE);
}

// Reserves room for `extra` more elements and populates the unused capacity.
template <typename T>
void reserveAndPrefault(std::vector<T>* v, size_t extra) {
  v->reserve(v->size() + extra);
  prefaultForWrite(v->data() + v->size(), v->data() + v->capacity());
}

}  // namespace ncclrec::format
