#include "tui/options.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <vector>

#include "format/testing/temp_dir.h"

namespace ncclrec::tui {
namespace {

ParsedTopCommandLine parse(std::vector<const char*> args, int tw = 0, int th = 0) {
  args.insert(args.begin(), "ncclrec-top");
  return parseTopCommandLine(static_cast<int>(args.size()), args.data(), tw, th);
}

class Options : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("NCCLREC_DIR");
    unsetenv("NCCLREC_TIMEOUT");
    unsetenv("CXXRUN_TOKEN");
  }
};

TEST_F(Options, Defaults) {
  const auto p = parse({});
  ASSERT_TRUE(p.options) << p.message;
  EXPECT_EQ(p.options->dir, "./ncclrec-dumps");
  EXPECT_DOUBLE_EQ(p.options->interval_s, 0.5);
  EXPECT_DOUBLE_EQ(p.options->hang_after_s, 60);
  EXPECT_FALSE(p.options->once);
  EXPECT_EQ(p.options->width, 80);
  EXPECT_EQ(p.options->height, 24);
}

TEST_F(Options, EnvironmentAndFlags) {
  setenv("NCCLREC_DIR", "/env/dir", 1);
  setenv("NCCLREC_TIMEOUT", "7.5", 1);
  auto p = parse({"--once"}, 120, 40);
  ASSERT_TRUE(p.options) << p.message;
  EXPECT_EQ(p.options->dir, "/env/dir");
  EXPECT_DOUBLE_EQ(p.options->hang_after_s, 7.5);
  EXPECT_EQ(p.options->width, 120);
  EXPECT_EQ(p.options->height, 40);
  p = parse({"d", "--once", "--hang-after", "3", "--interval", "2", "--size", "100x30", "--screen",
             "rank", "--rank", "4"});
  ASSERT_TRUE(p.options) << p.message;
  EXPECT_EQ(p.options->dir, "d");
  EXPECT_DOUBLE_EQ(p.options->hang_after_s, 3);
  EXPECT_DOUBLE_EQ(p.options->interval_s, 2);
  EXPECT_EQ(p.options->width, 100);
  EXPECT_EQ(p.options->height, 30);
  EXPECT_EQ(p.options->screen, Screen::kRank);
  EXPECT_EQ(p.options->rank, 4);
  // One value per occurrence (comma-separated patterns): DIR after it stays DIR.
  p = parse({"--library-frames", "pynccl/,comm/", "--library-frames", "x.py", "d"});
  ASSERT_TRUE(p.options) << p.message;
  EXPECT_EQ(p.options->library_frames, (std::vector<std::string>{"pynccl/", "comm/", "x.py"}));
  EXPECT_EQ(p.options->dir, "d");
}

TEST_F(Options, BadInputIsOneLineNamingTheFlag) {
  auto p = parse({"--interval", "0"});
  EXPECT_EQ(p.exit_code, kExitUsage);
  EXPECT_NE(p.message.find("--interval"), std::string::npos) << p.message;
  p = parse({"--once", "--size", "80by24"});
  EXPECT_EQ(p.message, "ncclrec-top: --size 80by24: want WIDTHxHEIGHT, e.g. 80x24");
  p = parse({"--screen", "comms"});
  EXPECT_EQ(p.message, "ncclrec-top: --size, --screen and --rank go with --once");
  p = parse({"--library-frames"});
  EXPECT_EQ(p.exit_code, kExitUsage);
  EXPECT_NE(p.message.find("--library-frames"), std::string::npos) << p.message;
  p = parse({"--frobnicate"});
  EXPECT_EQ(p.exit_code, kExitUsage);
  EXPECT_NE(p.message.find("--frobnicate"), std::string::npos) << p.message;
  setenv("NCCLREC_TIMEOUT", "soon", 1);
  p = parse({});
  EXPECT_EQ(p.message,
            "ncclrec-top: NCCLREC_TIMEOUT='soon' is not a number of seconds; set it or pass "
            "--hang-after");
  EXPECT_TRUE(parse({"--hang-after", "5"}).options);
}

TEST_F(Options, ConnectNeedsTheJobToken) {
  auto p = parse({"--connect", "node1:29501"});
  EXPECT_EQ(p.message,
            "ncclrec-top: --connect needs the job's token: set CXXRUN_TOKEN or pass --token-file");
  setenv("CXXRUN_TOKEN", "abc", 1);
  p = parse({"--connect", "node1:29501", "--connect", "node2:29501"});
  ASSERT_TRUE(p.options) << p.message;
  EXPECT_EQ(p.options->token, "abc");
  EXPECT_EQ(p.options->dir, "");  // only the agents, unless a directory is named
  EXPECT_EQ(p.options->connect.size(), 2u);
  p = parse({"--connect", "node1"});
  EXPECT_EQ(p.message, "ncclrec-top: --connect node1: want HOST:PORT");
}

TEST_F(Options, TokenFile) {
  format::testing::TempDir dir;
  std::ofstream(dir.file("endpoint")) << "endpoint=node1:29501\ntoken=s3cret\n";
  std::ofstream(dir.file("plain")) << "plain-token\n";
  auto p = parse({"--connect", "node1:29501", "--token-file", dir.file("endpoint").c_str()});
  ASSERT_TRUE(p.options) << p.message;
  EXPECT_EQ(p.options->token, "s3cret");
  p = parse({"--connect", "node1:29501", "--token-file", dir.file("plain").c_str()});
  ASSERT_TRUE(p.options) << p.message;
  EXPECT_EQ(p.options->token, "plain-token");
  p = parse({"--connect", "n:1", "--token-file", dir.file("none").c_str()});
  EXPECT_EQ(p.message, "ncclrec-top: --token-file " + dir.file("none") + ": cannot read it");
  p = parse({"--token-file", dir.file("plain").c_str()});
  EXPECT_EQ(p.message, "ncclrec-top: --token-file goes with --connect");
}

TEST_F(Options, Help) {
  const auto p = parse({"--help"});
  EXPECT_FALSE(p.options);
  EXPECT_EQ(p.exit_code, kExitOk);
  EXPECT_NE(p.message.find("--hang-after"), std::string::npos);
  EXPECT_NE(p.message.find("Exit codes"), std::string::npos);
}

}  // namespace
}  // namespace ncclrec::tui
