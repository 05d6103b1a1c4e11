#include "base/text.h"

#include <cxxabi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

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

}  // namespace ncclrec::base
