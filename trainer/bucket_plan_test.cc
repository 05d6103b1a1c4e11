#include "trainer/bucket_plan.h"

#include <gtest/gtest.h>

namespace ncclrec::trainer {
namespace {

std::vector<ParamInfo> floats(const std::vector<int64_t>& numels) {
  std::vector<ParamInfo> out;
  for (size_t i = 0; i < numels.size(); ++i) out.push_back({"p" + std::to_string(i), numels[i], 4});
  return out;
}

TEST(BucketPlanTest, ReverseOrderAndOffsets) {
  const auto plan = planBuckets(floats({10, 20, 30}), 1 << 20);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].params, (std::vector<size_t>{2, 1, 0}));
  EXPECT_EQ(plan[0].offsets, (std::vector<int64_t>{0, 30, 50}));
  EXPECT_EQ(plan[0].numel, 60);
  EXPECT_EQ(plan[0].bytes, 240);
}

TEST(BucketPlanTest, CapSplitsAndTheFirstBucketIsSmaller) {
  // 100 floats each (400 bytes); cap 1000 bytes, first bucket 500 bytes. As DDP, a bucket is
  // closed once it reaches its cap, with the parameter that crossed it.
  const auto plan = planBuckets(floats({100, 100, 100, 100, 100, 100}), 1000, 500);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].params, (std::vector<size_t>{5, 4}));
  EXPECT_EQ(plan[1].params, (std::vector<size_t>{3, 2, 1}));
  EXPECT_EQ(plan[1].bytes, 1200);
  EXPECT_EQ(plan[2].params, (std::vector<size_t>{0}));
}

TEST(BucketPlanTest, EveryParameterExactlyOnce) {
  const auto params = floats({3, 1000, 7, 250000, 1, 64, 64, 300000});
  for (int64_t cap : {int64_t{1}, int64_t{4096}, int64_t{1} << 20, int64_t{25} << 20}) {
    const auto plan = planBuckets(params, cap);
    std::vector<int> seen(params.size());
    for (const Bucket& b : plan) {
      int64_t numel = 0;
      for (size_t k = 0; k < b.params.size(); ++k) {
        ++seen[b.params[k]];
        EXPECT_EQ(b.offsets[k], numel);
        numel += params[b.params[k]].numel;
      }
      EXPECT_EQ(b.numel, numel);
    }
    for (int n : seen) EXPECT_EQ(n, 1) << "cap " << cap;
  }
}

TEST(BucketPlanTest, TinyCapGivesOneBucketPerParameterAndZeroMeansOneBucket) {
  EXPECT_EQ(planBuckets(floats({5, 5, 5}), 1).size(), 3u);
  EXPECT_EQ(planBuckets(floats({5, 5, 5}), 0).size(), 1u);
}

TEST(BucketPlanTest, ElementSizesAreNotMixed) {
  std::vector<ParamInfo> params = {{"a", 4, 4}, {"b", 4, 2}, {"c", 4, 2}};
  const auto plan = planBuckets(params, 1 << 20);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].params, (std::vector<size_t>{2, 1}));
  EXPECT_EQ(plan[1].params, (std::vector<size_t>{0}));
}

}  // namespace
}  // namespace ncclrec::trainer
