#include "hostnccl/reduce_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace ncclrec::hostnccl {
namespace {

TEST(ReduceOpsTest, HalfConversionsMatchIeee) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);                      // rounds up to infinity
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);         // smallest subnormal
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(std::nanf("")))));
  for (unsigned bits = 0; bits < 0x7c00; bits += 37) {
    EXPECT_EQ(floatToHalf(halfToFloat(static_cast<uint16_t>(bits))), bits);
  }
}

TEST(ReduceOpsTest, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16ToFloat(0x4040), 3.0f);
  float tie = 1.0f + std::ldexp(1.0f, -8);  // halfway between 1 and the next bf16
  EXPECT_EQ(floatToBf16(tie), 0x3f80);
}

TEST(ReduceOpsTest, Fp8FormatsSaturateAndRoundTrip) {
  EXPECT_EQ(e4m3ToFloat(floatToE4m3(448.0f)), 448.0f);
  EXPECT_EQ(e4m3ToFloat(floatToE4m3(1000.0f)), 448.0f);
  EXPECT_EQ(e4m3ToFloat(floatToE4m3(-3.0f)), -3.0f);
  EXPECT_TRUE(std::isnan(e4m3ToFloat(0x7f)));
  EXPECT_EQ(e5m2ToFloat(floatToE5m2(57344.0f)), 57344.0f);
  EXPECT_EQ(e5m2ToFloat(floatToE5m2(0.5f)), 0.5f);
  for (unsigned v = 0; v < 0x7f; ++v) {  // every finite positive e4m3 value
    EXPECT_EQ(floatToE4m3(e4m3ToFloat(static_cast<uint8_t>(v))), v);
  }
}

TEST(ReduceOpsTest, ReducesEveryIntegerKind) {
  std::vector<int32_t> a = {1, -5, 7}, b = {2, 3, -9};
  auto sum = a;
  reduceInto(sum.data(), b.data(), 3, ncclInt32, ReduceKind::kSum);
  EXPECT_EQ(sum, (std::vector<int32_t>{3, -2, -2}));
  auto prod = a;
  reduceInto(prod.data(), b.data(), 3, ncclInt32, ReduceKind::kProd);
  EXPECT_EQ(prod, (std::vector<int32_t>{2, -15, -63}));
  auto mx = a;
  reduceInto(mx.data(), b.data(), 3, ncclInt32, ReduceKind::kMax);
  EXPECT_EQ(mx, (std::vector<int32_t>{2, 3, 7}));
  auto mn = a;
  reduceInto(mn.data(), b.data(), 3, ncclInt32, ReduceKind::kMin);
  EXPECT_EQ(mn, (std::vector<int32_t>{1, -5, -9}));
  std::vector<uint8_t> u = {250}, v = {10};
  reduceInto(u.data(), v.data(), 1, ncclUint8, ReduceKind::kSum);
  EXPECT_EQ(u[0], 4);  // wraps like the GPU
}

TEST(ReduceOpsTest, HalfSumGoesThroughFloat) {
  std::vector<uint16_t> a = {floatToHalf(1.5f), floatToHalf(-2.0f)};
  std::vector<uint16_t> b = {floatToHalf(2.25f), floatToHalf(0.5f)};
  reduceInto(a.data(), b.data(), 2, ncclFloat16, ReduceKind::kSum);
  EXPECT_EQ(halfToFloat(a[0]), 3.75f);
  EXPECT_EQ(halfToFloat(a[1]), -1.5f);
}

TEST(ReduceOpsTest, ScaleAndDivide) {
  std::vector<double> d = {1, 2, 3}, out(3);
  double k = 0.5;
  scaleCopy(out.data(), d.data(), 3, ncclFloat64, &k);
  EXPECT_EQ(out, (std::vector<double>{0.5, 1, 1.5}));
  std::vector<int64_t> i = {7, -7, 9};
  divideInPlace(i.data(), 3, ncclInt64, 2);
  EXPECT_EQ(i, (std::vector<int64_t>{3, -3, 4}));
  uint16_t r;
  reciprocalScalar(4, ncclBfloat16, &r);
  EXPECT_EQ(bf16ToFloat(r), 0.25f);
}

TEST(ReduceOpsTest, SizesAndNames) {
  EXPECT_EQ(dtypeSize(ncclFloat8e5m2), 1u);
  EXPECT_EQ(dtypeSize(ncclBfloat16), 2u);
  EXPECT_EQ(dtypeSize(ncclUint64), 8u);
  EXPECT_EQ(dtypeSize(static_cast<ncclDataType_t>(12)), 0u);
  EXPECT_STREQ(dtypeName(ncclFloat16), "float16");
}

}  // namespace
}  // namespace ncclrec::hostnccl
