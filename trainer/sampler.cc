#include "trainer/sampler.h"

#include <cstddef>
#include <numeric>
#include <utility>

namespace ncclrec::trainer {
namespace {

uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in [0, bound) without modulo bias (Lemire's multiply-and-reject).
uint64_t below(uint64_t bound, uint64_t* state) {
  for (;;) {
    const unsigned __int128 m = static_cast<unsigned __int128>(splitmix64(state)) * bound;
    const uint64_t low = static_cast<uint64_t>(m);
    if (low >= bound || low >= (-bound) % bound) return static_cast<uint64_t>(m >> 64);
  }
}

}  // namespace

std::vector<int64_t> permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  uint64_t state = seed;
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(below(static_cast<uint64_t>(i + 1), &state));
    std::swap(p[static_cast<size_t>(i)], p[static_cast<size_t>(j)]);
  }
  return p;
}

DistributedSampler::DistributedSampler(int64_t dataset_size, int world, int rank, bool shuffle,
                                       uint64_t seed, bool drop_last)
    : dataset_size_(dataset_size),
      world_(world),
      rank_(rank),
      shuffle_(shuffle),
      seed_(seed),
      drop_last_(drop_last) {
  // PyTorch: with drop_last the tail that does not divide evenly is dropped, else the dataset is
  // padded up to the next multiple of the world size.
  num_samples_ = drop_last_ ? dataset_size_ / world_ : (dataset_size_ + world_ - 1) / world_;
}

std::vector<int64_t> DistributedSampler::indices() const {
  std::vector<int64_t> all(static_cast<size_t>(dataset_size_));
  if (shuffle_) {
    all = permutation(dataset_size_, seed_ + static_cast<uint64_t>(epoch_));
  } else {
    std::iota(all.begin(), all.end(), 0);
  }
  const int64_t total = totalSize();
  // Pad by repeating from the start (as often as needed when the dataset is tiny), or cut.
  for (int64_t i = dataset_size_; i < total; ++i)
    all.push_back(all[static_cast<size_t>(i % dataset_size_)]);
  all.resize(static_cast<size_t>(total));
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(num_samples_));
  for (int64_t i = rank_; i < total; i += world_) mine.push_back(all[static_cast<size_t>(i)]);
  return mine;
}

BatchStream::BatchStream(DistributedSampler sampler, int64_t batch_size, int64_t max_batches)
    : sampler_(std::move(sampler)),
      batch_size_(batch_size),
      max_batches_(max_batches),
      per_epoch_(sampler_.numSamples() / batch_size) {
  loadEpoch(0);
}

void BatchStream::loadEpoch(int64_t epoch) {
  sampler_.setEpoch(epoch);
  order_ = sampler_.indices();
}

void BatchStream::seek(int64_t batches) {
  consumed_ = batches;
  if (per_epoch_ > 0) loadEpoch(batches / per_epoch_);
}

bool BatchStream::next(std::vector<int64_t>* batch) {
  if (per_epoch_ <= 0 || (max_batches_ >= 0 && consumed_ >= max_batches_)) return false;
  const int64_t epoch = consumed_ / per_epoch_;
  if (epoch != sampler_.epoch()) loadEpoch(epoch);
  const int64_t first = (consumed_ % per_epoch_) * batch_size_;
  batch->assign(order_.begin() + first, order_.begin() + first + batch_size_);
  ++consumed_;
  return true;
}

}  // namespace ncclrec::trainer
