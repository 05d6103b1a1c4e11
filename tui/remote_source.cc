#include "tui/remote_source.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "recorder/format/dump_io.h"
#include "recorder/format/ncclrec.pb.h"
#include "tui/rank_convert.h"

namespace ncclrec::tui {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kMaxReply = 64u << 20;
constexpr int64_t kRetryNs = 2'000'000'000;

Clock::time_point deadlineIn(double s) {
  return Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
}

int msLeft(Clock::time_point deadline) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return ms < 0 ? 0 : static_cast<int>(ms);
}

// Waits for `events` on fd until the deadline; false on timeout or error.
bool waitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, msLeft(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return false;
  }
}

bool sendAll(int fd, const std::string& bytes, Clock::time_point deadline, std::string* why) {
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!waitFor(fd, POLLOUT, deadline)) return *why = "send timed out", false;
    } else {
      return *why = std::string("send: ") + std::strerror(errno), false;
    }
  }
  return true;
}

bool recvAll(int fd, char* out, size_t n, Clock::time_point deadline, std::string* why) {
  for (size_t done = 0; done < n;) {
    const ssize_t got = ::recv(fd, out + done, n - done, 0);
    if (got > 0) {
      done += static_cast<size_t>(got);
    } else if (got == 0) {
      return *why = "connection closed by the agent", false;
    } else if (errno == EAGAIN || errno == EINTR) {
      if (!waitFor(fd, POLLIN, deadline)) return *why = "no reply in time", false;
    } else {
      return *why = std::string("recv: ") + std::strerror(errno), false;
    }
  }
  return true;
}

}  // namespace

bool splitEndpoint(const std::string& endpoint, std::string* host, std::string* port) {
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == endpoint.size()) return false;
  *host = endpoint.substr(0, colon);
  *port = endpoint.substr(colon + 1);
  if (host->size() > 2 && host->front() == '[' && host->back() == ']')
    *host = host->substr(1, host->size() - 2);
  for (char c : *port)
    if (c < '0' || c > '9') return false;
  return port->size() <= 5;
}

RemoteSource::RemoteSource(std::string endpoint, std::string token)
    : endpoint_(std::move(endpoint)), token_(std::move(token)) {}

RemoteSource::~RemoteSource() { disconnect(); }

void RemoteSource::disconnect() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool RemoteSource::connectTo(double timeout_s, std::string* why) {
  std::string host, port;
  if (!splitEndpoint(endpoint_, &host, &port)) return *why = "not HOST:PORT", false;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) return *why = gai_strerror(rc), false;
  const auto deadline = deadlineIn(timeout_s);
  *why = "no address";
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    const int fd =
        ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int err = 0;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS && waitFor(fd, POLLOUT, deadline)) {
        socklen_t len = sizeof(err);
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      } else if (err == EINPROGRESS) {
        err = ETIMEDOUT;
      }
    }
    if (err == 0) {
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      fd_ = fd;
      ::freeaddrinfo(res);
      return true;
    }
    *why = std::string("cannot connect: ") + std::strerror(err);
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return false;
}

RemoteSource::Result RemoteSource::poll(int64_t now_ns, double timeout_s) {
  Result out;
  out.label = endpoint_;
  const std::string who = "agent " + endpoint_ + ": ";
  if (fd_ < 0) {
    // A dead agent is not asked again at every refresh.
    if (last_attempt_ns_ != 0 && now_ns - last_attempt_ns_ < kRetryNs && !last_error_.empty()) {
      out.error = last_error_;
      return out;
    }
    last_attempt_ns_ = now_ns;
    std::string why;
    if (!connectTo(timeout_s, &why)) {
      out.error = last_error_ = who + why;
      return out;
    }
  }
  format::pb::TopRequest request;
  request.set_token(token_);
  request.set_max_events(static_cast<uint32_t>(kRecentOps));
  std::string body = request.SerializeAsString();
  std::string frame(4, '\0');
  for (int i = 0; i < 4; ++i) frame[size_t(i)] = static_cast<char>((body.size() >> (8 * i)) & 0xff);
  frame += body;
  const auto deadline = deadlineIn(timeout_s);
  std::string why;
  char len_bytes[4];
  if (!sendAll(fd_, frame, deadline, &why) || !recvAll(fd_, len_bytes, 4, deadline, &why)) {
    disconnect();
    out.error = last_error_ = who + why;
    return out;
  }
  uint32_t len = 0;
  for (int i = 0; i < 4; ++i) len |= uint32_t(static_cast<uint8_t>(len_bytes[i])) << (8 * i);
  if (len > kMaxReply) {
    disconnect();
    out.error = last_error_ = who + "reply of " + std::to_string(len) + " bytes is too large";
    return out;
  }
  std::string bytes(len, '\0');
  format::pb::TopReply reply;
  if (!recvAll(fd_, bytes.data(), len, deadline, &why) ||
      !reply.ParseFromArray(bytes.data(), static_cast<int>(len))) {
    disconnect();
    out.error = last_error_ =
        who + (why.empty() ? "reply does not decode (not a cxxrun agent?)" : why);
    return out;
  }
  if (!reply.error().empty()) {
    disconnect();
    out.error = last_error_ = who + reply.error();
    return out;
  }
  last_error_.clear();
  const int64_t shift = reply.now_ns() > 0 ? now_ns - reply.now_ns() : 0;
  for (const format::pb::TopRank& r : reply.ranks()) {
    format::RankData data = format::fromProto(r.data());
    data.source_path = "agent " + endpoint_ + ": " + r.source();
    data.source = format::SourceKind::kBlackBox;
    RankEntry entry = entryFromRankData(data, shift);
    if (r.process_gone() && entry.liveness == Liveness::kAlive) entry.liveness = Liveness::kGone;
    out.ranks.push_back(std::move(entry));
  }
  for (const std::string& p : reply.peers()) out.peers.push_back(p);
  for (const std::string& w : reply.warnings()) out.notes.push_back(who + w);
  out.label = reply.host() + ":" + reply.dir();
  return out;
}

}  // namespace ncclrec::tui
