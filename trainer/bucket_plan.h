// How gradients are grouped into all-reduce buckets, as PyTorch's DDP does it: parameters in
// reverse registration order (backward produces the last layer's gradients first), a bucket
// closed as soon as it holds --bucket-cap-mb or more (the parameter that crosses the cap stays
// in), the first bucket closed at 1 MiB already so that communication starts early in backward.
// Every rank computes the same plan from the same shapes, so the ranks issue the same all-reduces
// in the same order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ncclrec::trainer {

// PyTorch's dist._DEFAULT_FIRST_BUCKET_BYTES.
inline constexpr int64_t kFirstBucketBytes = int64_t{1} << 20;

struct ParamInfo {
  std::string name;
  int64_t numel = 0;
  int64_t element_size = 4;
};

struct Bucket {
  std::vector<size_t> params;    // indices into the ParamInfo list, in packing order
  std::vector<int64_t> offsets;  // element offset of each of them in the flat bucket
  int64_t numel = 0;
  int64_t bytes = 0;
};

// Buckets in launch order; a bucket never mixes element sizes. cap_bytes <= 0 puts every
// parameter in one bucket.
std::vector<Bucket> planBuckets(const std::vector<ParamInfo>& params, int64_t cap_bytes,
                                int64_t first_cap_bytes = kFirstBucketBytes);

}  // namespace ncclrec::trainer
