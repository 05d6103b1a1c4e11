// Which samples each rank reads: torch.utils.data.distributed.DistributedSampler's semantics,
// and the stream of micro-batches the training loop pulls from it, epoch after epoch.
#pragma once

#include <cstdint>
#include <vector>

namespace ncclrec::trainer {

// Deterministic permutation of [0, n): Fisher-Yates driven by splitmix64, so every rank (and
// every build) derives the same order from the same seed.
std::vector<int64_t> permutation(int64_t n, uint64_t seed);

// As PyTorch's DistributedSampler: every epoch the dataset is shuffled with seed + epoch (the same
// order on every rank), then either padded by repeating its first indices (default) or cut
// (drop_last) to a multiple of the world size, and rank r takes positions r, r + world, ... So the
// shards are disjoint (but for the padding), together cover the dataset, and have the same length
// on every rank: the ranks run the same number of steps and issue the same collectives.
class DistributedSampler {
 public:
  // Precondition: dataset_size >= world > rank >= 0 (checked by the options).
  DistributedSampler(int64_t dataset_size, int world, int rank, bool shuffle, uint64_t seed,
                     bool drop_last);

  // Call at the start of each epoch, before indices(): without it every epoch has one order.
  void setEpoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }

  // Samples per rank per epoch, equal on every rank.
  int64_t numSamples() const { return num_samples_; }
  int64_t totalSize() const { return num_samples_ * world_; }
  // This rank's indices for the current epoch.
  std::vector<int64_t> indices() const;
  // Whether position i of indices() repeats an index only to pad the shards to equal length
  // (evaluation must not count it twice).
  bool isPadding(int64_t i) const { return rank_ + i * world_ >= dataset_size_; }

 private:
  int64_t dataset_size_;
  int world_;
  int rank_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
  int64_t num_samples_;
  int64_t epoch_ = 0;
};

// Micro-batches of `batch_size` indices from the sampler's shard, epoch after epoch (calling
// setEpoch at each), the last partial batch of an epoch dropped (DataLoader's drop_last), so each
// rank yields the same number of batches per epoch.
class BatchStream {
 public:
  // max_batches < 0: endless. Otherwise the stream ends after that many batches in all (a shard
  // that runs out early, as with uneven data).
  BatchStream(DistributedSampler sampler, int64_t batch_size, int64_t max_batches = -1);

  // The next batch; false when the stream ended.
  bool next(std::vector<int64_t>* batch);
  // Continue as if `batches` had been read already (resuming from a checkpoint).
  void seek(int64_t batches);

  int64_t batchesPerEpoch() const { return per_epoch_; }
  int64_t epoch() const { return sampler_.epoch(); }
  int64_t consumed() const { return consumed_; }

 private:
  void loadEpoch(int64_t epoch);

  DistributedSampler sampler_;
  int64_t batch_size_;
  int64_t max_batches_;
  int64_t per_epoch_;
  int64_t consumed_ = 0;
  std::vector<int64_t> order_;  // the current epoch's shard
};

}  // namespace ncclrec::trainer
