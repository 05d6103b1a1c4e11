#include "recorder/params.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "format/params_table.h"
#include "recorder/log.h"

namespace ncclrec::recorder {
namespace {

constexpr const char* kLauncherVars[] = {"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "SLURM_STEP_ID",
                                         "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"};

class ParamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kLauncherVars) unsetenv(v);
  }
  void TearDown() override {
    for (const auto& p : format::allParams()) unsetenv(std::string(p.name).c_str());
    for (const char* v : kLauncherVars) unsetenv(v);
  }
};

TEST_F(ParamsTest, DefaultsComeFromTheTable) {
  std::vector<std::string> problems;
  const Params p = readParams(&problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(p.dir, "./ncclrec-dumps");
  EXPECT_EQ(p.ring_capacity, 32768u);  // 20000 rounded up to a power of two
  EXPECT_EQ(p.stack_depth, 16);
  EXPECT_DOUBLE_EQ(p.timeout_s, 60);
  EXPECT_EQ(p.dump_signal, SIGUSR2);
  EXPECT_TRUE(p.dump_on_exit);
  EXPECT_EQ(p.log_level, 1);  // WARN
}

TEST_F(ParamsTest, ValuesAreParsed) {
  setenv("NCCLREC_BUFFER", "100", 1);
  setenv("NCCLREC_TIMEOUT", "2.5", 1);
  setenv("NCCLREC_DUMP_SIGNAL", "SIGUSR1", 1);
  setenv("NCCLREC_UNWIND", "fp", 1);
  setenv("NCCLREC_DEBUG", "info", 1);
  setenv("NCCLREC_DEBUG_SUBSYS", "^CALL", 1);
  std::vector<std::string> problems;
  const Params p = readParams(&problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(p.ring_capacity, 128u);
  EXPECT_DOUBLE_EQ(p.timeout_s, 2.5);
  EXPECT_EQ(p.dump_signal, SIGUSR1);
  EXPECT_EQ(p.unwind, UnwindChoice::kFramePointer);
  EXPECT_EQ(p.log_level, 2);
  EXPECT_EQ(p.log_subsys & kLogCall, 0u);
  EXPECT_NE(p.log_subsys & kLogDump, 0u);
}

TEST_F(ParamsTest, BadValuesKeepDefaultsAndSaySo) {
  setenv("NCCLREC_BUFFER", "lots", 1);
  setenv("NCCLREC_TIMEOUT", "-1", 1);
  setenv("NCCLREC_DUMP_SIGNAL", "SIGNOPE", 1);
  setenv("NCCLREC_DEBUG", "LOUD", 1);
  std::vector<std::string> problems;
  const Params p = readParams(&problems);
  ASSERT_EQ(problems.size(), 4u);
  EXPECT_NE(problems[0].find("NCCLREC_BUFFER='lots'"), std::string::npos) << problems[0];
  EXPECT_EQ(p.ring_capacity, 32768u);
  EXPECT_DOUBLE_EQ(p.timeout_s, 60);
  EXPECT_EQ(p.dump_signal, SIGUSR2);
  EXPECT_EQ(p.log_level, 1);
}

TEST_F(ParamsTest, RunIdComesFromTheLauncherWhenNotSet) {
  std::vector<std::string> problems;
  EXPECT_EQ(readParams(&problems).run_id, "");
  EXPECT_EQ(readParams(&problems).watcher, "auto");
  setenv("PMIX_NAMESPACE", "prterun-h-4242@1", 1);
  EXPECT_EQ(readParams(&problems).run_id, "prterun-h-4242@1");
  setenv("OMPI_MCA_ess_base_jobid", "3131441153", 1);  // OpenMPI 4's jobid before PMIx's name
  EXPECT_EQ(readParams(&problems).run_id, "3131441153");
  setenv("SLURM_JOB_ID", "812", 1);
  EXPECT_EQ(readParams(&problems).run_id, "812");  // no step: the job's id alone
  setenv("SLURM_STEP_ID", "3", 1);
  EXPECT_EQ(readParams(&problems).run_id, "812.3");
  setenv("TORCHELASTIC_RUN_ID", "none", 1);  // torchrun without --rdzv_id or --standalone
  EXPECT_EQ(readParams(&problems).run_id, "none");
  setenv("NCCLREC_RUN_ID", "mine", 1);  // set: it wins over every launcher
  EXPECT_EQ(readParams(&problems).run_id, "mine");
  setenv("NCCLREC_WATCHER", "off", 1);
  EXPECT_EQ(readParams(&problems).watcher, "off");
  EXPECT_TRUE(problems.empty());
}

TEST_F(ParamsTest, SignalNames) {
  EXPECT_EQ(parseSignal("0"), 0);
  EXPECT_EQ(parseSignal("USR2"), SIGUSR2);
  EXPECT_EQ(parseSignal("sigterm"), SIGTERM);
  EXPECT_EQ(parseSignal("10"), 10);
  EXPECT_EQ(parseSignal("bogus"), -1);
  EXPECT_EQ(parseSignal("SIGRTMAX-3"), SIGRTMAX - 3);
  EXPECT_EQ(parseSignal("rtmin+2"), SIGRTMIN + 2);
  EXPECT_EQ(parseSignal("RTMIN"), SIGRTMIN);
  EXPECT_EQ(parseSignal("SIGRTMAX"), SIGRTMAX);
  EXPECT_EQ(parseSignal("RTMIN-1"), -1);
  EXPECT_EQ(parseSignal("RTMAX+1"), -1);
  EXPECT_EQ(parseSignal("RTMIN+1000"), -1);
}

// docs/recorder.md documents every knob of the table, on one row with its default.
TEST_F(ParamsTest, DocsListEveryParam) {
  std::ifstream in(std::string(NCCLREC_TEST_DOCS_DIR) + "/recorder.md");
  ASSERT_TRUE(in.good()) << "docs/recorder.md is missing";
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  for (const auto& p : format::allParams()) {
    const size_t at = doc.find("| `" + std::string(p.name) + "` |");
    ASSERT_NE(at, std::string::npos) << p.name << " is not in docs/recorder.md";
    const std::string row = doc.substr(at, doc.find('\n', at) - at);
    const std::string def =
        p.default_value.empty() ? "(empty)" : "`" + std::string(p.default_value) + "`";
    EXPECT_NE(row.find(def), std::string::npos)
        << p.name << ": default " << def << " not in " << row;
  }
}

}  // namespace
}  // namespace ncclrec::recorder
