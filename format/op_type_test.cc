#include "format/op_type.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "format/params_table.h"

namespace ncclrec::format {
namespace {

TEST(OpTypeTest, EveryOpNameRoundTrips) {
  std::set<std::string_view> seen;
  for (int i = 1; i < static_cast<int>(OpType::kCount); ++i) {
    const auto op = static_cast<OpType>(i);
    const std::string_view name = opName(op);
    EXPECT_TRUE(name.starts_with("nccl")) << i;
    EXPECT_EQ(opFromName(name), op) << name;
    EXPECT_TRUE(seen.insert(name).second) << "duplicate name " << name;
  }
  EXPECT_EQ(opName(OpType::kAllReduce), "ncclAllReduce");
  EXPECT_EQ(opName(OpType::kRedOpDestroy), "ncclRedOpDestroy");
  EXPECT_EQ(opName(static_cast<OpType>(999)), "unknown");
  EXPECT_EQ(opFromName("ncclNoSuchThing"), OpType::kUnknown);
  EXPECT_EQ(opFromName("unknown"), OpType::kUnknown);
}

TEST(OpTypeTest, Classes) {
  EXPECT_TRUE(isCollective(OpType::kAllReduce));
  EXPECT_TRUE(isCollective(OpType::kScatter));
  EXPECT_FALSE(isCollective(OpType::kSend));
  EXPECT_TRUE(isP2p(OpType::kRecv));
  EXPECT_FALSE(isP2p(OpType::kGroupEnd));
  EXPECT_TRUE(hasRoot(OpType::kBcast));
  EXPECT_TRUE(hasRoot(OpType::kScatter));
  EXPECT_FALSE(hasRoot(OpType::kAllReduce));
  EXPECT_FALSE(hasRoot(OpType::kSend));
  EXPECT_TRUE(isCommLifecycle(OpType::kCommSplit));
  EXPECT_TRUE(isCommLifecycle(OpType::kCommRevoke));
  EXPECT_FALSE(isCommLifecycle(OpType::kCommGetAsyncError));
  EXPECT_FALSE(isCommLifecycle(OpType::kAllGather));
}

TEST(OpTypeTest, StatesAndReasons) {
  EXPECT_EQ(stateName(EventState::kStarted), "started");
  EXPECT_EQ(stateName(EventState::kFailed), "failed");
  EXPECT_EQ(stateName(static_cast<EventState>(77)), "unknown");
  EXPECT_EQ(dumpReasonName(DumpReason::kHang), "hang");
  EXPECT_EQ(dumpReasonName(DumpReason::kNcclError), "nccl_error");
  EXPECT_EQ(dumpReasonName(static_cast<DumpReason>(99)), "unknown");
}

TEST(OpTypeTest, DataTypes) {
  const char* names[] = {"int8",    "uint8",   "int32",   "uint32",   "int64",      "uint64",
                         "float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2"};
  const int sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(dataTypeName(i), names[i]);
    EXPECT_EQ(dataTypeSize(i), sizes[i]);
  }
  EXPECT_EQ(dataTypeName(-1), "none");
  EXPECT_EQ(dataTypeName(12), "unknown");
  EXPECT_EQ(dataTypeSize(12), 0);
  EXPECT_EQ(dataTypeSize(-1), 0);
}

TEST(OpTypeTest, RedOps) {
  EXPECT_EQ(redOpName(0), "sum");
  EXPECT_EQ(redOpName(1), "prod");
  EXPECT_EQ(redOpName(2), "max");
  EXPECT_EQ(redOpName(3), "min");
  EXPECT_EQ(redOpName(4), "avg");
  EXPECT_EQ(redOpName(-1), "none");
  const std::string_view dyn = redOpName(5);
  EXPECT_EQ(dyn, "premulsum#5");
  EXPECT_EQ(redOpName(1234567), "premulsum#1234567");
  // The interned view stays valid and the same after other names were added.
  EXPECT_EQ(redOpName(5).data(), dyn.data());
  EXPECT_EQ(dyn, "premulsum#5");
}

TEST(ParamsTableTest, EveryParamHasATypeName) {
  ASSERT_FALSE(allParams().empty());
  for (const ParamSpec& p : allParams()) {
    EXPECT_NE(paramTypeName(p.type), "unknown") << p.name;
    EXPECT_TRUE(p.name.starts_with("NCCLREC_")) << p.name;
  }
  EXPECT_EQ(paramTypeName(ParamType::kChoice), "choice");
  EXPECT_EQ(paramTypeName(ParamType::kSignal), "signal");
}

}  // namespace
}  // namespace ncclrec::format
