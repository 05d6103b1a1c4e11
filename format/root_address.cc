#include "format/root_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace ncclrec::format {
namespace {

// hostnccl/unique_id.cc's layout: "HNCL", version 1, flags, family (u16), port (network order),
// address (4 or 16 bytes).
constexpr char kHostncclMagic[4] = {'H', 'N', 'C', 'L'};
constexpr size_t kHostncclFamily = 6, kHostncclPort = 8, kHostncclAddr = 10;
// NCCL's ncclBootstrapHandle: uint64_t magic, then union ncclSocketAddress (sockaddr_in/_in6).
constexpr size_t kNcclAddr = 8;

bool plausible(uint16_t family, uint16_t port) {
  return (family == AF_INET || family == AF_INET6) && port != 0;
}

}  // namespace

RootAddress rootOfUniqueId(const void* id, size_t bytes) {
  RootAddress out;
  const auto* b = static_cast<const uint8_t*>(id);
  if (b == nullptr || bytes < kNcclAddr + sizeof(sockaddr_in6)) return out;
  uint16_t family = 0, port_be = 0;
  if (std::memcmp(b, kHostncclMagic, sizeof(kHostncclMagic)) == 0) {
    std::memcpy(&family, b + kHostncclFamily, 2);
    std::memcpy(&port_be, b + kHostncclPort, 2);
    if (!plausible(family, ntohs(port_be))) return out;
    std::memcpy(out.addr, b + kHostncclAddr, family == AF_INET ? 4 : 16);
  } else {
    sockaddr_in6 sa{};  // the larger of the union's members
    std::memcpy(&sa, b + kNcclAddr, sizeof(sa));
    family = sa.sin6_family;
    port_be = sa.sin6_port;
    if (!plausible(family, ntohs(port_be))) return out;
    if (family == AF_INET) {
      sockaddr_in in{};
      std::memcpy(&in, b + kNcclAddr, sizeof(in));
      std::memcpy(out.addr, &in.sin_addr, 4);
    } else {
      std::memcpy(out.addr, &sa.sin6_addr, 16);
    }
  }
  out.family = family;
  out.port = ntohs(port_be);
  return out;
}

std::string formatRootAddress(uint16_t family, uint16_t port, const uint8_t (&addr)[16]) {
  char text[INET6_ADDRSTRLEN] = {};
  if ((family != AF_INET && family != AF_INET6) ||
      inet_ntop(family, addr, text, sizeof(text)) == nullptr)
    return "";
  const std::string host = family == AF_INET6 ? "[" + std::string(text) + "]" : std::string(text);
  return host + ":" + std::to_string(port);
}

}  // namespace ncclrec::format
