#include "launcher/frame_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "format/frame_client.h"

namespace ncclrec::launcher {

base::StatusOr<std::unique_ptr<FrameServer>> FrameServer::listen(const std::string& what,
                                                                 const std::string& bind_addr,
                                                                 int port, uint32_t max_frame,
                                                                 bool* addr_in_use) {
  if (addr_in_use != nullptr) *addr_in_use = false;
  const std::string where = bind_addr.empty() ? "0.0.0.0" : bind_addr;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, where.c_str(), &addr.sin_addr) != 1) {
    return base::Status::error(what + ": cannot listen on '" + bind_addr +
                               "': not an IPv4 address");
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return base::Status::error(what + ": socket: " + strerror(errno));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 512) != 0) {
    const int e = errno;
    close(fd);
    if (addr_in_use != nullptr) *addr_in_use = e == EADDRINUSE;
    return base::Status::error(what + ": cannot listen on " + where + ":" + std::to_string(port) +
                               ": " + strerror(e));
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int wake[2];
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    const int e = errno;
    close(fd);
    return base::Status::error(what + ": pipe: " + strerror(e));
  }
  return std::unique_ptr<FrameServer>(
      new FrameServer(fd, ntohs(addr.sin_port), wake[0], wake[1], max_frame));
}

FrameServer::FrameServer(int listen_fd, int port, int wake_read, int wake_write, uint32_t max_frame)
    : listen_fd_(listen_fd),
      port_(port),
      wake_read_(wake_read),
      wake_write_(wake_write),
      max_frame_(max_frame) {}

void FrameServer::serve(Protocol* protocol) {
  thread_ = std::thread([this, protocol] { loop(protocol); });
}

FrameServer::~FrameServer() {
  const char c = 'x';
  (void)!write(wake_write_, &c, 1);
  if (thread_.joinable()) thread_.join();
  close(listen_fd_);
  close(wake_read_);
  close(wake_write_);
}

std::string FrameServer::frame(std::string_view body) { return format::framed(body); }

void FrameServer::loop(Protocol* protocol) {
  Conns conns;
  uint64_t next_id = 1;
  std::vector<pollfd> fds;
  std::vector<uint64_t> ids;
  for (;;) {
    fds.clear();
    ids.clear();
    fds.push_back({wake_read_, POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (auto& [id, c] : conns) {
      fds.push_back({c.fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
      ids.push_back(id);
    }
    if (poll(fds.data(), fds.size(), protocol->pollTimeoutMs()) < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;  // the destructor asks to stop
    if (fds[1].revents & POLLIN) {
      for (int cfd;
           (cfd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0;) {
        const int one = 1;
        setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        Conn& c = conns[next_id];
        c.id = next_id++;
        c.fd = cfd;
        ++accepted_;
      }
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      const auto it = conns.find(ids[i - 2]);
      if (it == conns.end()) continue;
      Conn& c = it->second;
      bool drop = false;
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[65536];
        const ssize_t n = read(c.fd, buf, sizeof(buf));
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) drop = true;
        if (n > 0) c.in.append(buf, static_cast<size_t>(n));
        while (!drop && !c.closing && c.in.size() >= 4) {
          const uint32_t len = format::frameLength(c.in.data());
          if (len > max_frame_) {
            ++violations_;
            drop = true;
            break;
          }
          if (c.in.size() - 4 < len) break;
          const bool ok = protocol->onFrame(c, std::string_view(c.in).substr(4, len));
          c.in.erase(0, 4 + size_t{len});
          if (!ok) {
            ++violations_;
            drop = true;
          }
        }
      }
      if (!drop && !c.out.empty()) {
        const ssize_t n = write(c.fd, c.out.data(), c.out.size());
        if (n < 0 && errno != EAGAIN && errno != EINTR) drop = true;
        if (n > 0) c.out.erase(0, static_cast<size_t>(n));
      }
      if (drop || (c.closing && c.out.empty())) {
        close(c.fd);
        conns.erase(it);
      }
    }
    protocol->afterRound(conns);
  }
  for (auto& [id, c] : conns) close(c.fd);
}

}  // namespace ncclrec::launcher
