#include "recorder/net_env.h"

#include <cstring>

namespace ncclrec::recorder {
namespace {

// A name matches a prefix entry ("NCCL_IB_") or an exact one ("NCCL_NET").
constexpr const char* kPrefixes[] = {"NCCL_SOCKET_", "NCCL_IB_", "NCCL_NET_", "NCCL_BOOTSTRAP_"};
constexpr const char* kNames[] = {"NCCL_NET", "NCCL_COMM_ID", "NCCL_HOSTID",
                                  "HOSTNCCL_SOCKET_IFNAME"};

size_t nameLength(const char* name) {
  size_t n = 0;
  while (name[n] != '\0' && name[n] != '=') ++n;
  return n;
}

}  // namespace

bool isNetSetting(const char* name) {
  const size_t n = nameLength(name);
  for (const char* p : kPrefixes) {
    const size_t k = std::strlen(p);
    if (n > k && std::strncmp(name, p, k) == 0) return true;
  }
  for (const char* exact : kNames) {
    if (n == std::strlen(exact) && std::strncmp(name, exact, n) == 0) return true;
  }
  return false;
}

void captureNetEnv(char* const* environ, char* out, size_t size) {
  if (out == nullptr || size == 0) return;
  out[0] = '\0';
  size_t used = 0;
  for (char* const* e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strchr(*e, '=') == nullptr || !isNetSetting(*e)) continue;
    const size_t len = std::strlen(*e);
    const size_t need = len + (used > 0 ? 1 : 0);
    if (used + need + 1 > size) continue;
    if (used > 0) out[used++] = ' ';
    std::memcpy(out + used, *e, len);
    used += len;
    out[used] = '\0';
  }
}

}  // namespace ncclrec::recorder
