// Golden texts of a failed worker group (failure_text.h): what cxxrun prints, byte for byte.
#include "launcher/failure_text.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <ctime>
#include <string>

namespace ncclrec::launcher {
namespace {

constexpr int64_t kT = 1'700'000'000'000'000'000;  // 2023-11-14 22:13:20 UTC

class FailureText : public ::testing::Test {
 protected:
  // The time line is in the local time zone: fixed to UTC for the goldens.
  void SetUp() override {
    const char* tz = std::getenv("TZ");
    had_tz_ = tz != nullptr;
    if (had_tz_) old_tz_ = tz;
    setenv("TZ", "UTC", 1);
    tzset();
  }
  void TearDown() override {
    if (had_tz_) {
      setenv("TZ", old_tz_.c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }

  static Failure exited(int rank, int local_rank, pid_t pid, int code) {
    return {rank, local_rank, pid, code << 8, kT};
  }
  static Failure killed(int rank, int local_rank, pid_t pid, int sig) {
    return {rank, local_rank, pid, sig, kT};
  }

 private:
  bool had_tz_ = false;
  std::string old_tz_;
};

TEST_F(FailureText, OneLine) {
  EXPECT_EQ(failureLine(exited(1, 1, 4242, 3), "nodeA"), "rank 1 on nodeA, exit code 3");
  EXPECT_EQ(failureLine(killed(0, 0, 77, SIGKILL), "nodeA"), "rank 0 on nodeA, killed by SIGKILL");
}

TEST_F(FailureText, AnExitCode) {
  EXPECT_EQ(failureText(exited(1, 1, 4242, 3), "nodeA"),
            "  time      : 2023-11-14_22:13:20\n"
            "  host      : nodeA\n"
            "  rank      : 1 (local_rank: 1)\n"
            "  exitcode  : 3 (pid: 4242)\n");
}

TEST_F(FailureText, ASignal) {
  EXPECT_EQ(failureText(killed(6, 2, 77, SIGSEGV), "nodeB"),
            "  time      : 2023-11-14_22:13:20\n"
            "  host      : nodeB\n"
            "  rank      : 6 (local_rank: 2)\n"
            "  exitcode  : -11 (pid: 77)\n"
            "  error     : Signal 11 (SIGSEGV) received by PID 77\n");
}

TEST_F(FailureText, SummaryNamesTheFirstFailureAsRootCause) {
  FailureSummary s;
  s.run_id = "r1";
  s.attempt = 2;
  s.host = "nodeA";
  s.failures = {exited(1, 1, 4242, 3), killed(0, 0, 4241, SIGTERM)};
  EXPECT_EQ(failureSummaryText(s),
            "cxxrun: worker group failed (run r1, attempt 2)\n"
            "Failures:\n"
            "[1]:\n"
            "  time      : 2023-11-14_22:13:20\n"
            "  host      : nodeA\n"
            "  rank      : 0 (local_rank: 0)\n"
            "  exitcode  : -15 (pid: 4241)\n"
            "  error     : Signal 15 (SIGTERM) received by PID 4241\n"
            "Root Cause (first observed failure):\n"
            "[0]:\n"
            "  time      : 2023-11-14_22:13:20\n"
            "  host      : nodeA\n"
            "  rank      : 1 (local_rank: 1)\n"
            "  exitcode  : 3 (pid: 4242)\n");
}

TEST_F(FailureText, SummaryOfOneFailure) {
  FailureSummary s;
  s.run_id = "r1";
  s.host = "nodeA";
  s.failures = {exited(3, 0, 9, 1)};
  EXPECT_EQ(failureSummaryText(s),
            "cxxrun: worker group failed (run r1, attempt 0)\n"
            "Failures:\n"
            "  <NO_OTHER_FAILURES>\n"
            "Root Cause (first observed failure):\n"
            "[0]:\n"
            "  time      : 2023-11-14_22:13:20\n"
            "  host      : nodeA\n"
            "  rank      : 3 (local_rank: 0)\n"
            "  exitcode  : 1 (pid: 9)\n");
}

// The root cause on another node: every failure here is one of the others.
TEST_F(FailureText, SummaryWithTheRootCauseOnAnotherNode) {
  FailureSummary s;
  s.run_id = "r2";
  s.attempt = 1;
  s.host = "nodeA";
  s.failures = {killed(0, 0, 50, SIGTERM)};
  s.remote_failure = "  host      : nodeB\n  rank      : 5 (local_rank: 1)\n";
  EXPECT_EQ(failureSummaryText(s),
            "cxxrun: worker group failed (run r2, attempt 1)\n"
            "Failures:\n"
            "[1]:\n"
            "  time      : 2023-11-14_22:13:20\n"
            "  host      : nodeA\n"
            "  rank      : 0 (local_rank: 0)\n"
            "  exitcode  : -15 (pid: 50)\n"
            "  error     : Signal 15 (SIGTERM) received by PID 50\n"
            "Root Cause (first observed failure):\n"
            "[0]:\n"
            "  host      : nodeB\n"
            "  rank      : 5 (local_rank: 1)\n");
}

TEST_F(FailureText, SummaryOfAGroupThatNeverStarted) {
  FailureSummary s;
  s.run_id = "r3";
  s.host = "nodeA";
  EXPECT_EQ(failureSummaryText(s),
            "cxxrun: worker group failed (run r3, attempt 0)\n"
            "Failures:\n"
            "  <NO_OTHER_FAILURES>\n"
            "Root Cause (first observed failure):\n"
            "  the worker group could not be started\n");
}

}  // namespace
}  // namespace ncclrec::launcher
