// The shim's own log: one line per message on stderr with write(2), behind a level and subsystem
// check done before any formatting (NCCLREC_DEBUG, NCCLREC_DEBUG_SUBSYS). Never on the record
// path except for one-time warnings.
#pragma once

#include <atomic>
#include <cstdint>

namespace ncclrec::recorder {

enum class LogLevel : int { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

enum LogSubsys : uint32_t {
  kLogInit = 1u << 0,
  kLogCall = 1u << 1,
  kLogWatchdog = 1u << 2,
  kLogDump = 1u << 3,
  kLogStack = 1u << 4,
  kLogCuda = 1u << 5,
  kLogAll = 0xffffffffu,
};

struct LogConfig {
  std::atomic<int> level{static_cast<int>(LogLevel::kWarn)};
  std::atomic<uint32_t> subsys{kLogAll};
};
LogConfig& logConfig();

// Parses NCCLREC_DEBUG_SUBSYS ("INIT,DUMP", "ALL", "^CALL"); unknown names are ignored.
uint32_t parseLogSubsys(const char* spec);

inline bool logEnabled(LogLevel level, uint32_t subsys) {
  const LogConfig& c = logConfig();
  return static_cast<int>(level) <= c.level.load(std::memory_order_relaxed) &&
         (c.subsys.load(std::memory_order_relaxed) & subsys) != 0;
}

// Formats with snprintf into a stack buffer and writes one line: "ncclrec[pid] WARN msg\n".
void logWrite(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace ncclrec::recorder

#define NCCLREC_LOG(level, subsys, ...)                                                 \
  do {                                                                                  \
    if (::ncclrec::recorder::logEnabled(::ncclrec::recorder::LogLevel::level, subsys))  \
      ::ncclrec::recorder::logWrite(::ncclrec::recorder::LogLevel::level, __VA_ARGS__); \
  } while (0)
#define NCCLREC_WARN(subsys, ...) NCCLREC_LOG(kWarn, ::ncclrec::recorder::subsys, __VA_ARGS__)
#define NCCLREC_INFO(subsys, ...) NCCLREC_LOG(kInfo, ::ncclrec::recorder::subsys, __VA_ARGS__)
#define NCCLREC_TRACE(subsys, ...) NCCLREC_LOG(kTrace, ::ncclrec::recorder::subsys, __VA_ARGS__)
