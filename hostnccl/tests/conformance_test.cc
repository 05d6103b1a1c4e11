// The conformance suite: each case starts N worker processes (one rank each, so every rank has
// its own library state) and passes when every rank exits as expected.
//
// HOSTNCCL_CONFORMANCE_WORKER names the worker binary; the build points it at the hostnccl
// worker, or at the one built against real NCCL for the `gpu` label.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

const char* workerPath() {
  const char* p = std::getenv("HOSTNCCL_CONFORMANCE_WORKER");
  return p != nullptr ? p : HOSTNCCL_CONFORMANCE_WORKER;
}

bool realNccl() { return std::getenv("HOSTNCCL_CONFORMANCE_REAL_NCCL") != nullptr; }

// GPUs on this machine: the /dev/nvidiaN device files.
int gpuCount() {
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev", ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 6 && name.rfind("nvidia", 0) == 0 &&
        name.find_first_not_of("0123456789", 6) == std::string::npos) {
      ++n;
    }
  }
  return n;
}

struct Expect {
  int killedRank = -1;     // this rank is expected to die by SIGKILL
  int exitEarlyRank = -1;  // this rank may exit 0 at any time
};

// Runs `scenario` on `n` ranks with extra environment `env`; fails the test on any rank's
// unexpected exit, and kills everything after `limit`.
void runRanks(const std::string& scenario, int n, std::vector<std::string> env = {},
              Expect expect = {}, std::chrono::seconds limit = std::chrono::seconds(60)) {
  // Real NCCL refuses two ranks on one GPU ("Duplicate GPU detected"), which only the
  // duplicate_device scenario wants.
  if (realNccl() && scenario != "duplicate_device" && n > gpuCount()) {
    GTEST_SKIP() << scenario << " on " << n << " ranks needs " << n
                 << " GPUs with real NCCL; this machine has " << gpuCount();
  }
  auto dir = std::filesystem::temp_directory_path() /
             ("hostnccl-conf-" + std::to_string(getpid()) + "-" + scenario + "-" +
              std::to_string(n) + "-" + std::to_string(std::rand()));
  std::filesystem::create_directories(dir);
  std::vector<std::string> envStrings;
  for (char** e = environ; *e != nullptr; ++e) envStrings.emplace_back(*e);
  for (auto& e : env) envStrings.push_back(e);
  std::vector<char*> envp;
  for (auto& e : envStrings) envp.push_back(e.data());
  envp.push_back(nullptr);

  std::vector<pid_t> pids(n, -1);
  for (int r = 0; r < n; ++r) {
    std::string name = scenario, rank = std::to_string(r), nranks = std::to_string(n),
                d = dir.string();
    std::vector<char*> argv = {const_cast<char*>(workerPath()),
                               name.data(),
                               rank.data(),
                               nranks.data(),
                               d.data(),
                               nullptr};
    // Each rank leads its own process group, so a hung rank is killed with whatever it forked.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    int rc = posix_spawn(&pids[r], workerPath(), nullptr, &attr, argv.data(), envp.data());
    posix_spawnattr_destroy(&attr);
    ASSERT_EQ(rc, 0) << "cannot start " << workerPath();
  }
  std::vector<int> status(n, -1);
  int left = n;
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (left > 0 && std::chrono::steady_clock::now() < deadline) {
    for (int r = 0; r < n; ++r) {
      if (status[r] != -1) continue;
      int st;
      if (waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        status[r] = st;
        --left;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int r = 0; r < n; ++r) {
    kill(-pids[r], SIGKILL);  // leftovers of a rank that exited, or all of a hung one
    if (status[r] == -1) {
      waitpid(pids[r], &status[r], 0);
      ADD_FAILURE() << scenario << ": rank " << r << " of " << n << " still running after "
                    << limit.count() << " s (hang)";
      continue;
    }
    if (WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 77) {
      std::filesystem::remove_all(dir);
      GTEST_SKIP() << "no GPU for the real-NCCL worker";
    }
    if (r == expect.killedRank) {
      EXPECT_TRUE(WIFSIGNALED(status[r]) && WTERMSIG(status[r]) == SIGKILL)
          << scenario << ": rank " << r << " should have been killed";
      continue;
    }
    EXPECT_TRUE(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0)
        << scenario << ": rank " << r << " of " << n << " failed: "
        << (WIFEXITED(status[r]) ? "exit " + std::to_string(WEXITSTATUS(status[r]))
                                 : "signal " + std::to_string(WTERMSIG(status[r])));
  }
  std::filesystem::remove_all(dir);
}

class Ranks : public ::testing::TestWithParam<int> {};

TEST_P(Ranks, EveryCollectiveDatatypeAndRedop) { runRanks("collectives", GetParam()); }
INSTANTIATE_TEST_SUITE_P(Conformance, Ranks, ::testing::Values(1, 2, 3, 4, 8));

class P2pRanks : public ::testing::TestWithParam<int> {};
TEST_P(P2pRanks, RingAndPairwiseExchangeInGroups) { runRanks("p2p", GetParam()); }
INSTANTIATE_TEST_SUITE_P(Conformance, P2pRanks, ::testing::Values(1, 2, 3, 8));

class SplitRanks : public ::testing::TestWithParam<int> {};
TEST_P(SplitRanks, SplitByParityWithNoColor) { runRanks("split", GetParam()); }
INSTANTIATE_TEST_SUITE_P(Conformance, SplitRanks, ::testing::Values(2, 3, 4));

// The LOCAL_RANK bug: every rank on device 0. NCCL refuses it at init; so does hostnccl.
class DuplicateDeviceRanks : public ::testing::TestWithParam<int> {};
TEST_P(DuplicateDeviceRanks, EveryRankOnOneDeviceIsRefusedAtInit) {
  runRanks("duplicate_device", GetParam());
}
INSTANTIATE_TEST_SUITE_P(Conformance, DuplicateDeviceRanks, ::testing::Values(2, 4));

TEST(Conformance, EmulatedDeviceFollowsHostncclDeviceThenLocalRank) {
  if (realNccl()) GTEST_SKIP() << "hostnccl's emulated devices";
  runRanks("placement", 3);
}

TEST(Conformance, ShrinkWithoutTheParentsRoot) {
  if (realNccl()) GTEST_SKIP() << "hostnccl-only: rank 0 leaves before the shrink";
  runRanks("shrink", 4);
}

TEST(Conformance, AbortUnblocksABlockedCall) { runRanks("abort", 2); }

class NonblockingRanks : public ::testing::TestWithParam<int> {};
TEST_P(NonblockingRanks, CallsReturnInProgressAndSettleInTheBackground) {
  if (realNccl()) GTEST_SKIP() << "host buffers; NCCL's nonblocking calls need device memory";
  runRanks("nonblocking", GetParam());
}
INSTANTIATE_TEST_SUITE_P(Conformance, NonblockingRanks, ::testing::Values(1, 2, 4));

TEST(Conformance, TimeoutTurnsAHangIntoAnError) {
  if (realNccl()) GTEST_SKIP() << "HOSTNCCL_TIMEOUT is hostnccl's";
  runRanks("timeout", 2, {"HOSTNCCL_TIMEOUT=1"});
}

TEST(Conformance, MismatchedCollectivesNeverSucceed) {
  if (realNccl()) GTEST_SKIP() << "HOSTNCCL_TIMEOUT is hostnccl's";
  runRanks("mismatch", 2, {"HOSTNCCL_TIMEOUT=1"});
}

TEST(Conformance, InitWithDisagreeingNranksBlocksAsAtNcclsRoot) {
  if (realNccl()) GTEST_SKIP() << "HOSTNCCL_TIMEOUT is hostnccl's";
  runRanks("init_nranks", 3, {"HOSTNCCL_TIMEOUT=1"});
}

TEST(Conformance, InitWithARankClaimedTwiceBlocksAsAtNcclsRoot) {
  if (realNccl()) GTEST_SKIP() << "HOSTNCCL_TIMEOUT is hostnccl's";
  runRanks("init_rank_twice", 3, {"HOSTNCCL_TIMEOUT=1"});
}

TEST(Conformance, KilledRankGivesTheOthersAnError) {
  if (realNccl()) GTEST_SKIP() << "HOSTNCCL_TIMEOUT is hostnccl's";
  runRanks("kill", 3, {"HOSTNCCL_TIMEOUT=20"}, Expect{.killedRank = 2});
}

TEST(Conformance, RankWritingToAKilledPeerFailsInsteadOfDyingOfSigpipe) {
  if (realNccl()) GTEST_SKIP() << "HOSTNCCL_TIMEOUT is hostnccl's";
  runRanks("killwrite", 2, {"HOSTNCCL_TIMEOUT=20"}, Expect{.killedRank = 1});
}

TEST(Conformance, BadInputGivesNcclErrorCodes) {
  if (realNccl()) GTEST_SKIP() << "uses destroyed communicators, undefined with real NCCL";
  runRanks("errors", 1);
}

TEST(Conformance, InitAllDrivesSeveralRanksFromOneThread) {
  if (realNccl()) GTEST_SKIP() << "needs 4 GPUs with real NCCL";
  runRanks("initall", 1);
}

TEST(Conformance, RanksForkedAfterGetUniqueIdCanSplit) {
  if (realNccl()) GTEST_SKIP() << "forked ranks would share one GPU";
#if defined(__SANITIZE_ADDRESS__)
  // Seen in CI, 2 runs of 5: a child stuck for good in ASan's allocator lock, which a thread of
  // the parent held at the fork (GCC 12's ASan does not take it around fork; glibc's malloc does).
  GTEST_SKIP() << "under AddressSanitizer a forked child can inherit its allocator's lock held "
                  "(GCC 12's ASan does not lock it around fork)";
#endif
  runRanks("fork", 1);
}

}  // namespace
