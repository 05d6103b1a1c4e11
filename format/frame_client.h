// The client side of ncclrec's framed TCP (every message, both ways: a 4-byte little-endian
// length, then that many bytes), shared by the two clients of a cxxrun agent: the store's
// (format/store_client.h) and ncclrec-top's (live/remote_source.h, TopRequest/TopReply of
// ncclrec.proto). The server side is launcher/frame_server.h. hostnccl keeps its own sockets: it
// depends on nothing of ours.
//
// Header-only, like store_client.h, so that a program cxxrun launches links nothing of ncclrec.
// Every blocking step is bounded by a deadline (the socket is non-blocking, waits are poll()s);
// nothing throws; errors come back as a Status with one line saying why. One FrameSocket is for
// one thread at a time.
#pragma once

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "base/status.h"

namespace ncclrec::format {

struct Endpoint {
  std::string host;  // a name or an address; an IPv6 address without its brackets
  std::string port;  // digits only
};

// Parses "HOST:PORT" or "[IPV6]:PORT" (PORT: 1 to 5 digits). Fails with one line naming the text.
inline base::StatusOr<Endpoint> parseEndpoint(std::string_view text) {
  const auto bad = [&] {
    return base::Status::error("'" + std::string(text) + "' is not HOST:PORT or [IPV6]:PORT");
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return bad();
  Endpoint e{std::string(text.substr(0, colon)), std::string(text.substr(colon + 1))};
  if (e.host.size() > 2 && e.host.front() == '[' && e.host.back() == ']')
    e.host = e.host.substr(1, e.host.size() - 2);
  if (e.port.size() > 5) return bad();
  for (char c : e.port)
    if (c < '0' || c > '9') return bad();
  return e;
}

// The same as parseEndpoint, for callers that only need yes or no.
inline bool splitEndpoint(const std::string& endpoint, std::string* host, std::string* port) {
  auto e = parseEndpoint(endpoint);
  if (!e.ok()) return false;
  *host = std::move(e->host);
  *port = std::move(e->port);
  return true;
}

inline uint32_t frameLength(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

// `body` with its length in front: one frame, ready to send.
inline std::string framed(std::string_view body) {
  std::string out(4, '\0');
  const auto n = static_cast<uint32_t>(body.size());
  for (int i = 0; i < 4; ++i)
    out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  out.append(body);
  return out;
}

class FrameSocket {
 public:
  using Clock = std::chrono::steady_clock;

  static Clock::time_point deadlineIn(double seconds) {
    return Clock::now() +
           std::chrono::milliseconds(static_cast<int64_t>(seconds > 0 ? seconds * 1000 : 0));
  }

  // One try at every address of `endpoint` until `deadline`. `peer` names the other side in
  // errors ("connection closed by the agent"). On failure *retry (when given) tells a refused or
  // timed-out connection, worth another try later, from a bad endpoint or a name that does not
  // resolve. Errors: the parse error, getaddrinfo's message or "cannot connect: WHY".
  static base::StatusOr<FrameSocket> connect(const std::string& endpoint, std::string peer,
                                             Clock::time_point deadline, bool* retry = nullptr) {
    if (retry != nullptr) *retry = false;
    auto e = parseEndpoint(endpoint);
    if (!e.ok()) return e.status();
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(e->host.c_str(), e->port.c_str(), &hints, &res);
    if (rc != 0) return base::Status::error(gai_strerror(rc));
    std::string why = "no address";
    for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
      const int fd =
          ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
      if (fd < 0) continue;
      const int err = connectOne(fd, a, deadline);
      if (err == 0) {
        ::freeaddrinfo(res);
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        return FrameSocket(fd, std::move(peer));
      }
      why = std::string("cannot connect: ") + std::strerror(err);
      ::close(fd);
    }
    ::freeaddrinfo(res);
    if (retry != nullptr) *retry = true;
    return base::Status::error(why);
  }

  FrameSocket(FrameSocket&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)), peer_(std::move(other.peer_)) {}
  FrameSocket& operator=(FrameSocket&& other) noexcept {
    std::swap(fd_, other.fd_);
    std::swap(peer_, other.peer_);
    return *this;
  }
  FrameSocket(const FrameSocket&) = delete;
  FrameSocket& operator=(const FrameSocket&) = delete;
  ~FrameSocket() { close(); }

  bool connected() const { return fd_ >= 0; }
  // This end's address as the peer sees it ("10.0.0.2", "::1"): where a server of this process
  // on every interface is reachable from the peer. "" when not connected.
  std::string localAddress() const {
    sockaddr_storage a{};
    socklen_t len = sizeof(a);
    char host[NI_MAXHOST] = "";
    if (fd_ < 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
        ::getnameinfo(reinterpret_cast<sockaddr*>(&a), len, host, sizeof(host), nullptr, 0,
                      NI_NUMERICHOST) != 0)
      return "";
    return host;
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // Sends every byte of `bytes` (a whole frame: see framed()) before `deadline`.
  base::Status sendAll(std::string_view bytes, Clock::time_point deadline) {
    if (fd_ < 0) return base::Status::error("not connected");
    for (size_t done = 0; done < bytes.size();) {
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n > 0) {
        done += static_cast<size_t>(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        if (!waitFor(POLLOUT, deadline)) return base::Status::error("send timed out");
      } else {
        return base::Status::error(std::string("send: ") + std::strerror(errno));
      }
    }
    return base::okStatus();
  }

  // Reads one frame and returns its body. A length over `max_len` fails ("reply of N bytes is
  // too large") without reading the body; the connection is then out of step: close it.
  base::StatusOr<std::string> readFrame(uint32_t max_len, Clock::time_point deadline) {
    char head[4];
    NCCLREC_RETURN_IF_ERROR(recvAll(head, 4, deadline));
    const uint32_t len = frameLength(head);
    if (len > max_len)
      return base::Status::error("reply of " + std::to_string(len) + " bytes is too large");
    // Straight into place: a reply may be megabytes, no small buffer to copy through.
    std::string body(len, '\0');
    NCCLREC_RETURN_IF_ERROR(recvAll(body.data(), len, deadline));
    return body;
  }

 private:
  FrameSocket(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {}

  static int msLeft(Clock::time_point deadline) {
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return ms < 0 ? 0 : ms > 86'400'000 ? 86'400'000 : static_cast<int>(ms);
  }

  // Waits for `events` on `fd` until the deadline; false on timeout or error.
  static bool waitFor(int fd, short events, Clock::time_point deadline) {
    for (;;) {
      pollfd p{fd, events, 0};
      const int rc = ::poll(&p, 1, msLeft(deadline));
      if (rc > 0) return true;
      if (rc == 0 || errno != EINTR) return false;
    }
  }
  bool waitFor(short events, Clock::time_point deadline) const {
    return waitFor(fd_, events, deadline);
  }

  // 0 when `fd` connected to `a` before the deadline, else the errno that says why not.
  static int connectOne(int fd, const addrinfo* a, Clock::time_point deadline) {
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) return 0;
    int err = errno;
    if (err != EINPROGRESS) return err;
    if (!waitFor(fd, POLLOUT, deadline)) return ETIMEDOUT;
    socklen_t len = sizeof(err);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    return err;
  }

  base::Status recvAll(char* out, size_t n, Clock::time_point deadline) {
    if (fd_ < 0) return base::Status::error("not connected");
    for (size_t done = 0; done < n;) {
      const ssize_t got = ::recv(fd_, out + done, n - done, 0);
      if (got > 0) {
        done += static_cast<size_t>(got);
      } else if (got == 0) {
        return base::Status::error("connection closed by " + peer_);
      } else if (errno == EAGAIN || errno == EINTR) {
        if (!waitFor(POLLIN, deadline)) return base::Status::error("no reply in time");
      } else {
        return base::Status::error(std::string("recv: ") + std::strerror(errno));
      }
    }
    return base::okStatus();
  }

  int fd_ = -1;
  std::string peer_;
};

}  // namespace ncclrec::format
