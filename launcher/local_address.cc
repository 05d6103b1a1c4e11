#include "launcher/local_address.h"

#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

namespace ncclrec::launcher {
namespace {

bool sameAddress(const sockaddr* a, const sockaddr* b) {
  if (a->sa_family != b->sa_family) return false;
  if (a->sa_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(b)->sin_addr.s_addr;
  }
  if (a->sa_family == AF_INET6) {
    return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                       &reinterpret_cast<const sockaddr_in6*>(b)->sin6_addr, sizeof(in6_addr)) == 0;
  }
  return false;
}

bool isLoopback(const sockaddr* a) {
  if (a->sa_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr) >> 24) == 127;
  if (a->sa_family == AF_INET6)
    return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr);
  return false;
}

}  // namespace

bool isLocalAddress(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return false;
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) ifs = nullptr;
  bool local = false;
  for (const addrinfo* a = res; a != nullptr && !local; a = a->ai_next) {
    if (isLoopback(a->ai_addr)) local = true;
    for (const ifaddrs* i = ifs; i != nullptr && !local; i = i->ifa_next)
      if (i->ifa_addr != nullptr && sameAddress(a->ai_addr, i->ifa_addr)) local = true;
  }
  if (ifs != nullptr) freeifaddrs(ifs);
  freeaddrinfo(res);
  return local;
}

}  // namespace ncclrec::launcher
