// Golden scenarios: tests/data/<scenario>/ holds the dumps and black boxes of a real run
// (recorded under libncclrec.so on hostnccl by tests/scenarios/record.sh) and expected.json, the
// verdict checked by hand when the data was recorded. The analyzer's verdict must equal it.
// A black box is mostly its empty tables: it is checked in gzip'ed (rank3.bbox.gz) and inflated
// here.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/cli.h"
#include "analyzer/testing/run_cli.h"
#include "analyzer/verdict.h"
#include "format/testing/temp_dir.h"

namespace ncclrec::analyzer {
namespace {

using testing::CliResult;

CliResult analyze(std::vector<std::string> args) { return testing::runAnalyzeCli(std::move(args)); }

// Copies the scenario's recordings into `to`, inflating *.gz.
bool stage(const std::string& from, const std::string& to) {
  namespace fs = std::filesystem;
  for (const fs::directory_entry& e : fs::directory_iterator(from)) {
    const std::string name = e.path().filename().string();
    if (!name.ends_with(".gz")) {
      std::error_code ec;
      fs::copy_file(e.path(), to + "/" + name, ec);
      if (ec) return false;
      continue;
    }
    gzFile in = gzopen(e.path().c_str(), "rb");
    if (in == nullptr) return false;
    std::ofstream out(to + "/" + name.substr(0, name.size() - 3), std::ios::binary);
    char buf[65536];
    int n = 0;
    while ((n = gzread(in, buf, sizeof(buf))) > 0) out.write(buf, n);
    gzclose(in);
    if (n < 0 || !out) return false;
  }
  return true;
}

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, VerdictMatchesTheExpectedOne) {
  const std::string data = std::string(NCCLREC_TEST_DATA) + "/" + GetParam();
  std::ifstream in(data + "/expected.json");
  ASSERT_TRUE(in) << "missing " << data << "/expected.json";
  format::testing::TempDir staged;
  ASSERT_TRUE(stage(data, staged.path()));
  std::filesystem::remove(staged.file("expected.json"));
  const std::string& dir = staged.path();
  const nlohmann::json expected = nlohmann::json::parse(in);

  const CliResult json = analyze({"--json", dir});
  EXPECT_EQ(json.code, expected["exit_code"].get<int>()) << json.err;
  const nlohmann::json got = nlohmann::json::parse(json.out);
  EXPECT_EQ(got["verdict"], expected["verdict"]) << got["verdict"].dump(2);
  if (expected.contains("ranks")) {
    for (size_t i = 0; i < expected["ranks"].size(); ++i) {
      EXPECT_EQ(got["ranks"][i]["status"], expected["ranks"][i]["status"]) << i;
    }
  }

  // The text report: the verdict line first, then the evidence and the stacks.
  const CliResult text = analyze({dir});
  EXPECT_EQ(text.code, json.code);
  const std::string first_line = text.out.substr(0, text.out.find('\n'));
  EXPECT_EQ(first_line, expected["verdict"]["class"].get<std::string>() + ": " +
                            expected["verdict"]["headline"].get<std::string>());
  if (expected["exit_code"] == 3) {
    // Classes that align one communicator's slots show them; the others (waits across
    // communicators, point-to-point pairs, devices, and a skip or insertion found from a wait
    // cycle) show a table of their own.
    if (got["tables"].empty()) {
      EXPECT_NE(text.out.find("\nevidence on comm "), std::string::npos) << text.out;
    } else {
      // One table, or one per unique id of a communicator given several.
      const size_t want = expected["verdict"]["class"] == "comm_id_mismatch" ? 2 : 1;
      ASSERT_EQ(got["tables"].size(), want) << got.dump(2);
      for (const nlohmann::json& table : got["tables"]) {
        EXPECT_FALSE(table["rows"].empty()) << got.dump(2);
        const std::string title = table["title"];
        EXPECT_NE(text.out.find("\n" + title + ":\n"), std::string::npos) << text.out;
      }
    }
    EXPECT_NE(text.out.find("\nstacks:\n"), std::string::npos) << text.out;
    // The ranks merely blocked by the culprits, on the line after the verdict.
    const std::vector<int> waiting = expected["verdict"]["waiting"];
    if (!waiting.empty()) {
      EXPECT_NE(text.out.find("\nwaiting: " + ranksWord(waiting) + "\n"), std::string::npos)
          << text.out;
    }
  }
  const std::map<std::string, std::string> own_table = {
      {"cross_comm_deadlock", "wait cycle"},
      {"p2p_mismatch", "sends and receives between ranks "},
      {"device_collision", "devices at init of comm "},
      {"comm_member_missing", "creation of comm "},
      {"comm_id_mismatch", "creation of comm "},
      {"comm_init_mismatch", "creation of comm "}};
  if (const auto it = own_table.find(expected["verdict"]["class"]); it != own_table.end()) {
    ASSERT_FALSE(got["tables"].empty()) << got.dump(2);
    EXPECT_TRUE(got["tables"][0]["title"].get<std::string>().starts_with(it->second));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Scenarios, GoldenTest,
    ::testing::Values("rank_gated_collective", "skipped_collective", "rank_exited", "rank_crashed",
                      "size_mismatch", "rank_stuck_in_host", "cross_comm_deadlock", "no_hang",
                      "skipped_in_cycle", "swap_in_cycle", "pipeline_relay", "late_desync",
                      // Recorded from samples/<name> (docs/analyzer.md).
                      "op_mismatch", "dtype_mismatch", "redop_mismatch", "root_mismatch",
                      "p2p_mismatch", "nccl_error", "rank_blocked_elsewhere", "slow_rank",
                      "device_collision",
                      // Hangs in communicator creation, recorded from samples/init_missing_rank,
                      // node_local_id and init_world_size.
                      "comm_member_missing", "comm_id_mismatch", "comm_init_mismatch",
                      // Recorded from ncclrec-trainer (docs/trainer.md).
                      "trainer_gated_save"));

}  // namespace
}  // namespace ncclrec::analyzer
