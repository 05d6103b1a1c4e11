#include "analyzer/trace.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "analyzer/diagnose.h"

namespace ncclrec::analyzer {
namespace {

using format::EventRecord;
using format::EventState;
using format::OpType;

format::RankData rank(int r, uint64_t last_count) {
  format::RankData d;
  d.global_rank = r;
  d.world_size = 2;
  d.host = "h";
  d.pid = 10 + r;
  for (uint64_t i = 0; i < 3; ++i) {
    EventRecord e;
    e.index = i;
    e.op = OpType::kAllReduce;
    e.setCommId(0xabcdef0012345678ull);
    e.op_seq = i + 1;
    e.count = i == 2 ? last_count : 8;
    e.dtype = 7;
    e.redop = 0;
    e.setRank(r);
    e.setNranks(2);
    e.setEnqueueNs(1'000'000'000 + static_cast<int64_t>(i) * 1'000'000);
    e.state = i == 2 ? EventState::kEnqueued : EventState::kCompleted;
    e.setEndNs(i == 2 ? 0 : e.enqueueNs() + 500'000);
    d.events.push_back(e);
  }
  d.heartbeat_ns = 3'000'000'000;
  return d;
}

TEST(TraceTest, OneTrackPerRankAndTheDivergentOpMarked) {
  format::LoadedSet set{{rank(0, 8), rank(1, 4)}, {}};
  const Verdict v = diagnose(set);
  ASSERT_EQ(v.cls, VerdictClass::kSizeMismatch) << v.headline;
  std::ostringstream out;
  writeTrace(set, v, SiteRule{}, out);
  const nlohmann::json doc = nlohmann::json::parse(out.str());
  int slices = 0, marks = 0, names = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") ++names;
    if (e["ph"] == "i") {
      ++marks;
      EXPECT_EQ(e["pid"], 1);
      EXPECT_EQ(e["name"], "size_mismatch");
    }
    if (e["ph"] != "X") continue;
    ++slices;
    EXPECT_GE(e["ts"].get<double>(), 0.0);
    if (e["name"] == "ncclAllReduce #3") {
      EXPECT_EQ(e["cname"], e["pid"] == 1 ? "terrible" : "bad");
      EXPECT_EQ(e["args"]["pending"], true);
      EXPECT_GT(e["dur"].get<double>(), 0.0);  // pending: to the snapshot
    } else {
      EXPECT_FALSE(e.contains("cname"));
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 500.0);
    }
  }
  EXPECT_EQ(names, 2);
  EXPECT_EQ(slices, 6);
  EXPECT_EQ(marks, 1);
}

}  // namespace
}  // namespace ncclrec::analyzer
