#include "launcher/store_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <map>
#include <vector>

#include "launcher/store_protocol.h"

namespace ncclrec::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using store::Cmd;
using store::Reply;

struct Conn {
  int fd = -1;
  bool authed = false;
  bool closing = false;  // drop once `out` is flushed (reply to a bad token)
  std::string in;
  std::string out;
};

// A get or wait that found a key missing; answered when the keys appear or at the deadline.
struct Waiter {
  uint64_t conn = 0;
  bool is_get = false;
  std::vector<std::string> keys;
  Clock::time_point deadline;
};

class Service {
 public:
  explicit Service(const std::string& token) : token_(token) {}

  // Handles one decoded payload from `c`; false: drop the connection.
  bool handle(uint64_t id, Conn& c, std::string_view payload) {
    store::Decoder d(payload);
    const auto cmd = static_cast<Cmd>(d.u8());
    if (!c.authed) {
      if (cmd != Cmd::kHello) return false;
      const std::string token = d.str();
      if (!d.complete()) return false;
      if (token != token_) {
        c.out += store::Encoder(static_cast<uint8_t>(Reply::kError)).str("wrong job token").frame();
        c.closing = true;
        return true;
      }
      c.authed = true;
      c.out += store::Encoder(static_cast<uint8_t>(Reply::kOk)).frame();
      return true;
    }
    switch (cmd) {
      case Cmd::kSet: {
        std::string key = d.str(), value = d.str();
        if (!d.complete()) return false;
        data_[key] = std::move(value);
        c.out += ok();
        return true;
      }
      case Cmd::kGet: {
        std::string key = d.str();
        const int64_t timeout_ms = d.i64();
        if (!d.complete() || timeout_ms < 0) return false;
        if (auto it = data_.find(key); it != data_.end()) {
          c.out += value(it->second);
        } else {
          waiters_.push_back({id, true, {std::move(key)}, deadline(timeout_ms)});
        }
        return true;
      }
      case Cmd::kWait: {
        const int64_t n = d.i64();
        if (d.failed() || n < 0 || n > 4096) return false;
        std::vector<std::string> keys;
        for (int64_t i = 0; i < n; ++i) keys.push_back(d.str());
        const int64_t timeout_ms = d.i64();
        if (!d.complete() || timeout_ms < 0) return false;
        if (allPresent(keys)) {
          c.out += ok();
        } else {
          waiters_.push_back({id, false, std::move(keys), deadline(timeout_ms)});
        }
        return true;
      }
      case Cmd::kAdd: {
        std::string key = d.str();
        const int64_t delta = d.i64();
        if (!d.complete()) return false;
        int64_t current = 0;
        if (auto it = data_.find(key); it != data_.end()) {
          const std::string& s = it->second;
          const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), current);
          if (ec != std::errc() || ptr != s.data() + s.size()) {
            c.out += store::Encoder(static_cast<uint8_t>(Reply::kError))
                         .str("add: the value of '" + key + "' is not an integer")
                         .frame();
            return true;
          }
        }
        current =
            static_cast<int64_t>(static_cast<uint64_t>(current) + static_cast<uint64_t>(delta));
        data_[key] = std::to_string(current);
        c.out += store::Encoder(static_cast<uint8_t>(Reply::kInt)).i64(current).frame();
        return true;
      }
      case Cmd::kCompareSet: {
        std::string key = d.str(), expected = d.str(), desired = d.str();
        if (!d.complete()) return false;
        auto it = data_.find(key);
        // torch.distributed semantics: a missing key counts as the empty value.
        if ((it == data_.end() && expected.empty()) ||
            (it != data_.end() && it->second == expected)) {
          data_[key] = desired;
          c.out += value(desired);
        } else {
          c.out += value(it == data_.end() ? std::string() : it->second);
        }
        return true;
      }
      case Cmd::kDelete: {
        std::string key = d.str();
        if (!d.complete()) return false;
        const int64_t erased = static_cast<int64_t>(data_.erase(key));
        c.out += store::Encoder(static_cast<uint8_t>(Reply::kInt)).i64(erased).frame();
        return true;
      }
      default:
        return false;
    }
  }

  // Answers the waiters whose keys are all present or whose deadline passed.
  void settle(std::map<uint64_t, Conn>& conns, Clock::time_point now) {
    for (size_t i = 0; i < waiters_.size();) {
      Waiter& w = waiters_[i];
      auto conn = conns.find(w.conn);
      std::string reply;
      if (conn == conns.end()) {
        reply = "-";  // the client went away: forget the waiter
      } else if (allPresent(w.keys)) {
        reply = w.is_get ? value(data_[w.keys[0]]) : ok();
      } else if (now >= w.deadline) {
        reply = store::Encoder(static_cast<uint8_t>(Reply::kTimeout)).frame();
      }
      if (reply.empty()) {
        ++i;
        continue;
      }
      if (conn != conns.end()) conn->second.out += reply;
      waiters_.erase(waiters_.begin() + static_cast<ptrdiff_t>(i));
    }
  }

  // Milliseconds until the nearest waiter's deadline, -1 when none.
  int pollTimeoutMs(Clock::time_point now) const {
    int64_t best = -1;
    for (const Waiter& w : waiters_) {
      const int64_t ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(w.deadline - now).count() + 1;
      if (best < 0 || ms < best) best = ms < 0 ? 0 : ms;
    }
    return static_cast<int>(best > 60000 ? 60000 : best);
  }

 private:
  static std::string ok() { return store::Encoder(static_cast<uint8_t>(Reply::kOk)).frame(); }
  static std::string value(const std::string& v) {
    return store::Encoder(static_cast<uint8_t>(Reply::kValue)).str(v).frame();
  }
  static Clock::time_point deadline(int64_t timeout_ms) {
    // A day stands for "forever" and keeps the arithmetic away from overflow.
    return Clock::now() + std::chrono::milliseconds(timeout_ms > 86400000 ? 86400000 : timeout_ms);
  }
  bool allPresent(const std::vector<std::string>& keys) const {
    for (const auto& k : keys)
      if (!data_.contains(k)) return false;
    return true;
  }

  std::string token_;
  std::map<std::string, std::string> data_;
  std::vector<Waiter> waiters_;
};

}  // namespace

