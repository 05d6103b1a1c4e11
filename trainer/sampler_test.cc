#include "trainer/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

namespace ncclrec::trainer {
namespace {

TEST(PermutationTest, IsAPermutationAndDependsOnTheSeedOnly) {
  const std::vector<int64_t> p = permutation(1000, 7);
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_EQ(permutation(1000, 7), p);
  EXPECT_NE(permutation(1000, 8), p);
  EXPECT_TRUE(permutation(0, 1).empty());
  EXPECT_EQ(permutation(1, 1), std::vector<int64_t>{0});
}

TEST(DistributedSamplerTest, ShardsAreDisjointAndCoverTheDataset) {
  for (int world : {1, 2, 3, 4, 7}) {
    std::set<int64_t> seen;
    int64_t total = 0;
    for (int r = 0; r < world; ++r) {
      DistributedSampler s(100, world, r, /*shuffle=*/true, 3, /*drop_last=*/false);
      const auto idx = s.indices();
      EXPECT_EQ(static_cast<int64_t>(idx.size()), s.numSamples());
      EXPECT_EQ(s.numSamples(), (100 + world - 1) / world);
      for (size_t i = 0; i < idx.size(); ++i) {
        if (!s.isPadding(static_cast<int64_t>(i))) {
          EXPECT_TRUE(seen.insert(idx[i]).second) << "index " << idx[i] << " twice";
          ++total;
        }
      }
    }
    EXPECT_EQ(total, 100) << "world " << world;
    EXPECT_EQ(seen.size(), 100u);
  }
}

TEST(DistributedSamplerTest, PaddingRepeatsTheFirstIndicesAsPyTorchDoes) {
  // 10 samples on 4 ranks: 12 positions, the last two repeat positions 0 and 1.
  std::vector<int64_t> order;
  for (int r = 0; r < 4; ++r) {
    DistributedSampler s(10, 4, r, /*shuffle=*/false, 0, /*drop_last=*/false);
    const auto idx = s.indices();
    ASSERT_EQ(idx.size(), 3u);
    EXPECT_EQ(idx[0], r);
    EXPECT_EQ(s.isPadding(2), r >= 2);
    if (r >= 2) {
      EXPECT_EQ(idx[2], r - 2);
    }
  }
}

TEST(DistributedSamplerTest, DropLastCutsTheTail) {
  int64_t total = 0;
  for (int r = 0; r < 4; ++r) {
    DistributedSampler s(10, 4, r, /*shuffle=*/true, 5, /*drop_last=*/true);
    EXPECT_EQ(s.numSamples(), 2);
    const auto idx = s.indices();
    EXPECT_EQ(idx.size(), 2u);
    for (size_t i = 0; i < idx.size(); ++i) EXPECT_FALSE(s.isPadding(int64_t(i)));
    total += static_cast<int64_t>(idx.size());
  }
  EXPECT_EQ(total, 8);
}

TEST(DistributedSamplerTest, SetEpochReshufflesTheSameWayOnEveryRank) {
  DistributedSampler a(64, 2, 0, true, 11, false), b(64, 2, 0, true, 11, false);
  a.setEpoch(3);
  b.setEpoch(3);
  EXPECT_EQ(a.indices(), b.indices());
  const auto epoch3 = a.indices();
  a.setEpoch(4);
  EXPECT_NE(a.indices(), epoch3);
  DistributedSampler fixed(64, 2, 0, /*shuffle=*/false, 11, false);
  const auto e0 = fixed.indices();
  fixed.setEpoch(9);
  EXPECT_EQ(fixed.indices(), e0);
}

TEST(BatchStreamTest, EpochsFollowEachOtherAndEveryRankYieldsAsManyBatches) {
  // 50 samples, 3 ranks: 17 per rank, batches of 4 -> 4 per epoch (one sample dropped).
  BatchStream s(DistributedSampler(50, 3, 1, true, 2, false), 4);
  EXPECT_EQ(s.batchesPerEpoch(), 4);
  std::vector<int64_t> batch;
  std::map<int64_t, int> per_epoch;
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(s.next(&batch));
    EXPECT_EQ(batch.size(), 4u);
    ++per_epoch[s.epoch()];
  }
  EXPECT_EQ(per_epoch, (std::map<int64_t, int>{{0, 4}, {1, 4}, {2, 4}}));
}

TEST(BatchStreamTest, SeekResumesAtTheSameBatch) {
  BatchStream a(DistributedSampler(40, 2, 0, true, 9, false), 5), b = a;
  std::vector<int64_t> batch, expected;
  for (int i = 0; i < 7; ++i) a.next(&batch);
  a.next(&expected);
  b.seek(7);
  b.next(&batch);
  EXPECT_EQ(batch, expected);
  EXPECT_EQ(b.epoch(), 1);
}

TEST(BatchStreamTest, AShortShardEnds) {
  BatchStream s(DistributedSampler(40, 2, 0, true, 9, false), 5, /*max_batches=*/3);
  std::vector<int64_t> batch;
  EXPECT_TRUE(s.next(&batch));
  EXPECT_TRUE(s.next(&batch));
  EXPECT_TRUE(s.next(&batch));
  EXPECT_FALSE(s.next(&batch));
  EXPECT_EQ(s.consumed(), 3);
}

}  // namespace
}  // namespace ncclrec::trainer
