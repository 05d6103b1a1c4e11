#include "hostnccl/unique_id.h"

#include <netinet/in.h>
#include <sys/random.h>

#include <cstring>

namespace ncclrec::hostnccl {
namespace {

constexpr char kMagic[4] = {'H', 'N', 'C', 'L'};
constexpr uint8_t kVersion = 1;
constexpr uint8_t kDerivedFlag = 1;

}  // namespace

void encodeId(const IdInfo& info, ncclUniqueId* id) {
  std::memset(id->internal, 0, sizeof(id->internal));
  auto* b = reinterpret_cast<uint8_t*>(id->internal);
  std::memcpy(b, kMagic, 4);
  b[4] = kVersion;
  b[5] = info.derived ? kDerivedFlag : 0;
  uint16_t family = static_cast<uint16_t>(info.root.family());
  std::memcpy(b + 6, &family, 2);
  if (info.root.family() == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&info.root.storage);
    std::memcpy(b + 8, &in->sin_port, 2);
    std::memcpy(b + 10, &in->sin_addr, 4);
  } else {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&info.root.storage);
    std::memcpy(b + 8, &in6->sin6_port, 2);
    std::memcpy(b + 10, &in6->sin6_addr, 16);
  }
  std::memcpy(b + 32, info.secret.data(), info.secret.size());
}

bool decodeId(const ncclUniqueId& id, IdInfo* info) {
  const auto* b = reinterpret_cast<const uint8_t*>(id.internal);
  if (std::memcmp(b, kMagic, 4) != 0 || b[4] != kVersion) return false;
  uint16_t family;
  std::memcpy(&family, b + 6, 2);
  IdInfo out;
  out.derived = (b[5] & kDerivedFlag) != 0;
  if (family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&out.root.storage);
    in->sin_family = AF_INET;
    std::memcpy(&in->sin_port, b + 8, 2);
    std::memcpy(&in->sin_addr, b + 10, 4);
    out.root.len = sizeof(sockaddr_in);
  } else if (family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&out.root.storage);
    in6->sin6_family = AF_INET6;
    std::memcpy(&in6->sin6_port, b + 8, 2);
    std::memcpy(&in6->sin6_addr, b + 10, 16);
    out.root.len = sizeof(sockaddr_in6);
  } else {
    return false;
  }
  if (out.root.port() == 0) return false;
  std::memcpy(out.secret.data(), b + 32, out.secret.size());
  *info = out;
  return true;
}

bool randomSecret(Secret* secret) {
  size_t got = 0;
  while (got < secret->size()) {
    ssize_t n = getrandom(secret->data() + got, secret->size() - got, 0);
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

uint64_t fnv1a(const void* data, size_t len, uint64_t seed) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = seed;
  for (size_t i = 0; i < len; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

Secret deriveSecret(const Secret& parent, const void* inputs, size_t len) {
  uint64_t lo = fnv1a(inputs, len, fnv1a(parent.data(), parent.size()));
  uint64_t hi = fnv1a(inputs, len, fnv1a(parent.data(), parent.size(), lo ^ 0x9e3779b97f4a7c15ull));
  Secret s;
  std::memcpy(s.data(), &lo, 8);
  std::memcpy(s.data() + 8, &hi, 8);
  return s;
}

}  // namespace ncclrec::hostnccl
