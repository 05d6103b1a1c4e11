#include "format/flight_recorder.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "format/dump_io.h"
#include "format/reader.h"
#include "format/testing/temp_dir.h"

namespace ncclrec::format {
namespace {

using Json = nlohmann::json;

Json entry(int record_id, const std::string& pg, int seq, const std::string& name,
           const std::string& state) {
  return {{"record_id", record_id},
          {"pg_id", 0},
          {"process_group", {pg, "default_pg"}},
          {"collective_seq_id", seq},
          {"p2p_seq_id", 0},
          {"op_id", seq},
          {"profiling_name", name},
          {"time_created_ns", 1000 + record_id},
          {"input_sizes", {{4, 256}}},
          {"input_dtypes", {"Float"}},
          {"output_sizes", {{4, 256}}},
          {"output_dtypes", {"Float"}},
          {"state", state},
          {"time_discovered_started_ns", nullptr},
          {"time_discovered_completed_ns", nullptr},
          {"retired", false},
          {"timeout_ms", 600000},
          {"is_p2p", false},
          {"frames",
           {{{"name", "all_reduce"},
             {"filename", "torch/distributed/distributed_c10d.py"},
             {"line", 2501}},
            {{"name", "train_step"}, {"filename", "/job/train.py"}, {"line", 42}}}}};
}

Json dump(Json entries) {
  return {{"version", "2.10"},
          {"comm_lib_version", "2.21.5"},
          {"pg_config",
           {{"0", {{"name", "0"}, {"desc", "default_pg"}, {"ranks", "[0, 1, 2, 3]"}}},
            {"1", {{"name", "1"}, {"desc", "tp"}, {"ranks", "[2, 3]"}}}}},
          {"pg_status", {{"0", {{"last_enqueued_collective", "2"}}}}},
          {"entries", std::move(entries)}};
}

TEST(FlightRecorder, MapsGroupsEntriesAndFrames) {
  Json e2 = entry(8, "1", 1, "nccl:all_gather", "scheduled");
  e2["input_dtypes"] = {"BFloat16"};
  auto r = flightRecorderToModel(dump({entry(7, "0", 5, "nccl:all_reduce", "completed"), e2}),
                                 "d/nccl_trace_rank_3", 3);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->global_rank, 3);
  EXPECT_EQ(r->world_size, 4);
  EXPECT_EQ(r->pid, 0);
  ASSERT_EQ(r->comms.size(), 2u);
  EXPECT_EQ(r->comms[1].rank, 1);  // global 3 is the second member of [2, 3]
  EXPECT_EQ(r->comms[1].nranks, 2);
  ASSERT_EQ(r->events.size(), 2u);
  const EventRecord& a = r->events[0];
  EXPECT_EQ(a.op, OpType::kAllReduce);
  EXPECT_EQ(a.op_seq, 5u);
  EXPECT_EQ(a.count, 1024u);
  EXPECT_EQ(dataTypeName(a.dtype), "float32");
  EXPECT_EQ(a.state, EventState::kCompleted);
  EXPECT_EQ(a.rank(), 3);
  EXPECT_EQ(a.commId(), r->comms[0].comm_id);
  const EventRecord& b = r->events[1];
  EXPECT_EQ(b.op, OpType::kAllGather);
  EXPECT_EQ(b.state, EventState::kEnqueued);
  EXPECT_EQ(dataTypeName(b.dtype), "bfloat16");
  const Stack& s = r->stacks.at(a.stackId());
  ASSERT_EQ(s.frames.size(), 2u);
  EXPECT_TRUE(s.frames[1].python);
  EXPECT_EQ(s.frames[1].file, "/job/train.py");
  EXPECT_EQ(s.frames[1].line, 42);
  EXPECT_EQ(a.stackId(), b.stackId());  // equal stacks are interned once
  EXPECT_EQ(r->events_lost, 7u);        // record ids 0..6 were overwritten by the ring
}

TEST(FlightRecorder, CommIdsAgreeAcrossRanks) {
  auto r0 = flightRecorderToModel(dump(Json::array()), "nccl_trace_rank_0", 0);
  auto r2 = flightRecorderToModel(dump(Json::array()), "nccl_trace_rank_2", 2);
  ASSERT_TRUE(r0.ok() && r2.ok());
  EXPECT_EQ(r0->comms[0].comm_id, r2->comms[0].comm_id);
  EXPECT_NE(r0->comms[0].comm_id, r0->comms[1].comm_id);
  EXPECT_EQ(r0->comms[1].rank, -1);  // rank 0 is not in group "1"
}

TEST(FlightRecorder, PointToPointPeersAndCoalescedMarkers) {
  Json send = entry(0, "0", 3, "nccl:send 1->2", "completed");
  Json recv = entry(1, "0", 3, "nccl:recv 1<-0", "started");
  Json marker = entry(2, "0", 3, "nccl:coalesced", "completed");
  Json gloo = entry(3, "0", 4, "gloo:broadcast", "completed");
  auto r = flightRecorderToModel(dump({send, recv, marker, gloo}), "nccl_trace_rank_1", 1);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->events.size(), 3u);  // the marker is no op
  EXPECT_EQ(r->events[0].op, OpType::kSend);
  EXPECT_EQ(r->events[0].peer(), 2);
  EXPECT_EQ(r->events[0].op_seq, 1u);
  EXPECT_EQ(r->events[0].group_depth, 1);
  EXPECT_EQ(r->events[1].op, OpType::kRecv);
  EXPECT_EQ(r->events[1].peer(), 0);
  EXPECT_EQ(r->events[1].state, EventState::kStarted);
  EXPECT_EQ(r->events[2].op, OpType::kBroadcast);
  EXPECT_EQ(r->events[2].group_depth, 0);
}

