// hostnccl's environment knobs, read once per process.
#pragma once

#include <chrono>
#include <string>

namespace ncclrec::hostnccl {

struct Config {
  // HOSTNCCL_TIMEOUT (seconds). Zero means "no timeout": a mismatched or abandoned collective
  // blocks forever, as it does with NCCL.
  std::chrono::milliseconds timeout{0};
  // HOSTNCCL_SOCKET_IFNAME: the interface whose address hostnccl listens on and connects from.
  std::string socketIfname;
  // HOSTNCCL_DEBUG: 0 = silent (default), 1 = WARN, 2 = INFO.
  int debugLevel = 0;
};

// Thread-safe; the environment is read at the first call only.
const Config& config();

// Parses HOSTNCCL_TIMEOUT's value; false when it is not a non-negative number of seconds.
bool parseTimeoutSeconds(const char* text, std::chrono::milliseconds* out);

}  // namespace ncclrec::hostnccl
