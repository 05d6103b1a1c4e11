// The trainer's checkpoint file: named float32 tensors (parameters, momentum buffers) and the step
// they were taken after. Written by rank 0 only, atomically: to a temporary name, fsync'ed, then
// renamed over the old file, so a reader (or a resume after a crash mid-write) sees either the old
// checkpoint or the new one, never half of one.
//
// Layout (host byte order; every supported host is little-endian):
//   "NCRTCKPT" | u32 version (1) | u32 tensor count | i64 step | u64 model fingerprint
//   per tensor: u32 name length | name | u32 ndim | i64 dims[ndim] | f32 data[numel]
//   u64 FNV-1a of every byte before it
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace ncclrec::trainer {

struct CheckpointTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;  // numel = product of shape
};

struct Checkpoint {
  int64_t step = 0;
  uint64_t fingerprint = 0;  // of the model's shape, so a resume into another model is refused
  std::vector<CheckpointTensor> tensors;
};

// FNV-1a, 64 bits, continuing from `hash` (the offset basis by default).
uint64_t fnv1a64(const void* data, size_t size, uint64_t hash = 0xcbf29ce484222325ull);

// Creates the directory of `path` when missing.
base::Status writeCheckpointFile(const std::string& path, const Checkpoint& checkpoint);
// Fails with one line naming the file and what is wrong with it (missing, not a checkpoint, a
// newer version, truncated, checksum mismatch).
base::StatusOr<Checkpoint> readCheckpointFile(const std::string& path);

}  // namespace ncclrec::trainer
