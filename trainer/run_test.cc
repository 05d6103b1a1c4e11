// Whole trainer runs on hostnccl under cxxrun: every rank ends with the same parameters (equal
// checksums), the loss goes down, one rank and four ranks reach comparable losses, a resumed run
// ends exactly where an uninterrupted one does, and bad set-ups fail with one clear line.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace {

using namespace std::chrono_literals;
using ncclrec::support::ProcessResult;
using ncclrec::support::SpawnOptions;
using ncclrec::support::TempDir;

struct JobRun {
  ProcessResult result;
  std::map<int, std::string> checksums;  // rank -> checksum
  std::map<int, long> steps;             // rank -> steps done
  double first_loss = -1, last_loss = -1, eval_mse = -1;
};

// `ranks` workers of the trainer under cxxrun --nccl=host, in `dir`.
JobRun runJob(const std::string& dir, int ranks, std::vector<std::string> args) {
  SpawnOptions o;
  o.argv = {CXXRUN_BIN,    "--standalone", "--nproc-per-node", std::to_string(ranks),
            "--nccl=host", "--run-id",     "trainer-test",     NCCLREC_TRAINER_BIN};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.cwd = dir;
  o.unset_env = {"LD_PRELOAD", "NCCLREC_DIR"};
  JobRun run;
  run.result = ncclrec::support::runProcess(o, 240s);
  const std::regex checksum(R"(checksum: rank (\d+) (0x[0-9a-f]{16}) after (\d+) steps)");
  for (std::sregex_iterator it(run.result.out.begin(), run.result.out.end(), checksum), end;
       it != end; ++it) {
    run.checksums[std::stoi((*it)[1])] = (*it)[2];
    run.steps[std::stoi((*it)[1])] = std::stol((*it)[3]);
  }
  std::smatch m;
  if (std::regex_search(run.result.out, m,
                        std::regex(R"(done: \d+ steps in [0-9.]+ s; loss ([0-9.e+-]+) -> )"
                                   R"(([0-9.e+-]+); eval mse ([0-9.e+-]+|n/a))"))) {
    run.first_loss = std::stod(m[1]);
    run.last_loss = std::stod(m[2]);
    run.eval_mse = m[3] == "n/a" ? -1 : std::stod(m[3]);
  }
  return run;
}

// Every rank printed one checksum, all equal.
void expectEqualChecksums(const JobRun& run, int ranks, long steps) {
  ASSERT_EQ(run.checksums.size(), static_cast<size_t>(ranks)) << run.result.describe();
  for (const auto& [rank, sum] : run.checksums) {
    EXPECT_EQ(sum, run.checksums.begin()->second) << "rank " << rank << "\n" << run.result.out;
    EXPECT_EQ(run.steps.at(rank), steps) << "rank " << rank;
  }
}

TEST(TrainerRunTest, OneAndFourRanksTrainToComparableLossesWithEqualParameters) {
  TempDir dir;
  const std::vector<std::string> args = {"--steps", "200", "--eval-every", "100"};
  const JobRun one = runJob(dir.path(), 1, args);
  ASSERT_TRUE(one.result.exitedWith(0)) << one.result.describe();
  const JobRun four = runJob(dir.path(), 4, args);
  ASSERT_TRUE(four.result.exitedWith(0)) << four.result.describe();
  expectEqualChecksums(one, 1, 200);
  expectEqualChecksums(four, 4, 200);
  EXPECT_NE(four.result.out.find("world size 4"), std::string::npos) << four.result.out;
  EXPECT_NE(four.result.out.find("effective batch 128; lr 0.05 scaled to 0.2"), std::string::npos)
      << four.result.out;
  for (const JobRun* r : {&one, &four}) {
    ASSERT_GT(r->first_loss, 0) << r->result.out;
    // The loss falls well below where it started: the teacher is learnable.
    EXPECT_LT(r->last_loss, 0.25 * r->first_loss) << r->result.out;
    EXPECT_LT(r->eval_mse, 0.25 * r->first_loss) << r->result.out;
  }
  // Four ranks see four times the data per step at four times the learning rate: the held-out
  // error ends in the same range as one rank's.
  EXPECT_LT(four.eval_mse, 2.0 * one.eval_mse) << one.result.out << four.result.out;
  EXPECT_GT(four.eval_mse, 0.25 * one.eval_mse) << one.result.out << four.result.out;
}

