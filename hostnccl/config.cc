#include "hostnccl/config.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hostnccl/errors.h"

namespace ncclrec::hostnccl {

bool parseTimeoutSeconds(const char* text, std::chrono::milliseconds* out) {
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  errno = 0;
  double seconds = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !std::isfinite(seconds) || seconds < 0 ||
      seconds > 1e7) {
    return false;
  }
  *out = std::chrono::milliseconds(static_cast<long long>(seconds * 1000.0 + 0.5));
  return true;
}

bool parseDropLink(const char* text, int* src, int* dst, uint32_t* from) {
  if (text == nullptr) return false;
  int s = -1, d = -1, used = 0;
  unsigned n = 1;
  if (std::sscanf(text, "%d>%d%n", &s, &d, &used) != 2 || s < 0 || d < 0 || s == d) return false;
  const char* rest = text + used;
  if (*rest == '@') {
    int more = 0;
    if (std::sscanf(rest + 1, "%u%n", &n, &more) != 1 || n < 1 || rest[1 + more] != '\0' ||
        rest[1] == '-' || rest[1] == '+') {
      return false;
    }
  } else if (*rest != '\0') {
    return false;
  }
  *src = s;
  *dst = d;
  *from = n;
  return true;
}

bool parseStallKernel(const char* text, int* rank, uint32_t* at) {
  if (text == nullptr) return false;
  int r = -1, used = 0;
  unsigned n = 0;
  if (std::sscanf(text, "%d@%u%n", &r, &n, &used) != 2 || text[used] != '\0' || r < 0 || n < 1 ||
      std::strchr(text, '-') != nullptr || std::strchr(text, '+') != nullptr) {
    return false;
  }
  *rank = r;
  *at = n;
  return true;
}

namespace {

Config readConfig() {
  Config c;
  if (const char* v = std::getenv("HOSTNCCL_DEBUG")) {
    if (std::strcmp(v, "INFO") == 0 || std::strcmp(v, "2") == 0) {
      c.debugLevel = 2;
    } else if (std::strcmp(v, "WARN") == 0 || std::strcmp(v, "1") == 0) {
      c.debugLevel = 1;
    }
  }
  if (const char* v = std::getenv("HOSTNCCL_TIMEOUT")) {
    if (!parseTimeoutSeconds(v, &c.timeout)) {
      // Warn unconditionally: a silently ignored timeout turns an expected error into a hang.
      logAlways("hostnccl: ignoring HOSTNCCL_TIMEOUT='%s': expected seconds >= 0", v);
      c.timeout = std::chrono::milliseconds(0);
    }
  }
  if (const char* v = std::getenv("HOSTNCCL_DROP_LINK"); v != nullptr && *v != '\0') {
    if (parseDropLink(v, &c.dropSrc, &c.dropDst, &c.dropFrom)) {
      logAlways(
          "hostnccl: HOSTNCCL_DROP_LINK=%s: messages from rank %d to rank %d of each "
          "communicator are dropped from its collective #%u on (a test fault)",
          v, c.dropSrc, c.dropDst, c.dropFrom);
    } else {
      logAlways("hostnccl: ignoring HOSTNCCL_DROP_LINK='%s': expected SRC>DST or SRC>DST@N", v);
    }
  }
  if (const char* v = std::getenv("HOSTNCCL_STALL_KERNEL"); v != nullptr && *v != '\0') {
    if (parseStallKernel(v, &c.stallRank, &c.stallAt)) {
      logAlways(
          "hostnccl: HOSTNCCL_STALL_KERNEL=%s: rank %d's collective #%u of each communicator "
          "never starts its kernel and never returns (a test fault)",
          v, c.stallRank, c.stallAt);
    } else {
      logAlways("hostnccl: ignoring HOSTNCCL_STALL_KERNEL='%s': expected RANK@N", v);
    }
  }
  if (const char* v = std::getenv("HOSTNCCL_SOCKET_IFNAME")) c.socketIfname = v;
  if (const char* v = std::getenv("NCCL_SOCKET_IFNAME")) c.ncclSocketIfname = v;
  return c;
}

}  // namespace

bool matchesIfname(const std::string& spec, const std::string& name) {
  std::string list = spec;
  const bool exclude = !list.empty() && list[0] == '^';
  if (exclude) list.erase(0, 1);
  const bool exact = !list.empty() && list[0] == '=';
  if (exact) list.erase(0, 1);
  bool any = false;
  for (size_t start = 0; start <= list.size();) {
    const size_t comma = list.find(',', start);
    const std::string item = list.substr(start, comma - start);
    if (!item.empty() && (exact ? name == item : name.compare(0, item.size(), item) == 0))
      any = true;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return exclude ? !any : any;
}

const Config& config() {
  static const Config kConfig = readConfig();
  return kConfig;
}

}  // namespace ncclrec::hostnccl
