#include "live/testing/fake_agent.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ncclrec::live::testing {

FakeAgent::FakeAgent(std::function<std::string(const std::string&)> answer, bool raw)
    : answer_(std::move(answer)), raw_(raw) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  listen(fd_, 4);
  socklen_t len = sizeof(a);
  getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { serve(); });
}

FakeAgent::~FakeAgent() {
  shutdown(fd_, SHUT_RDWR);
  close(fd_);
  thread_.join();
}

void FakeAgent::serve() {
  for (;;) {
    const int c = accept(fd_, nullptr, nullptr);
    if (c < 0) return;
    answerAll(c);
    close(c);
  }
}

void FakeAgent::answerAll(int c) {
  for (;;) {
    unsigned char len[4];
    if (recv(c, len, 4, MSG_WAITALL) != 4) break;
    const uint32_t n = len[0] | len[1] << 8 | len[2] << 16 | uint32_t(len[3]) << 24;
    std::string body(n, '\0');
    if (n > 0 && recv(c, body.data(), n, MSG_WAITALL) != ssize_t(n)) break;
    ++requests_;
    std::string reply = answer_(body);
    if (!raw_) {
      std::string frame(4, '\0');
      for (int i = 0; i < 4; ++i) frame[size_t(i)] = char((reply.size() >> (8 * i)) & 0xff);
      reply = frame + reply;
    }
    send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
  }
}

}  // namespace ncclrec::live::testing
