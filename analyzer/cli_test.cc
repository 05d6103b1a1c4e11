#include "analyzer/cli.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/analyze_mode.h"
#include "analyzer/exit_codes.h"
#include "analyzer/testing/run_cli.h"
#include "format/params_table.h"
#include "format/testing/bbox_builder.h"
#include "format/testing/temp_dir.h"

namespace ncclrec::analyzer {
namespace {

using Result = testing::CliResult;

Result cli(std::vector<std::string> args) { return testing::runAnalyzeCli(std::move(args)); }

// One line, prefixed with the tool's name.
void expectOneErrorLine(const Result& r) {
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_EQ(r.err.rfind("ncclrec-analyze: ", 0), 0u) << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

TEST(CliTest, NoModeIsAnError) {
  const Result r = cli({});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_EQ(r.err, "ncclrec-analyze: no PATH given: name the recordings to analyze (see --help)\n");
  EXPECT_EQ(r.out, "");
  expectOneErrorLine(cli({"some/dir"}));
}

TEST(CliTest, HelpDocumentsModesAndExitCodes) {
  const Result r = cli({"--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_NE(r.out.find("--events"), std::string::npos);
  EXPECT_NE(r.out.find("--print-params"), std::string::npos);
  EXPECT_NE(r.out.find("Exit codes"), std::string::npos);
}

TEST(CliTest, UsageErrorsAreOneLine) {
  expectOneErrorLine(cli({"--frobnicate"}));
  expectOneErrorLine(cli({"--events"}));                        // no PATH
  expectOneErrorLine(cli({"--rank", "1", "x.bbox"}));           // --rank needs --events
  expectOneErrorLine(cli({"--events", "--rank", "-2", "x"}));   // negative rank
  expectOneErrorLine(cli({"--events", "--rank", "one", "x"}));  // not a number
  expectOneErrorLine(cli({"--events", "--last", "0", "x"}));
  expectOneErrorLine(cli({"--events", "--print-params"}));
  expectOneErrorLine(cli({"--print-params", "x.bbox"}));
  expectOneErrorLine(cli({"--events", "--comm", "xyz", "x"}));
  expectOneErrorLine(cli({"--events", "--trace", "t.json", "x"}));  // --trace is for verdicts
  expectOneErrorLine(cli({"--stale-heartbeat", "-1", "x"}));
  EXPECT_EQ(cli({"--events", "--rank", "one", "x"}).err,
            "ncclrec-analyze: --rank: 'one' is not a rank (an integer, 0 or more)\n");
  EXPECT_EQ(cli({"--events", "--rank", "99999999999", "x"}).err,
            "ncclrec-analyze: --rank: '99999999999' is not a rank (an integer, 0 or more)\n");
  EXPECT_EQ(cli({"--events", "--last", "0", "x"}).err,
            "ncclrec-analyze: --last: '0' is not a count (an integer, 1 or more)\n");
}

TEST(CliTest, PrintParamsListsTheTable) {
  const Result text = cli({"--print-params"});
  EXPECT_EQ(text.code, kExitOk);
  EXPECT_EQ(text.err, "");
  for (const format::ParamSpec& p : format::allParams()) {
    EXPECT_NE(text.out.find(std::string(p.name)), std::string::npos) << p.name;
    EXPECT_NE(text.out.find(std::string(p.description)), std::string::npos) << p.name;
  }
  EXPECT_NE(text.out.find("choice (auto|libunwind|fp)"), std::string::npos);

  const Result json = cli({"--print-params", "--json"});
  EXPECT_EQ(json.code, kExitOk);
  const nlohmann::json doc = nlohmann::json::parse(json.out);
  ASSERT_EQ(doc.size(), format::allParams().size());
  EXPECT_EQ(doc[0]["name"], std::string(format::allParams()[0].name));
  EXPECT_EQ(doc[0]["type"], std::string(format::paramTypeName(format::allParams()[0].type)));
  EXPECT_EQ(doc[0]["default"], std::string(format::allParams()[0].default_value));
}

TEST(CliTest, EventsModeRunsEndToEnd) {
  format::testing::TempDir dir;
  format::testing::BboxBuilder b;
  b.header()->global_rank = 0;
  b.addEvent(format::testing::makeCollective(format::OpType::kAllGather, 0x42, 0, 1, 1, 3, 5));
  ASSERT_TRUE(b.writeTo(dir.file("r0.bbox")));
  const Result r = cli({"--events", "--rank", "0", "--last", "5", "--comm", "0000", dir.path()});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("ncclAllGather"), std::string::npos) << r.out;

  const Result json = cli({"--events", "--json", dir.file("r0.bbox")});
  EXPECT_EQ(json.code, kExitOk) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["ranks"][0]["events"][0]["op"], "ncclAllGather");

  const Result bad = cli({"--events", dir.file("missing")});
  expectOneErrorLine(bad);
  EXPECT_EQ(bad.err, "ncclrec-analyze: " + dir.file("missing") + ": No such file or directory\n");
}

TEST(CliTest, VerdictModeExitCodesAndTrace) {
  format::testing::TempDir dir;
  for (int r = 0; r < 2; ++r) {
    format::testing::BboxBuilder b;
    b.header()->global_rank = r;
    b.header()->world_size = 2;
    b.header()->pid = 100 + r;
    b.addEvent(format::testing::makeCollective(format::OpType::kAllReduce, 0x42, r, 2, 1, 8, 5));
    ASSERT_TRUE(b.writeTo(dir.file("r" + std::to_string(r) + ".bbox")));
  }
  const Result ok = cli({dir.path()});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(ok.out.rfind("no_hang: ", 0), 0u) << ok.out;

  const Result traced = cli({"--json", "--trace", dir.file("t.json"), dir.path()});
  EXPECT_EQ(traced.code, 0) << traced.err;
  EXPECT_EQ(nlohmann::json::parse(traced.out)["verdict"]["class"], "no_hang");
  std::ifstream trace(dir.file("t.json"));
  EXPECT_TRUE(nlohmann::json::parse(trace).contains("traceEvents"));

  const Result unwritable = cli({"--trace", dir.file("no/such/dir.json"), dir.path()});
  expectOneErrorLine(unwritable);
}

TEST(CliTest, SeveralRunsNeedRun) {
  format::testing::TempDir dir;
  for (int r = 0; r < 2; ++r) {
    format::testing::BboxBuilder b;
    b.header()->global_rank = 0;
    b.header()->world_size = 1;
    b.header()->pid = 100 + r;
    std::snprintf(b.header()->run_id, sizeof(b.header()->run_id), "run-%d", r);
    b.addEvent(format::testing::makeCollective(format::OpType::kAllReduce, 0x42, 0, 1, 1, 8, 5));
    ASSERT_TRUE(b.writeTo(dir.file("r" + std::to_string(r) + ".bbox")));
  }
  const Result mixed = cli({dir.path()});
  expectOneErrorLine(mixed);
  EXPECT_NE(mixed.err.find("several runs (run-0, run-1): pick one with --run ID"),
            std::string::npos)
      << mixed.err;
  EXPECT_EQ(cli({"--run", "run-1", dir.path()}).code, kExitOk);
  expectOneErrorLine(cli({"--run", "run-7", dir.path()}));
  expectOneErrorLine(cli({"--events", "--run", "run-1", dir.path()}));
  // Every mode loads through loadRecordings: --stacks picks a run too, --events lists them all.
  expectOneErrorLine(cli({"--stacks", dir.path()}));
  EXPECT_EQ(cli({"--stacks", "--run", "run-0", dir.path()}).code, kExitOk);
  EXPECT_EQ(cli({"--events", dir.path()}).code, kExitOk);
  std::ostringstream err;
  EXPECT_FALSE(loadRecordings({dir.path()}, true, std::nullopt, err).has_value());
  EXPECT_NE(err.str().find("pick one with --run ID"), std::string::npos) << err.str();
  err.str("");
  const auto both = loadRecordings({dir.path()}, false, std::nullopt, err);
  ASSERT_TRUE(both.has_value());
  EXPECT_EQ(both->ranks.size(), 2u);
  EXPECT_EQ(err.str(), "");
  EXPECT_FALSE(loadRecordings({dir.file("absent")}, true, std::nullopt, err).has_value());
  EXPECT_EQ(err.str().rfind("ncclrec-analyze: ", 0), 0u) << err.str();
}

}  // namespace
}  // namespace ncclrec::analyzer
