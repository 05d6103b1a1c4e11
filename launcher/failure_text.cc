#include "launcher/failure_text.h"

#include <sys/wait.h>

#include <ctime>
#include <sstream>

#include "base/text.h"
#include "launcher/agent_util.h"

namespace ncclrec::launcher {
namespace {

std::string timeText(int64_t ns) {
  const time_t t = static_cast<time_t>(ns / 1000000000);
  tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  strftime(buf, sizeof(buf), "%Y-%m-%d_%H:%M:%S", &tm);
  return buf;
}

}  // namespace

std::string failureLine(const Failure& f, const std::string& host) {
  return "rank " + std::to_string(f.rank) + " on " + host + ", " +
         (WIFSIGNALED(f.status) ? "killed by " + base::signalName(WTERMSIG(f.status))
                                : "exit code " + std::to_string(WEXITSTATUS(f.status)));
}

std::string failureText(const Failure& f, const std::string& host) {
  std::ostringstream s;
  s << "  time      : " << timeText(f.time_ns) << "\n";
  s << "  host      : " << host << "\n";
  s << "  rank      : " << f.rank << " (local_rank: " << f.local_rank << ")\n";
  if (WIFSIGNALED(f.status)) {
    s << "  exitcode  : -" << WTERMSIG(f.status) << " (pid: " << f.pid << ")\n";
    s << "  error     : Signal " << WTERMSIG(f.status) << " ("
      << base::signalName(WTERMSIG(f.status)) << ") received by PID " << f.pid << "\n";
  } else {
    s << "  exitcode  : " << WEXITSTATUS(f.status) << " (pid: " << f.pid << ")\n";
  }
  return s.str();
}

std::string failureSummaryText(const FailureSummary& in) {
  std::ostringstream s;
  s << "cxxrun: worker group failed (run " << in.run_id << ", attempt " << in.attempt << ")\n";
  s << "Failures:\n";
  // With the root cause on another node, every failure seen here is one of the others.
  const size_t first_other = in.remote_failure.empty() ? 1 : 0;
  if (in.failures.size() <= first_other) s << "  <NO_OTHER_FAILURES>\n";
  for (size_t i = first_other; i < in.failures.size(); ++i)
    s << "[" << i + 1 - first_other << "]:\n" << failureText(in.failures[i], in.host);
  s << "Root Cause (first observed failure):\n";
  if (!in.remote_failure.empty()) {
    s << "[0]:\n" << in.remote_failure;
  } else if (in.failures.empty()) {
    s << "  the worker group could not be started\n";
  } else {
    s << "[0]:\n" << failureText(in.failures.front(), in.host);
  }
  return s.str();
}

}  // namespace ncclrec::launcher
