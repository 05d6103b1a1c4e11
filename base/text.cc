#include "base/text.h"

#include <cxxabi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace ncclrec::base {

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string shortHex(uint64_t v) { return hex16(v).substr(0, 8); }

std::string signalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? "SIG" + std::string(abbrev) : "signal " + std::to_string(sig);
}

int signalNumber(const std::string& name) {
  for (int sig = 1; sig < 65; ++sig) {
    if (signalName(sig) == name) return sig;
  }
  return 0;
}

std::string hostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "unknown-host";
  return buf;
}

std::string numberRanges(const std::vector<int>& ascending) {
  std::string s;
  for (size_t i = 0; i < ascending.size();) {
    size_t j = i;
    while (j + 1 < ascending.size() && ascending[j + 1] == ascending[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += std::to_string(ascending[i]);
    if (j > i) s += "-" + std::to_string(ascending[j]);
    i = j + 1;
  }
  return s;
}

std::string demangle(const char* symbol) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(symbol, nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) return symbol;
  std::string result(demangled);
  std::free(demangled);
  return result;
}

std::string timeOfDay(int64_t realtime_ns, bool utc) {
  const time_t secs = static_cast<time_t>(realtime_ns / 1'000'000'000);
  tm t{};
  if (utc) {
    gmtime_r(&secs, &t);
  } else {
    localtime_r(&secs, &t);
  }
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%02d:%02d:%02d.%03d", t.tm_hour, t.tm_min, t.tm_sec,
                static_cast<int>(realtime_ns / 1'000'000 % 1000));
  return buf;
}

}  // namespace ncclrec::base
