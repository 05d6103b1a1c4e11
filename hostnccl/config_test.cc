#include "hostnccl/config.h"

#include <gtest/gtest.h>

namespace ncclrec::hostnccl {
namespace {

TEST(ConfigTest, ParsesSecondsIncludingFractions) {
  std::chrono::milliseconds t{0};
  ASSERT_TRUE(parseTimeoutSeconds("5", &t));
  EXPECT_EQ(t.count(), 5000);
  ASSERT_TRUE(parseTimeoutSeconds("0.25", &t));
  EXPECT_EQ(t.count(), 250);
  ASSERT_TRUE(parseTimeoutSeconds("0", &t));
  EXPECT_EQ(t.count(), 0);
}

TEST(ConfigTest, RejectsGarbage) {
  std::chrono::milliseconds t{7};
  EXPECT_FALSE(parseTimeoutSeconds("", &t));
  EXPECT_FALSE(parseTimeoutSeconds("-1", &t));
  EXPECT_FALSE(parseTimeoutSeconds("5s", &t));
  EXPECT_FALSE(parseTimeoutSeconds("nan", &t));
  EXPECT_FALSE(parseTimeoutSeconds(nullptr, &t));
  EXPECT_EQ(t.count(), 7);
}

TEST(ConfigTest, MatchesInterfacesAsNcclSocketIfnameDoes) {
  EXPECT_TRUE(matchesIfname("eth", "eth0"));  // a prefix
  EXPECT_TRUE(matchesIfname("ib,eth", "eth1"));
  EXPECT_FALSE(matchesIfname("eth", "ib0"));
  EXPECT_TRUE(matchesIfname("=eth0", "eth0"));  // exact names
  EXPECT_FALSE(matchesIfname("=eth0", "eth01"));
  EXPECT_TRUE(matchesIfname("^docker,lo", "eth0"));  // an exclusion
  EXPECT_FALSE(matchesIfname("^docker,lo", "docker0"));
  EXPECT_FALSE(matchesIfname("^=lo", "lo"));
  EXPECT_TRUE(matchesIfname("lo", "lo"));
  EXPECT_FALSE(matchesIfname("", "lo"));
}

TEST(ConfigTest, ParsesTheStallKernelFault) {
  int rank = -1;
  uint32_t at = 0;
  ASSERT_TRUE(parseStallKernel("3@2", &rank, &at));
  EXPECT_EQ(rank, 3);
  EXPECT_EQ(at, 2u);
  for (const char* bad : {"", "3", "3@", "3@0", "-1@2", "3@-2", "3@+2", "3@2x", "x@2", "@2"}) {
    EXPECT_FALSE(parseStallKernel(bad, &rank, &at)) << bad;
  }
}

TEST(ConfigTest, ParsesTheDropLinkFault) {
  int src = -1, dst = -1;
  uint32_t from = 0;
  ASSERT_TRUE(parseDropLink("2>3", &src, &dst, &from));
  EXPECT_EQ(src, 2);
  EXPECT_EQ(dst, 3);
  EXPECT_EQ(from, 1u);
  ASSERT_TRUE(parseDropLink("0>7@12", &src, &dst, &from));
  EXPECT_EQ(src, 0);
  EXPECT_EQ(dst, 7);
  EXPECT_EQ(from, 12u);
  for (const char* bad :
       {"", "2", "2>", ">3", "2>2", "-1>3", "2>3@", "2>3@0", "2>3@-4", "2>3@4x", "2>3x", "2<3"}) {
    EXPECT_FALSE(parseDropLink(bad, &src, &dst, &from)) << bad;
  }
}

}  // namespace
}  // namespace ncclrec::hostnccl
