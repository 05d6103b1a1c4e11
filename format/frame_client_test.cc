#include "format/frame_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace ncclrec::format {
namespace {

TEST(FrameClient, ParsesHostAndPort) {
  auto e = parseEndpoint("node1:29501");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->host, "node1");
  EXPECT_EQ(e->port, "29501");
  e = parseEndpoint("127.0.0.1:0");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->host, "127.0.0.1");
  EXPECT_EQ(e->port, "0");
}

TEST(FrameClient, ParsesABracketedIpv6Address) {
  auto e = parseEndpoint("[::1]:80");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->port, "80");
  e = parseEndpoint("[fe80::1%eth0]:29500");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->host, "fe80::1%eth0");
}

TEST(FrameClient, BadEndpointsGetOneLineNamingThem) {
  for (const char* bad : {"node1", "node1:", ":80", "node1:http", "node1:123456", "node1:-1", ""}) {
    auto e = parseEndpoint(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.status().message(), "'" + std::string(bad) + "' is not HOST:PORT or [IPV6]:PORT");
    std::string host = "unchanged", port = "unchanged";
    EXPECT_FALSE(splitEndpoint(bad, &host, &port)) << bad;
    EXPECT_EQ(host, "unchanged");
  }
}

TEST(FrameClient, AFrameIsItsLengthLittleEndianThenItsBytes) {
  const std::string f = framed("abc");
  EXPECT_EQ(f, std::string("\x03\x00\x00\x00", 4) + "abc");
  EXPECT_EQ(frameLength(f.data()), 3u);
  const std::string big(0x010203, 'x');
  EXPECT_EQ(frameLength(framed(big).data()), 0x010203u);
  EXPECT_EQ(framed(""), std::string(4, '\0'));
}

// A port that nobody listens on: bound, never listened, so connecting is refused at once.
TEST(FrameClient, NobodyListeningIsWorthAnotherTry) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string endpoint = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  bool retry = false;
  auto s = FrameSocket::connect(endpoint, "the test", FrameSocket::deadlineIn(2), &retry);
  close(fd);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "cannot connect: Connection refused");
  EXPECT_TRUE(retry);
}

TEST(FrameClient, ABadEndpointIsNotTriedAgain) {
  bool retry = true;
  auto s = FrameSocket::connect("localhost", "the test", FrameSocket::deadlineIn(1), &retry);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "'localhost' is not HOST:PORT or [IPV6]:PORT");
  EXPECT_FALSE(retry);
}

}  // namespace
}  // namespace ncclrec::format
