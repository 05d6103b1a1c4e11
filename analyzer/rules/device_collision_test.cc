#include "analyzer/rules/device_collision.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/diagnose.h"
#include "analyzer/exit_codes.h"
#include "analyzer/report.h"
#include "analyzer/trace.h"
#include "format/bbox_layout.h"
#include "format/nccl_result.h"

namespace ncclrec::analyzer {
namespace {

using format::EventRecord;
using format::EventState;
using format::OpType;
using format::RankData;

constexpr uint64_t kComm = 0x1a2b3c4d00000001ull;
constexpr int kInvalidUsage = format::kNcclInvalidUsage;

struct Placed {
  std::string host = "node1";
  int device = 0;
  std::string bus_id;
  int result = kInvalidUsage;  // 0: the init succeeded
};

// One rank per entry: its init of kComm, from initProcessGroup(), with its comm record (a failed
// one when the init was refused).
std::vector<RankData> job(const std::vector<Placed>& placed) {
  std::vector<RankData> ranks;
  for (size_t r = 0; r < placed.size(); ++r) {
    const Placed& p = placed[r];
    RankData d;
    d.global_rank = static_cast<int>(r);
    d.world_size = static_cast<int>(placed.size());
    d.local_rank = static_cast<int>(r);
    d.host = p.host;
    d.pid = 100 + static_cast<int>(r);
    d.exited = true;
    format::Stack st;
    st.id = 0;
    st.symbolized = true;
    st.frames.push_back(
        {0x401000, "/opt/train", 0x1000, "initProcessGroup(int, int)", "main.cc", 41});
    d.stacks[0] = st;
    EventRecord e;
    e.op = OpType::kCommInitRank;
    e.setCommId(kComm);
    e.setRank(static_cast<int>(r));
    e.setNranks(static_cast<int>(placed.size()));
    e.setDevice(p.device);
    e.setStackId(0);
    e.state = p.result == 0 ? EventState::kCompleted : EventState::kFailed;
    e.result = p.result;
    e.setEnqueueNs(1'000'000'000);
    e.setEndNs(1'000'001'000);
    d.event_aux.push_back(format::EventAux{e.index, 0, 0, kComm});  // the new comm id
    d.events.push_back(e);
    format::Comm c;
    c.comm_id = kComm;
    c.rank = e.rank();
    c.nranks = e.nranks();
    c.device = p.device;
    c.bus_id = p.bus_id;
    c.created_by = OpType::kCommInitRank;
    c.init_result = p.result;
    c.state = p.result == 0 ? format::kCommInitialized : format::kCommInitFailed;
    c.device_source = format::kDeviceFromCudaContext;
    d.comms.push_back(c);
    ranks.push_back(std::move(d));
  }
  return ranks;
}

Verdict diagnoseJob(const std::vector<Placed>& placed) {
  return diagnose(format::LoadedSet{job(placed), {}});
}

TEST(DeviceCollisionTest, FourRanksOnOneGpuAreNamedWithTheInitCallSite) {
  const std::string bus = "0000:3b:00.0";
  const Verdict v =
      diagnoseJob({{"node1", 0, bus}, {"node1", 0, bus}, {"node1", 0, bus}, {"node1", 0, bus}});
  EXPECT_EQ(v.cls, VerdictClass::kDeviceCollision) << v.headline;
  EXPECT_EQ(verdictClassName(v.cls), "device_collision");
  EXPECT_EQ(exitCodeFor(v.cls), kExitHang);
  EXPECT_EQ(v.ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(v.comm_id, kComm);
  EXPECT_EQ(v.op, OpType::kCommInitRank);
  EXPECT_EQ(v.site.line, 41);
  EXPECT_EQ(v.headline,
            "ranks 0-3 on host node1 all use device 0 (bus 0000:3b:00.0): ncclCommInitRank on "
            "comm 1a2b3c4d from initProcessGroup() main.cc:41 was refused as invalid usage (NCCL: "
            "\"Duplicate GPU detected\"); set the device from LOCAL_RANK before creating the "
            "communicator");
  ASSERT_EQ(v.tables.size(), 1u);
  const EvidenceTable& t = v.tables[0];
  EXPECT_EQ(t.title, "devices at init of comm 1a2b3c4d");
  EXPECT_EQ(t.columns, (std::vector<std::string>{"rank", "host", "local_rank", "device", "bus_id",
                                                 "uuid", "init"}));
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.marked, (std::vector<bool>{true, true, true, true}));
  EXPECT_EQ(t.rows[2][0], TableCell::of(int64_t{2}));
  EXPECT_EQ(t.rows[2][2], TableCell::of(int64_t{2}));
  EXPECT_EQ(t.rows[2][4], TableCell::of(bus));
  EXPECT_EQ(t.rows[2][5].kind, TableCell::Kind::kNone);
  EXPECT_EQ(t.rows[2][6].op.result, kInvalidUsage);
  EXPECT_EQ(v.status.size(), 4u);
}

TEST(DeviceCollisionTest, TwoRanksOnAnEmulatedDeviceWithoutBusId) {
  const Verdict v = diagnoseJob({{"h", 0, ""}, {"h", 0, ""}});
  EXPECT_EQ(v.cls, VerdictClass::kDeviceCollision) << v.headline;
  EXPECT_EQ(v.headline.rfind("ranks 0-1 on host h both use device 0: ncclCommInitRank", 0), 0u)
      << v.headline;
}

TEST(DeviceCollisionTest, EqualOrdinalsOnDifferentBusesAreNoCollision) {
  // CUDA_VISIBLE_DEVICES gave each rank its own GPU as device 0; the refusal has another cause.
  const Verdict v = diagnoseJob({{"h", 0, "0000:1a:00.0"}, {"h", 0, "0000:1b:00.0"}});
  EXPECT_EQ(v.cls, VerdictClass::kNcclError) << v.headline;
}

TEST(DeviceCollisionTest, OneBusUnderDifferentOrdinalsIsACollision) {
  const Verdict v = diagnoseJob({{"h", 0, "0000:1a:00.0"}, {"h", 1, "0000:1a:00.0"}});
  EXPECT_EQ(v.cls, VerdictClass::kDeviceCollision) << v.headline;
  EXPECT_EQ(v.headline.rfind("ranks 0-1 on host h both use one GPU (bus 0000:1a:00.0; device 0-1 "
                             "in their own numbering, through CUDA_VISIBLE_DEVICES)",
                             0),
            0u)
      << v.headline;
}

TEST(DeviceCollisionTest, SameDeviceOnDifferentHostsIsNoCollision) {
  const Verdict v = diagnoseJob({{"a", 0, ""}, {"b", 0, ""}});
  EXPECT_EQ(v.cls, VerdictClass::kNcclError) << v.headline;
}

TEST(DeviceCollisionTest, InitsThatSucceededAreNoCollision) {
  // hostnccl ranks started by hand all report device 0, and their inits succeed.
  const Verdict v = diagnoseJob({{"h", 0, "", 0}, {"h", 0, "", 0}});
  EXPECT_NE(v.cls, VerdictClass::kDeviceCollision) << v.headline;
}

TEST(DeviceCollisionTest, OnlyTheCollidingRanksAreCulprits) {
  // NCCL refuses the colliding ranks; rank 2, alone on its device, initialized.
  const Verdict v = diagnoseJob({{"h", 0, ""}, {"h", 0, ""}, {"h", 1, "", 0}});
  EXPECT_EQ(v.cls, VerdictClass::kDeviceCollision) << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{0, 1}));
  ASSERT_EQ(v.tables.size(), 1u);
  EXPECT_EQ(v.tables[0].marked, (std::vector<bool>{true, true, false}));
  EXPECT_EQ(v.tables[0].rows[2][6].op.state, EventState::kCompleted);
}

TEST(DeviceCollisionTest, TraceMarksTheRefusedInits) {
  const format::LoadedSet set{job({{"h", 0, ""}, {"h", 0, ""}, {"h", 1, "", 0}}), {}};
  const Verdict v = diagnose(set);
  ASSERT_EQ(v.cls, VerdictClass::kDeviceCollision) << v.headline;
  std::ostringstream out;
  writeTrace(set, v, SiteRule{}, out);
  std::map<int, std::string> color;  // pid (= rank) -> its init slice's cname
  int marks = 0;
  const nlohmann::json doc = nlohmann::json::parse(out.str());
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "i") {
      ++marks;
      EXPECT_EQ(e["name"], "device_collision");
    }
    if (e["ph"] == "X" && e["name"] == "ncclCommInitRank") {
      color[e["pid"].get<int>()] = e.value("cname", "");
    }
  }
  EXPECT_EQ(color, (std::map<int, std::string>{{0, "terrible"}, {1, "terrible"}, {2, "bad"}}));
  EXPECT_EQ(marks, 2);
}

