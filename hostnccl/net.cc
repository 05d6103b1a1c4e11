#include "hostnccl/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "hostnccl/config.h"

namespace ncclrec::hostnccl {

int SockAddr::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  }
  return 0;
}

void SockAddr::setPort(int port) {
  if (family() == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(static_cast<uint16_t>(port));
  } else if (family() == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(static_cast<uint16_t>(port));
  }
}

std::string SockAddr::host() const {
  char text[INET6_ADDRSTRLEN] = "?";
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, text,
              sizeof(text));
  } else if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, text,
              sizeof(text));
  }
  return text;
}

std::string SockAddr::str() const {
  std::string h = host();
  if (family() == AF_INET6) h = "[" + h + "]";
  return h + ":" + std::to_string(port());
}

std::optional<SockAddr> chooseListenAddress(std::string* error) {
  const std::string& wanted = config().socketIfname;
  // NCCL_SOCKET_IFNAME, matched as NCCL does, when hostnccl's own exact name is not given.
  const std::string& nccl = wanted.empty() ? config().ncclSocketIfname : std::string();
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    *error = std::string("getifaddrs failed: ") + std::strerror(errno);
    return std::nullopt;
  }
  std::optional<SockAddr> found;
  for (ifaddrs* ifa = list; ifa != nullptr && !found; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr) continue;
    int family = ifa->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    if (!wanted.empty()) {
      if (wanted != ifa->ifa_name) continue;
    } else if (!nccl.empty()) {
      if (family != AF_INET || (ifa->ifa_flags & IFF_UP) == 0 ||
          !matchesIfname(nccl, ifa->ifa_name)) {
        continue;
      }
    } else if (family != AF_INET || (ifa->ifa_flags & IFF_UP) == 0 ||
               (ifa->ifa_flags & IFF_LOOPBACK) != 0) {
      continue;
    }
    SockAddr a;
    a.len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memcpy(&a.storage, ifa->ifa_addr, a.len);
    // Link-local IPv6 needs a scope id that another host cannot use; skip it.
    if (family == AF_INET6 &&
        IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<sockaddr_in6*>(&a.storage)->sin6_addr)) {
      continue;
    }
    found = a;
  }
  freeifaddrs(list);
  if (found) return found;
  if (!wanted.empty() || !nccl.empty()) {
    *error = (!wanted.empty() ? "HOSTNCCL_SOCKET_IFNAME=" + wanted : "NCCL_SOCKET_IFNAME=" + nccl) +
             ": no such interface with an IP address";
    return std::nullopt;
  }
  SockAddr lo;
  auto* in = reinterpret_cast<sockaddr_in*>(&lo.storage);
  in->sin_family = AF_INET;
  in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  lo.len = sizeof(sockaddr_in);
  return lo;
}

Deadline deadlineAfter(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) return std::nullopt;
  return std::chrono::steady_clock::now() + timeout;
}

namespace {

// Milliseconds poll(2) may wait, -1 for forever; 0 when the deadline has passed.
int pollBudget(const Deadline& deadline) {
  if (!deadline) return -1;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      *deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return 0;
  return left.count() > 60000 ? 60000 : static_cast<int>(left.count());
}

bool waitFd(int fd, short events, const Deadline& deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int budget = pollBudget(deadline);
    if (deadline && budget == 0) return false;
    int rc = ::poll(&p, 1, budget);
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return false;
  }
}

}  // namespace

int connectTo(const SockAddr& addr, const Deadline& deadline, std::string* error) {
  int fd = ::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  int rc = ::connect(fd, addr.get(), addr.len);
  if (rc != 0 && errno == EINPROGRESS) {
    if (!waitFd(fd, POLLOUT, deadline)) {
      *error = "connect to " + addr.str() + " timed out";
      ::close(fd);
      return -1;
    }
    int soerr = 0;
    socklen_t len = sizeof(soerr);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
    rc = soerr == 0 ? 0 : -1;
    errno = soerr;
  }
  if (rc != 0) {
    *error = "connect to " + addr.str() + ": " + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

bool sendAll(int fd, const void* data, size_t len, const Deadline& deadline) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!waitFd(fd, POLLOUT, deadline)) return false;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return false;
    }
  }
  return true;
}

bool recvAll(int fd, void* data, size_t len, const Deadline& deadline) {
  char* p = static_cast<char*>(data);
  while (len > 0) {
    ssize_t n = ::recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!waitFd(fd, POLLIN, deadline)) return false;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return false;  // EOF or error
    }
  }
  return true;
}

}  // namespace ncclrec::hostnccl