TEST(TrainerRunTest, AccumulationAndSmallBucketsKeepRanksEqual) {
  TempDir dir;
  // A 0.001 MiB cap splits the ~7k-parameter model into one bucket per layer.
  const JobRun run = runJob(dir.path(), 4,
                            {"--steps", "40", "--accum-steps", "3", "--batch-size", "16",
                             "--bucket-cap-mb", "0.001", "--drop-last", "--eval-every", "20"});
  ASSERT_TRUE(run.result.exitedWith(0)) << run.result.describe();
  expectEqualChecksums(run, 4, 40);
  EXPECT_NE(run.result.out.find("in 3 gradient bucket(s)"), std::string::npos) << run.result.out;
  EXPECT_NE(run.result.out.find("effective batch 192"), std::string::npos) << run.result.out;
  EXPECT_LT(run.last_loss, run.first_loss) << run.result.out;
}

TEST(TrainerRunTest, ResumeEndsWhereAnUninterruptedRunEnds) {
  TempDir dir;
  const std::string ckpt = dir.path() + "/ckpt";
  const std::vector<std::string> common = {"--eval-every", "0", "--ckpt-dir", ckpt};
  const auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), common.begin(), common.end());
    return extra;
  };
  const JobRun first = runJob(dir.path(), 2, with({"--steps", "15", "--ckpt-every", "5"}));
  ASSERT_TRUE(first.result.exitedWith(0)) << first.result.describe();
  EXPECT_NE(first.result.out.find("checkpoint after step 15: " + ckpt + "/checkpoint.bin"),
            std::string::npos)
      << first.result.out;
  const JobRun resumed = runJob(dir.path(), 2, with({"--steps", "30", "--resume"}));
  ASSERT_TRUE(resumed.result.exitedWith(0)) << resumed.result.describe();
  EXPECT_NE(resumed.result.out.find("resumed from " + ckpt + "/checkpoint.bin after step 15"),
            std::string::npos)
      << resumed.result.out;

  TempDir other;
  const JobRun straight =
      runJob(other.path(), 2,
             {"--steps", "30", "--eval-every", "0", "--ckpt-dir", other.path() + "/ckpt"});
  ASSERT_TRUE(straight.result.exitedWith(0)) << straight.result.describe();
  expectEqualChecksums(resumed, 2, 30);
  expectEqualChecksums(straight, 2, 30);
  EXPECT_EQ(resumed.checksums.at(0), straight.checksums.at(0))
      << resumed.result.out << straight.result.out;
}

TEST(TrainerRunTest, DifferentShapesStopWithAnErrorNamingRankAndParameter) {
  TempDir dir;
  const JobRun run = runJob(dir.path(), 4, {"--steps", "5", "--inject=size_mismatch"});
  EXPECT_TRUE(run.result.exitedWith(1)) << run.result.describe();
  EXPECT_NE(run.result.err.find("parameter shapes differ: rank 3's net.0.weight is [128, 32], "
                                "rank 0's is [64, 32]"),
            std::string::npos)
      << run.result.err;
  EXPECT_TRUE(run.checksums.empty());
}

TEST(TrainerRunTest, OneRankRunsWithoutALauncher) {
  TempDir dir;
  SpawnOptions o;
  o.argv = {NCCLREC_TRAINER_BIN, "--steps", "20", "--log-every", "10"};
  o.unset_env = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "CXXRUN_STORE", "LD_PRELOAD"};
  o.cwd = dir.path();
  const ProcessResult r = ncclrec::support::runProcess(o, 120s);
  EXPECT_TRUE(r.exitedWith(0)) << r.describe();
  EXPECT_NE(r.out.find("step 10/20"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("checksum: rank 0 0x"), std::string::npos) << r.out;
}

TEST(TrainerRunTest, BadFlagsAndEnvironmentAreOneLineWithExitCode2) {
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {{"--inject=crash:rank=5"}, {}, "ncclrec-trainer: --inject=crash:rank=5: rank 5 is not"},
           {{"--steps", "-3"}, {}, "ncclrec-trainer: --steps must be at least 1"},
           {{}, {{"WORLD_SIZE", "two"}}, "ncclrec-trainer: WORLD_SIZE='two' is not a whole number"},
           {{},
            {{"RANK", "4"}, {"WORLD_SIZE", "4"}},
            "ncclrec-trainer: RANK=4 is not below WORLD_SIZE=4"},
       }) {
    SpawnOptions o;
    o.argv = {NCCLREC_TRAINER_BIN};
    o.argv.insert(o.argv.end(), c.args.begin(), c.args.end());
    o.env = c.env;
    const ProcessResult r = ncclrec::support::runProcess(o, 60s);
    EXPECT_TRUE(r.exitedWith(2)) << r.describe();
    EXPECT_EQ(r.err.rfind(c.says, 0), 0u) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  }
}

}  // namespace
