// Error reporting for the C API: the ncclGetLastError text, async errors and the log.
//
// Nothing here throws. Messages are formatted into fixed buffers and written with write(2).
#pragma once

#include "third_party/nccl/nccl.h"

namespace ncclrec::hostnccl {

// Records `fmt` as the process's last error (what ncclGetLastError returns), logs it at WARN and
// returns `code`, so call sites read `return fail(ncclInvalidArgument, "...", ...)`.
ncclResult_t fail(ncclResult_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// The last error message; "" when none. The pointer stays valid; its text may change when another
// thread records an error (NCCL behaves the same way).
const char* lastError();

const char* errorString(ncclResult_t code);

void logWarn(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void logInfo(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Writes regardless of HOSTNCCL_DEBUG; for configuration mistakes that change behaviour.
void logAlways(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace ncclrec::hostnccl
