// The text cxxrun prints when its worker group fails, in torchrun's words (its "Failures:" and
// "Root Cause (first observed failure):" blocks), as pure functions of what the agent saw: the
// agent (agent_attempts.cc, agent_supervise.cc) prints them, agent_rendezvous.cc shares them with
// the other nodes through the store, and failure_text_test.cc holds their golden texts.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ncclrec::launcher {

// A worker that ended with a signal or a non-zero exit code.
struct Failure {
  int rank = -1;
  int local_rank = -1;
  pid_t pid = 0;
  int status = 0;       // as waitpid() gives it
  int64_t time_ns = 0;  // CLOCK_REALTIME when it was reaped
};

// "rank 1 on HOST, exit code 3" / "rank 1 on HOST, killed by SIGKILL".
std::string failureLine(const Failure& f, const std::string& host);

// torchrun's block for one failure: time (local time zone), host, rank, exit code (negative for
// a signal) and, for a signal, the error line. Every line starts with two spaces and ends with
// a newline.
std::string failureText(const Failure& f, const std::string& host);

struct FailureSummary {
  std::string run_id;
  int attempt = 0;
  std::string host;               // this node's host name
  std::vector<Failure> failures;  // this node's, in the order they were reaped
  // Another node's failure when it was the attempt's first (its failureText), else "".
  std::string remote_failure;
};

// "cxxrun: worker group failed (run R, attempt N)", then torchrun's "Failures:" (every failure
// but the root cause) and "Root Cause (first observed failure):" blocks.
std::string failureSummaryText(const FailureSummary& s);

}  // namespace ncclrec::launcher