format::StatusOr<std::unique_ptr<StoreServer>> StoreServer::start(const std::string& bind_addr,
                                                                  int port, std::string token,
                                                                  bool* addr_in_use) {
  if (addr_in_use != nullptr) *addr_in_use = false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (bind_addr.empty() || bind_addr == "0.0.0.0") {
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
  } else if (inet_pton(AF_INET, bind_addr.c_str(), &addr.sin_addr) != 1) {
    return format::Status::error("store: cannot listen on '" + bind_addr +
                                 "': not an IPv4 address");
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return format::Status::error(std::string("store: socket: ") + strerror(errno));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 512) != 0) {
    const int e = errno;
    close(fd);
    if (addr_in_use != nullptr) *addr_in_use = e == EADDRINUSE;
    return format::Status::error("store: cannot listen on " + bind_addr + ":" +
                                 std::to_string(port) + ": " + strerror(e));
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) != 0) {
    close(fd);
    return format::Status::error(std::string("store: pipe: ") + strerror(errno));
  }
  std::unique_ptr<StoreServer> server(
      new StoreServer(fd, ntohs(addr.sin_port), pipefd[0], pipefd[1], std::move(token)));
  server->thread_ = std::thread([s = server.get()] { s->serve(); });
  return server;
}

StoreServer::StoreServer(int listen_fd, int port, int wake_read, int wake_write, std::string token)
    : listen_fd_(listen_fd),
      port_(port),
      wake_read_(wake_read),
      wake_write_(wake_write),
      token_(std::move(token)) {}

StoreServer::~StoreServer() {
  const char c = 'x';
  (void)!write(wake_write_, &c, 1);
  if (thread_.joinable()) thread_.join();
  close(listen_fd_);
  close(wake_read_);
  close(wake_write_);
}

void StoreServer::serve() {
  Service service(token_);
  std::map<uint64_t, Conn> conns;
  uint64_t next_id = 1;
  std::vector<pollfd> fds;
  std::vector<uint64_t> ids;
  auto drop = [&](uint64_t id, bool violation) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    close(it->second.fd);
    conns.erase(it);
    if (violation) ++dropped_;
  };
  for (;;) {
    fds.clear();
    ids.clear();
    fds.push_back({wake_read_, POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (auto& [id, c] : conns) {
      fds.push_back({c.fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
      ids.push_back(id);
    }
    if (poll(fds.data(), fds.size(), service.pollTimeoutMs(Clock::now())) < 0 && errno != EINTR)
      break;
    if (fds[0].revents != 0) break;
    if (fds[1].revents & POLLIN) {
      for (;;) {
        const int cfd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (cfd < 0) break;
        const int one = 1;
        setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        conns[next_id++].fd = cfd;
        ++accepted_;
      }
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      const uint64_t id = ids[i - 2];
      auto it = conns.find(id);
      if (it == conns.end()) continue;
      Conn& c = it->second;
      bool keep = true;
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[65536];
        const ssize_t n = read(c.fd, buf, sizeof(buf));
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
          drop(id, false);
          continue;
        }
        if (n > 0) c.in.append(buf, static_cast<size_t>(n));
        while (keep && !c.closing && c.in.size() >= 4) {
          const uint32_t len = store::readU32(c.in.data());
          if (len == 0 || len > store::kMaxFrame) {
            keep = false;
            break;
          }
          if (c.in.size() - 4 < len) break;
          keep = service.handle(id, c, std::string_view(c.in).substr(4, len));
          c.in.erase(0, 4 + static_cast<size_t>(len));
        }
        if (!keep) {
          drop(id, true);
          continue;
        }
      }
      if (!c.out.empty()) {
        const ssize_t n = write(c.fd, c.out.data(), c.out.size());
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
          drop(id, false);
          continue;
        }
        if (n > 0) c.out.erase(0, static_cast<size_t>(n));
      }
      if (c.closing && c.out.empty()) drop(id, true);
    }
    service.settle(conns, Clock::now());
    // Replies produced by settle() go out on the next round's POLLOUT.
  }
  for (auto& [id, c] : conns) close(c.fd);
}

}  // namespace ncclrec::launcher