TEST(FlightRecorder, ReadsTheJsonForm) {
  Json e = entry(0, "0", 1, "nccl:all_reduce", "completed");
  e.erase("frames");
  e["time_discovered_started_ns"] = 0;
  e["process_group"] = Json::array({"0", "default_pg"});
  const std::string text = dump({e}).dump();
  auto r = parseFlightRecorder(text.data(), text.size(), "nccl_trace_rank_0", 0);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->events.size(), 1u);
  EXPECT_EQ(r->events[0].startNs(), 0);
  Json empty = dump(Json::array());
  empty.erase("entries");  // the JSON form leaves it out when there is none
  const std::string t2 = empty.dump();
  auto r2 = parseFlightRecorder(t2.data(), t2.size(), "nccl_trace_rank_0", 0);
  ASSERT_TRUE(r2.ok()) << r2.status().message();
  EXPECT_TRUE(r2->events.empty());
}

TEST(FlightRecorder, OneErrorLineForBadInput) {
  const std::string deep = std::string(100, '[') + std::string(100, ']');
  auto d = parseFlightRecorder(deep.data(), deep.size(), "x", 0);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), "x: offset 64: JSON nested deeper than 64");
  const std::string bad = "{\"version\": ";
  auto b = parseFlightRecorder(bad.data(), bad.size(), "x", 0);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(), "x: offset 12: not valid JSON");
  auto other = flightRecorderToModel(Json{{"cls", "no_hang"}}, "v.json", 0);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().message(),
            "v.json: not a PyTorch Flight Recorder dump (no version or pg_config)");
  auto ranks = flightRecorderToModel(
      Json{{"version", "2.2"}, {"pg_config", {{"0", {{"ranks", "all of them"}}}}}}, "f", 0);
  ASSERT_FALSE(ranks.ok());
  EXPECT_EQ(ranks.status().message(), "f: pg_config[0].ranks is not a list of ranks");
  Json wrong = dump({entry(0, "0", 1, "nccl:all_reduce", "completed")});
  wrong["entries"][0]["input_sizes"] = "not a list";
  auto w = flightRecorderToModel(wrong, "f", 0);
  EXPECT_TRUE(w.ok()) << "a field of the wrong type is read as absent";
  auto noname = flightRecorderToModel(dump(Json::array()), "dumps/trace", -1);
  ASSERT_FALSE(noname.ok());
  EXPECT_NE(noname.status().message().find("does not end in its rank"), std::string::npos);
}

TEST(FlightRecorder, RankFromFileNameAndSniffing) {
  EXPECT_EQ(rankFromFileName("/tmp/nccl_trace_rank_12"), 12);
  EXPECT_EQ(rankFromFileName("/tmp/trace"), -1);
  EXPECT_TRUE(looksLikeFlightRecorder("\x80\x02}q"));
  EXPECT_TRUE(looksLikeFlightRecorder("  \n{\"version\""));
  EXPECT_FALSE(looksLikeFlightRecorder("NCRECBBX"));
  EXPECT_FALSE(looksLikeFlightRecorder("[1, 2]"));
}

TEST(FlightRecorder, DirectoriesAreReadByContent) {
  testing::TempDir dir;
  std::ofstream(dir.file("nccl_trace_rank_0")) << dump(Json::array()).dump();
  std::ofstream(dir.file("nccl_trace_rank_1")) << dump(Json::array()).dump();
  std::ofstream(dir.file("verdict.json")) << R"({"verdict": {"class": "no_hang"}})";
  std::ofstream(dir.file("notes.txt")) << "not a dump";
  // pickle.dumps of os.system("true") by reduction: refused, a warning.
  std::ofstream(dir.file("nccl_trace_rank_2")) << std::string(
      "\x80\x02"
      "cposix\nsystem\nX\x04\x00\x00\x00true\x85R.",
      28);
  base::StatusOr<LoadedSet> set = loadPaths({dir.path()});
  ASSERT_TRUE(set.ok()) << set.status().message();
  ASSERT_EQ(set->ranks.size(), 2u);  // pid 0 for both: not merged into one process
  EXPECT_EQ(set->ranks[0].global_rank, 0);
  EXPECT_EQ(set->ranks[1].global_rank, 1);
  EXPECT_EQ(set->ranks[1].source_path, dir.file("nccl_trace_rank_1"));
  ASSERT_EQ(set->warnings.size(), 1u);
  EXPECT_EQ(set->warnings[0].rfind(dir.file("nccl_trace_rank_2") + ": offset 2: opcode GLOBAL", 0),
            0u)
      << set->warnings[0];
}

TEST(FlightRecorder, AnNcclrecRecordingOfTheSameRankWins) {
  testing::TempDir dir;
  std::ofstream(dir.file("nccl_trace_rank_0")) << dump(Json::array()).dump();
  std::ofstream(dir.file("nccl_trace_rank_1")) << dump(Json::array()).dump();
  RankData own;
  own.global_rank = 1;
  own.pid = 4242;
  own.host = "node-a";
  ASSERT_TRUE(writeDumpFile(own, dir.file("r1.ncclrec.pb")).ok());
  base::StatusOr<LoadedSet> set = loadPaths({dir.path()});
  ASSERT_TRUE(set.ok()) << set.status().message();
  ASSERT_EQ(set->ranks.size(), 2u);
  EXPECT_EQ(set->ranks[0].pid, 0);  // rank 0: the FR dump alone
  EXPECT_EQ(set->ranks[1].pid, 4242);
  ASSERT_EQ(set->warnings.size(), 1u);
  EXPECT_EQ(set->warnings[0], dir.file("nccl_trace_rank_1") +
                                  ": rank 1 also has an ncclrec recording; this Flight Recorder "
                                  "dump is left out");
}

}  // namespace
}  // namespace ncclrec::format
