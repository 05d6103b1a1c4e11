#include "launcher/frame_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <string>

namespace ncclrec::launcher {
namespace {

// Echoes each frame in upper case; "bye" is answered, then the connection closed; "bad" is a
// violation. Counts the rounds it is told about.
class Upper : public FrameServer::Protocol {
 public:
  bool onFrame(FrameServer::Conn& c, std::string_view body) override {
    if (body == "bad") return false;
    std::string up(body);
    for (char& ch : up) ch = static_cast<char>(toupper(static_cast<unsigned char>(ch)));
    c.out += FrameServer::frame(up);
    if (body == "bye") c.closing = true;
    return true;
  }
  void afterRound(FrameServer::Conns& conns) override {
    rounds += 1;
    open = conns.size();
  }
  std::atomic<int> rounds{0};
  std::atomic<size_t> open{0};
};

int connectTo(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

// Everything the server sends until it closes (or 5 s pass).
std::string readToClose(int fd) {
  std::string got;
  char buf[256];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) got.append(buf, size_t(n));
  return got;
}

TEST(FrameServer, FramesAreAnsweredInOrderAndClosingHangsUpAfterTheReply) {
  Upper protocol;
  auto server = FrameServer::listen("test", "127.0.0.1", 0, 16);
  ASSERT_TRUE(server.ok()) << server.status().message();
  (*server)->serve(&protocol);
  const int fd = connectTo((*server)->port());
  // Two frames in one send: both are answered, in order.
  const std::string req = FrameServer::frame("hi") + FrameServer::frame("bye");
  ASSERT_EQ(send(fd, req.data(), req.size(), MSG_NOSIGNAL), ssize_t(req.size()));
  EXPECT_EQ(readToClose(fd), FrameServer::frame("HI") + FrameServer::frame("BYE"));
  close(fd);
  EXPECT_EQ((*server)->accepted(), 1u);
  EXPECT_EQ((*server)->violations(), 0u);
  EXPECT_GT(protocol.rounds.load(), 0);
}

TEST(FrameServer, ViolationsAndOversizeFramesDropOnlyTheirConnection) {
  Upper protocol;
  auto server = FrameServer::listen("test", "127.0.0.1", 0, 16);
  ASSERT_TRUE(server.ok());
  (*server)->serve(&protocol);
  const int good = connectTo((*server)->port());
  const int bad = connectTo((*server)->port());
  const int big = connectTo((*server)->port());
  const std::string violation = FrameServer::frame("bad");
  (void)!send(bad, violation.data(), violation.size(), MSG_NOSIGNAL);
  const std::string oversize = FrameServer::frame(std::string(17, 'x'));
  (void)!send(big, oversize.data(), oversize.size(), MSG_NOSIGNAL);
  EXPECT_EQ(readToClose(bad), "");
  EXPECT_EQ(readToClose(big), "");
  const std::string bye = FrameServer::frame("still here") + FrameServer::frame("bye");
  (void)!send(good, bye.data(), bye.size(), MSG_NOSIGNAL);
  EXPECT_EQ(readToClose(good), FrameServer::frame("STILL HERE") + FrameServer::frame("BYE"));
  for (int fd : {good, bad, big}) close(fd);
  EXPECT_EQ((*server)->violations(), 2u);
}

TEST(FrameServer, ListenErrorsNameWhatAndWhere) {
  EXPECT_EQ(FrameServer::listen("store", "localhost", 0, 16).status().message(),
            "store: cannot listen on 'localhost': not an IPv4 address");
  auto first = FrameServer::listen("store", "127.0.0.1", 0, 16);
  ASSERT_TRUE(first.ok());
  bool in_use = false;
  const int port = (*first)->port();
  const auto second = FrameServer::listen("store", "127.0.0.1", port, 16, &in_use);
  EXPECT_TRUE(in_use);
  EXPECT_EQ(second.status().message(), "store: cannot listen on 127.0.0.1:" + std::to_string(port) +
                                           ": " + strerror(EADDRINUSE));
}

}  // namespace
}  // namespace ncclrec::launcher