TEST(DeviceCollisionTest, TextAndJsonCarryTheTable) {
  const Verdict v = diagnoseJob({{"node1", 0, "0000:3b:00.0"}, {"node1", 0, "0000:3b:00.0"}});
  std::ostringstream text;
  printVerdictText(v, ReportOptions{}, text);
  const std::string out = text.str();
  EXPECT_EQ(out.rfind("device_collision: ranks 0-1 on host node1 both use device 0", 0), 0u) << out;
  EXPECT_NE(out.find("\ndevices at init of comm 1a2b3c4d:\n"
                     "    rank  host   local rank  device  bus id        uuid  init\n"
                     "  >    0  node1           0       0  0000:3b:00.0  -     ncclCommInitRank "
                     "initProcessGroup:41 FAILED (invalid-usage)\n"
                     "  >    1  node1           1       0  0000:3b:00.0  -     ncclCommInitRank "
                     "initProcessGroup:41 FAILED (invalid-usage)\n"),
            std::string::npos)
      << out;
  std::ostringstream json;
  printVerdictJson(v, {}, json);
  const nlohmann::json j = nlohmann::json::parse(json.str());
  EXPECT_EQ(j["verdict"]["class"], "device_collision");
  EXPECT_EQ(j["verdict"]["exit_code"], 3);
  ASSERT_EQ(j["tables"].size(), 1u);
  const nlohmann::json& row = j["tables"][0]["rows"][1];
  EXPECT_EQ(row["marked"], true);
  EXPECT_EQ(row["rank"], 1);
  EXPECT_EQ(row["host"], "node1");
  EXPECT_EQ(row["local_rank"], 1);
  EXPECT_EQ(row["device"], 0);
  EXPECT_EQ(row["bus_id"], "0000:3b:00.0");
  EXPECT_TRUE(row["uuid"].is_null());
  EXPECT_EQ(row["init"]["op"], "ncclCommInitRank");
  EXPECT_EQ(row["init"]["state"], "failed");
  EXPECT_EQ(row["init"]["result"], "invalid-usage");
  EXPECT_EQ(row["init"]["callsite"]["function"], "initProcessGroup");
}

}  // namespace
}  // namespace ncclrec::analyzer
