#include "launcher/options.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "format/version.h"

namespace ncclrec::launcher {
namespace {

ParsedCommandLine parse(std::vector<std::string> args, int gpus = 0) {
  args.insert(args.begin(), "cxxrun");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return parseCommandLine(static_cast<int>(argv.size()), argv.data(), gpus);
}

TEST(Options, DefaultsAreTorchrunsAndTheProgramKeepsItsArguments) {
  auto p = parse({"./train", "--lr", "0.1", "--nproc_per_node", "7"});
  ASSERT_TRUE(p.options) << p.message;
  const Options& o = *p.options;
  EXPECT_EQ(o.nproc_per_node, 1);
  EXPECT_EQ(o.master_addr, "127.0.0.1");
  EXPECT_EQ(o.master_port, 29500);
  EXPECT_EQ(o.max_restarts, 0);
  EXPECT_EQ(o.program,
            (std::vector<std::string>{"./train", "--lr", "0.1", "--nproc_per_node", "7"}));
}

TEST(Options, BothSpellingsOfEveryFlag) {
  for (const char* flag : {"--nproc-per-node", "--nproc_per_node"}) {
    auto p = parse({flag, "4", "--master_port=0", "--max-restarts", "2", "--run_id", "r1", "prog"});
    ASSERT_TRUE(p.options) << p.message;
    EXPECT_EQ(p.options->nproc_per_node, 4);
    EXPECT_EQ(p.options->master_port, 0);
    EXPECT_EQ(p.options->max_restarts, 2);
    EXPECT_EQ(p.options->run_id, "r1");
    EXPECT_EQ(p.options->program, std::vector<std::string>{"prog"});
  }
}

TEST(Options, AutoIsGpusElseCpus) {
  auto gpu = parse({"--nproc-per-node", "auto", "prog"}, 8);
  ASSERT_TRUE(gpu.options);
  EXPECT_EQ(gpu.options->nproc_per_node, 8);
  auto cpu = parse({"--nproc-per-node", "auto", "prog"}, 0);
  ASSERT_TRUE(cpu.options);
  EXPECT_GE(cpu.options->nproc_per_node, 1);
}

TEST(Options, StandaloneAndRendezvousEndpoint) {
  auto s = parse({"--standalone", "--master-addr", "10.0.0.1", "prog"});
  ASSERT_TRUE(s.options) << s.message;
  EXPECT_EQ(s.options->master_addr, "127.0.0.1");
  EXPECT_EQ(s.options->master_port, 0);
  auto r = parse({"--rdzv-endpoint", "node7:1234", "--rdzv-id", "job9", "--", "prog", "-x"});
  ASSERT_TRUE(r.options) << r.message;
  EXPECT_EQ(r.options->master_addr, "node7");
  EXPECT_EQ(r.options->master_port, 1234);
  EXPECT_EQ(r.options->run_id, "job9");
  EXPECT_EQ(r.options->program, (std::vector<std::string>{"prog", "-x"}));
}

TEST(Options, RedirectsAndTee) {
  auto p = parse({"--nproc-per-node", "3", "--log-dir", "/tmp/x", "--redirects", "3", "--tee",
                  "0:1,2:2", "prog"});
  ASSERT_TRUE(p.options) << p.message;
  EXPECT_EQ(p.options->redirects, (std::vector<int>{3, 3, 3}));
  EXPECT_EQ(p.options->tee, (std::vector<int>{1, 0, 2}));
  EXPECT_FALSE(parseStreamMap("4", 2));
  EXPECT_FALSE(parseStreamMap("2:1", 2));
  EXPECT_FALSE(parseStreamMap("0:1,", 2));
}

TEST(Options, BadInputIsOneLineAndExitCode2) {
  const std::vector<std::vector<std::string>> bad = {
      {},
      {"--nproc-per-node", "0", "prog"},
      {"--nproc-per-node", "many", "prog"},
      {"--master-port", "70000", "prog"},
      {"--nnodes", "2", "--node-rank", "2", "prog"},
      {"--nnodes", "1:3", "--node-rank", "1", "prog"},  // elastic: ranks follow join order
      {"--nnodes", "1:3", "--rdzv-last-call", "-1", "prog"},
      {"--nnodes", "2", "--standalone", "prog"},
      {"--nnodes", "3:2", "prog"},
      {"--redirects", "3", "prog"},  // without --log-dir
      {"--nccl", "cuda", "prog"},
      {"--on-hang", "later", "prog"},
      {"--no-such-flag", "prog"},
      {"--run-id", "a/b", "prog"},
      {"--monitor-interval", "0", "prog"},
  };
  for (const auto& args : bad) {
    auto p = parse(args);
    EXPECT_FALSE(p.options) << ::testing::PrintToString(args);
    EXPECT_EQ(p.exit_code, kExitUsage) << ::testing::PrintToString(args);
    EXPECT_EQ(p.message.rfind("cxxrun: ", 0), 0u) << p.message;
    EXPECT_EQ(p.message.find('\n'), std::string::npos) << p.message;
  }
}

TEST(Options, MultiNode) {
  auto p = parse({"--nnodes", "1:3", "--master-addr", "10.1.1.1", "prog"});
  ASSERT_TRUE(p.options) << p.message;
  EXPECT_EQ(p.options->nnodes, 3);
  EXPECT_EQ(p.options->min_nnodes, 1);
  EXPECT_TRUE(isElastic(*p.options));
  EXPECT_EQ(p.options->rdzv_last_call_s, 30);  // torchrun's last_call_timeout
  EXPECT_EQ(p.options->node_rank, -1);         // assigned at the rendezvous
  auto e = parse({"--nnodes", "2:2", "--rdzv_last_call", "1.5", "--rdzv-token-file", "/s",
                  "--max-restarts", "2", "prog"});
  ASSERT_TRUE(e.options) << e.message;
  EXPECT_FALSE(isElastic(*e.options));
  EXPECT_TRUE(isMultiNode(*e.options));
  EXPECT_EQ(e.options->rdzv_last_call_s, 1.5);
  EXPECT_EQ(e.options->rdzv_token_file, "/s");
  EXPECT_EQ(e.options->max_restarts, 2);  // restarts of a multi-node job
  auto q = parse({"--nnodes", "2", "--node_rank", "1", "prog"});
  ASSERT_TRUE(q.options) << q.message;
  EXPECT_EQ(q.options->node_rank, 1);
}

TEST(Options, SlurmFillsWhatTheFlagsLeaveOpen) {
  setenv("SLURM_JOB_ID", "4242", 1);
  setenv("SLURM_NNODES", "4", 1);
  setenv("SLURM_NODEID", "2", 1);
  setenv("SLURM_JOB_NODELIST", "gpu[07-10]", 1);
  auto p = parse({"prog"});
  auto q = parse({"--nnodes", "1", "--run-id", "mine", "prog"});
  unsetenv("SLURM_JOB_ID");
  unsetenv("SLURM_NNODES");
  unsetenv("SLURM_NODEID");
  unsetenv("SLURM_JOB_NODELIST");
  ASSERT_TRUE(p.options) << p.message;
  EXPECT_EQ(p.options->nnodes, 4);
  EXPECT_EQ(p.options->node_rank, 2);
  EXPECT_EQ(p.options->master_addr, "gpu07");
  EXPECT_EQ(p.options->run_id, "slurm-4242");
  ASSERT_TRUE(q.options) << q.message;  // --nnodes given: a local job inside the allocation
  EXPECT_EQ(q.options->node_rank, 0);
  EXPECT_EQ(q.options->master_addr, "127.0.0.1");
  EXPECT_EQ(q.options->run_id, "mine");
  EXPECT_EQ(firstSlurmHost("node[3,5-6],x1"), "node3");
  EXPECT_EQ(firstSlurmHost("a1,b2"), "a1");
  EXPECT_EQ(firstSlurmHost("solo"), "solo");
}

TEST(Options, HelpListsTorchrunsFlags) {
  auto p = parse({"--help"});
  EXPECT_FALSE(p.options);
  EXPECT_EQ(p.exit_code, kExitOk);
  for (const char* flag :
       {"--nproc-per-node", "--nnodes", "--node-rank", "--master-addr", "--master-port",
        "--rdzv-endpoint", "--rdzv-id", "--standalone", "--max-restarts", "--monitor-interval",
        "--log-dir", "--redirects", "--tee", "--run-id", "--nccl", "--on-hang"})
    EXPECT_NE(p.message.find(flag), std::string::npos) << flag;
}

TEST(Options, VersionNamesTheReleaseAndTheCommit) {
  auto p = parse({"--version"});
  EXPECT_FALSE(p.options);
  EXPECT_EQ(p.exit_code, kExitOk);
  EXPECT_EQ(p.message, std::string("cxxrun ") + format::versionString());
  EXPECT_NE(p.message.find(std::string(format::versionNumber()) + " (git "), std::string::npos);
  // After the program it is the program's flag, not cxxrun's.
  auto q = parse({"./train", "--version"});
  ASSERT_TRUE(q.options);
  EXPECT_EQ(q.options->program, (std::vector<std::string>{"./train", "--version"}));
}

}  // namespace
}  // namespace ncclrec::launcher
