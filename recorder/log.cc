#include "recorder/log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace ncclrec::recorder {

LogConfig& logConfig() {
  static LogConfig config;
  return config;
}

uint32_t parseLogSubsys(const char* spec) {
  if (spec == nullptr || *spec == '\0') return kLogAll;
  std::string_view s(spec);
  const bool exclude = s.front() == '^';
  if (exclude) s.remove_prefix(1);
  uint32_t mask = 0;
  while (!s.empty()) {
    const size_t comma = s.find(',');
    const std::string_view name = s.substr(0, comma);
    struct Named {
      std::string_view name;
      uint32_t bit;
    };
    static constexpr Named kNames[] = {
        {"INIT", kLogInit}, {"CALL", kLogCall},   {"WATCHDOG", kLogWatchdog},
        {"DUMP", kLogDump}, {"STACK", kLogStack}, {"CUDA", kLogCuda},
        {"ALL", kLogAll}};
    for (const Named& n : kNames) {
      if (n.name.size() == name.size() && strncasecmp(n.name.data(), name.data(), name.size()) == 0)
        mask |= n.bit;
    }
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return exclude ? ~mask : mask;
}

void logWrite(LogLevel level, const char* fmt, ...) {
  static constexpr const char* kLevelNames[] = {"", "WARN", "INFO", "TRACE"};
  char line[1024];
  int n = snprintf(line, sizeof(line), "ncclrec[%d] %s ", static_cast<int>(getpid()),
                   kLevelNames[static_cast<int>(level)]);
  if (n < 0) return;
  va_list args;
  va_start(args, fmt);
  const int m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, args);
  va_end(args);
  if (m < 0) return;
  n = std::min<int>(n + m, static_cast<int>(sizeof(line)) - 2);
  line[n++] = '\n';
  for (int off = 0; off < n;) {
    const ssize_t w = write(STDERR_FILENO, line + off, n - off);
    if (w <= 0) break;
    off += static_cast<int>(w);
  }
}

}  // namespace ncclrec::recorder
