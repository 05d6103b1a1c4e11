#include "trainer/bucket_plan.h"

#include <algorithm>

namespace ncclrec::trainer {

std::vector<Bucket> planBuckets(const std::vector<ParamInfo>& params, int64_t cap_bytes,
                                int64_t first_cap_bytes) {
  std::vector<Bucket> buckets;
  Bucket open;
  const auto limit = [&] {
    if (cap_bytes <= 0) return INT64_MAX;
    return buckets.empty() ? std::min(cap_bytes, first_cap_bytes) : cap_bytes;
  };
  const auto close = [&] {
    if (!open.params.empty()) buckets.push_back(std::move(open));
    open = Bucket();
  };
  for (size_t k = params.size(); k-- > 0;) {
    const ParamInfo& p = params[k];
    const int64_t bytes = p.numel * p.element_size;
    if (!open.params.empty() && params[open.params.front()].element_size != p.element_size) {
      close();
    }
    open.params.push_back(k);
    open.offsets.push_back(open.numel);
    open.numel += p.numel;
    open.bytes += bytes;
    // As DDP: the parameter that reaches the cap stays in, and the bucket is closed.
    if (open.bytes >= limit()) close();
  }
  close();
  return buckets;
}

}  // namespace ncclrec::trainer
