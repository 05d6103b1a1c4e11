#include "recorder/params.h"

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "format/params_table.h"
#include "recorder/log.h"

namespace ncclrec::recorder {
namespace {

const format::ParamSpec& spec(std::string_view name) {
  for (const format::ParamSpec& p : format::allParams())
    if (p.name == name) return p;
  // Every name used below is in the table; a typo fails the params test.
  return format::allParams().front();
}

std::string raw(std::string_view name) {
  const std::string key(name);
  const char* v = getenv(key.c_str());
  return v != nullptr ? std::string(v) : std::string(spec(name).default_value);
}

bool parseLong(const std::string& s, long long* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

int choiceIndex(std::string_view choices, std::string_view value) {
  int index = 0;
  for (size_t pos = 0;; ++index) {
    const size_t bar = choices.find('|', pos);
    const std::string_view c = choices.substr(pos, bar - pos);
    if (c.size() == value.size() && strncasecmp(c.data(), value.data(), value.size()) == 0)
      return index;
    if (bar == std::string_view::npos) return -1;
    pos = bar + 1;
  }
}

class Reader {
 public:
  explicit Reader(std::vector<std::string>* problems) : problems_(problems) {}

  std::string str(std::string_view name) { return raw(name); }

  long long integer(std::string_view name, long long lo, long long hi) {
    long long v = 0;
    const std::string s = raw(name);
    if (!parseLong(s, &v) || v < lo || v > hi) {
      complain(name, s, "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
      parseLong(std::string(spec(name).default_value), &v);
    }
    return v;
  }

  double real(std::string_view name, double lo) {
    const std::string s = raw(name);
    char* end = nullptr;
    const double v = strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !(v >= lo)) {
      complain(name, s, "a number >= " + std::to_string(lo));
      return strtod(std::string(spec(name).default_value).c_str(), nullptr);
    }
    return v;
  }

  bool boolean(std::string_view name) {
    const std::string s = raw(name);
    if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
    if (s == "0" || s == "false" || s == "no" || s == "off" || s.empty()) return false;
    complain(name, s, "0 or 1");
    return spec(name).default_value == "1";
  }

  // Index of the value among the "a|b|c" choices, case-insensitive; the default's index when
  // the value is not one of them.
  int choice(std::string_view name) {
    const std::string s = raw(name);
    const int index = choiceIndex(spec(name).choices, s);
    if (index >= 0) return index;
    complain(name, s, "one of " + std::string(spec(name).choices));
    return choiceIndex(spec(name).choices, spec(name).default_value);
  }

 private:
  void complain(std::string_view name, const std::string& value, const std::string& expected) {
    problems_->push_back(std::string(name) + "='" + value + "' is not " + expected + "; using " +
                         std::string(spec(name).default_value));
  }
  std::vector<std::string>* problems_;
};

std::string env(const char* name) {
  const char* v = getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

}  // namespace

std::string launcherRunId() {
  if (std::string torchrun = env("TORCHELASTIC_RUN_ID"); !torchrun.empty()) return torchrun;
  if (std::string slurm = env("SLURM_JOB_ID"); !slurm.empty()) {
    const std::string step = env("SLURM_STEP_ID");
    return step.empty() ? slurm : slurm + "." + step;
  }
  if (std::string ompi = env("OMPI_MCA_ess_base_jobid"); !ompi.empty()) return ompi;
  return env("PMIX_NAMESPACE");
}

int parseSignal(const std::string& text) {
  long long n = 0;
  if (parseLong(text, &n)) return (n >= 0 && n < NSIG) ? static_cast<int>(n) : -1;
  std::string_view name(text);
  if (name.size() > 3 && strncasecmp(name.data(), "SIG", 3) == 0) name.remove_prefix(3);
  // Real-time signals by their position: RTMIN, RTMIN+n, RTMAX, RTMAX-n (glibc reserves the
  // first few, so their numbers differ between systems).
  if (name.size() >= 5 &&
      (strncasecmp(name.data(), "RTMIN", 5) == 0 || strncasecmp(name.data(), "RTMAX", 5) == 0)) {
    const bool min = strncasecmp(name.data(), "RTMIN", 5) == 0;
    long long delta = 0;
    const std::string rest(name.substr(5));
    if (!rest.empty() && (rest[0] != (min ? '+' : '-') || !parseLong(rest.substr(1), &delta)))
      return -1;
    const long long sig = min ? SIGRTMIN + delta : SIGRTMAX - delta;
    return (delta >= 0 && sig >= SIGRTMIN && sig <= SIGRTMAX) ? static_cast<int>(sig) : -1;
  }
  for (int sig = 1; sig < NSIG; ++sig) {
    const char* abbrev = sigabbrev_np(sig);
    if (abbrev != nullptr && strlen(abbrev) == name.size() &&
        strncasecmp(abbrev, name.data(), name.size()) == 0)
      return sig;
  }
  return -1;
}

Params readParams(std::vector<std::string>* problems) {
  Reader r(problems);
  Params p;
  p.dir = r.str("NCCLREC_DIR");
  if (p.dir.empty()) p.dir = std::string(spec("NCCLREC_DIR").default_value);
  p.run_id = r.str("NCCLREC_RUN_ID");
  if (p.run_id.empty()) p.run_id = launcherRunId();
  p.disable = r.boolean("NCCLREC_DISABLE");
  const long long buffer = r.integer("NCCLREC_BUFFER", 16, 1 << 26);
  uint32_t cap = 16;
  while (cap < buffer) cap <<= 1;
  p.ring_capacity = cap;
  p.stack_depth = static_cast<int>(r.integer("NCCLREC_STACK_DEPTH", 0, 64));
  p.python_depth = static_cast<int>(r.integer("NCCLREC_PYTHON_DEPTH", 0, 64));
  p.unwind = static_cast<UnwindChoice>(r.choice("NCCLREC_UNWIND"));
  p.max_comms = static_cast<uint32_t>(r.integer("NCCLREC_MAX_COMMS", 1, 1 << 20));
  p.max_stacks = static_cast<uint32_t>(r.integer("NCCLREC_MAX_STACKS", 1, 1 << 20));
  p.max_links = static_cast<uint32_t>(r.integer("NCCLREC_MAX_LINKS", 0, 1 << 20));
  p.timeout_s = r.real("NCCLREC_TIMEOUT", 0.001);
  p.poll_ms = static_cast<int>(r.integer("NCCLREC_POLL_MS", 1, 60000));
  const std::string sig = r.str("NCCLREC_DUMP_SIGNAL");
  p.dump_signal = parseSignal(sig);
  if (p.dump_signal < 0) {
    problems->push_back("NCCLREC_DUMP_SIGNAL='" + sig + "' is not a signal; using SIGUSR2");
    p.dump_signal = SIGUSR2;
  }
  const std::string snap = r.str("NCCLREC_SNAPSHOT_SIGNAL");
  p.snapshot_signal = parseSignal(snap);
  if (p.snapshot_signal < 0) {
    problems->push_back("NCCLREC_SNAPSHOT_SIGNAL='" + snap + "' is not a signal; using SIGRTMAX-3");
    p.snapshot_signal = SIGRTMAX - 3;
  }
  p.snapshot_ms = static_cast<int>(r.integer("NCCLREC_SNAPSHOT_MS", 1, 60000));
  p.snapshot_threads = static_cast<uint32_t>(r.integer("NCCLREC_SNAPSHOT_THREADS", 1, 1024));
  p.dump_on_exit = r.boolean("NCCLREC_DUMP_ON_EXIT");
  p.fatal_signals = r.boolean("NCCLREC_FATAL_SIGNALS");
  p.completion = static_cast<CompletionChoice>(r.choice("NCCLREC_COMPLETION"));
  p.cuda_library = r.str("NCCLREC_CUDA_LIBRARY");
  p.dump_library = r.str("NCCLREC_DUMP_LIBRARY");
  p.symbolize = r.boolean("NCCLREC_SYMBOLIZE");
  p.log_level = r.choice("NCCLREC_DEBUG");  // NONE|WARN|INFO|TRACE = LogLevel's values
  p.log_subsys = parseLogSubsys(r.str("NCCLREC_DEBUG_SUBSYS").c_str());
  p.watcher = r.str("NCCLREC_WATCHER");
  if (p.watcher.empty()) p.watcher = std::string(spec("NCCLREC_WATCHER").default_value);
  return p;
}

}  // namespace ncclrec::recorder
