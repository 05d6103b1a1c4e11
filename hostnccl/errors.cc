#include "hostnccl/errors.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>

#include "hostnccl/config.h"

namespace ncclrec::hostnccl {
namespace {

constexpr size_t kMessageBytes = 1024;

// Guarded by lastErrorMutex; the returned pointer aliases it, like NCCL's ncclLastError.
char lastErrorText[kMessageBytes] = "";
std::mutex lastErrorMutex;

void writeLine(const char* prefix, const char* fmt, va_list ap) {
  char line[kMessageBytes + 64];
  int n = std::snprintf(line, sizeof(line), "[%d] %s", static_cast<int>(getpid()), prefix);
  if (n < 0) return;
  int m = std::vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
  if (m < 0) return;
  size_t len = std::min(sizeof(line) - 2, static_cast<size_t>(n) + static_cast<size_t>(m));
  line[len++] = '\n';
  ssize_t ignored = ::write(STDERR_FILENO, line, len);
  (void)ignored;
}

}  // namespace

ncclResult_t fail(ncclResult_t code, const char* fmt, ...) {
  char text[kMessageBytes];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  {
    std::lock_guard<std::mutex> lock(lastErrorMutex);
    std::snprintf(lastErrorText, sizeof(lastErrorText), "%s", text);
  }
  logWarn("%s (%s)", text, errorString(code));
  return code;
}

const char* lastError() {
  std::lock_guard<std::mutex> lock(lastErrorMutex);
  return lastErrorText;
}

const char* errorString(ncclResult_t code) {
  switch (code) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

void logWarn(const char* fmt, ...) {
  if (config().debugLevel < 1) return;
  va_list ap;
  va_start(ap, fmt);
  writeLine("hostnccl WARN ", fmt, ap);
  va_end(ap);
}

void logInfo(const char* fmt, ...) {
  if (config().debugLevel < 2) return;
  va_list ap;
  va_start(ap, fmt);
  writeLine("hostnccl INFO ", fmt, ap);
  va_end(ap);
}

void logAlways(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  writeLine("", fmt, ap);
  va_end(ap);
}

}  // namespace ncclrec::hostnccl
