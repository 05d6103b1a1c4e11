// Small blocking-socket helpers for the rendezvous (never used on the data path, which is Gloo's).
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace ncclrec::hostnccl {

struct SockAddr {
  sockaddr_storage storage{};
  socklen_t len = 0;

  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
  int family() const { return storage.ss_family; }
  int port() const;
  void setPort(int port);
  // Numeric host without the port ("10.0.0.3", "::1").
  std::string host() const;
  std::string str() const;
};

// The address hostnccl advertises when it is the rendezvous root: HOSTNCCL_SOCKET_IFNAME's
// address if set, else the first non-loopback IPv4 interface that is up, else 127.0.0.1.
// Sets *error and returns nullopt when the named interface has no usable address.
std::optional<SockAddr> chooseListenAddress(std::string* error);

// A point in time after which blocking calls give up; "none" means wait forever.
using Deadline = std::optional<std::chrono::steady_clock::time_point>;
Deadline deadlineAfter(std::chrono::milliseconds timeout);  // zero timeout: none

// Returns a connected fd or -1 (errno-style message in *error).
int connectTo(const SockAddr& addr, const Deadline& deadline, std::string* error);
// Both return false on EOF, error or deadline.
bool sendAll(int fd, const void* data, size_t len, const Deadline& deadline);
bool recvAll(int fd, void* data, size_t len, const Deadline& deadline);

}  // namespace ncclrec::hostnccl
