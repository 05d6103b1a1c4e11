#include "base/cli_parse.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace ncclrec::base {
namespace {

using Kind = CliOutcome::Kind;

// A small tool: one option with a range check, one flag, a version flag and a custom --help-all.
struct Tool {
  CLI::App app{"tool: does a thing", "tool"};
  int count = 0;
  bool verbose = false;
  Tool() {
    app.add_option("--count", count, "How many")->check(CLI::Range(0, 10));
    app.add_flag("--verbose", verbose, "Say more");
    app.set_version_flag("--version", "tool 1.2.3");
    app.set_help_all_flag("--help-all", "Every option");
  }
  CliOutcome parse(std::vector<const char*> args) {
    args.insert(args.begin(), "tool");
    return parseCli(app, static_cast<int>(args.size()), args.data());
  }
};

TEST(CliParseTest, ParsedCommandLineGoesOn) {
  Tool t;
  const CliOutcome o = t.parse({"--count", "3", "--verbose"});
  EXPECT_EQ(o.kind, Kind::kParsed);
  EXPECT_FALSE(o.done());
  EXPECT_FALSE(o.failed());
  EXPECT_TRUE(o.text.empty());
  EXPECT_EQ(t.count, 3);
  EXPECT_TRUE(t.verbose);
}

TEST(CliParseTest, HelpAndHelpAllGiveTheHelpText) {
  Tool t;
  const CliOutcome help = t.parse({"--help"});
  EXPECT_EQ(help.kind, Kind::kHelp);
  EXPECT_TRUE(help.done());
  EXPECT_FALSE(help.failed());
  EXPECT_NE(help.text.find("--count"), std::string::npos) << help.text;
  const CliOutcome all = Tool().parse({"--help-all"});
  EXPECT_EQ(all.kind, Kind::kHelp);
  EXPECT_NE(all.text.find("--verbose"), std::string::npos) << all.text;
}

TEST(CliParseTest, VersionGivesTheVersionLine) {
  const CliOutcome o = Tool().parse({"--version"});
  EXPECT_EQ(o.kind, Kind::kVersion);
  EXPECT_TRUE(o.done());
  EXPECT_EQ(o.text, "tool 1.2.3");
}

TEST(CliParseTest, BadFlagsAndValuesAreUsageErrorsNamingThem) {
  const CliOutcome unknown = Tool().parse({"--colour"});
  EXPECT_EQ(unknown.kind, Kind::kUsageError);
  EXPECT_TRUE(unknown.failed());
  EXPECT_NE(unknown.text.find("--colour"), std::string::npos) << unknown.text;
  const CliOutcome range = Tool().parse({"--count", "11"});
  EXPECT_TRUE(range.failed());
  EXPECT_NE(range.text.find("--count"), std::string::npos) << range.text;
}

TEST(CliParseTest, AnyExceptionFromTheParseStepIsAUsageError) {
  Tool t;
  const CliOutcome o = parseCli(t.app, [] { throw std::runtime_error("bad --dir"); });
  EXPECT_EQ(o.kind, Kind::kUsageError);
  EXPECT_EQ(o.text, "bad --dir");
}

}  // namespace
}  // namespace ncclrec::base
