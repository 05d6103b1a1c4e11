#include "launcher/heartbeat.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "launcher/store_server.h"

namespace ncclrec::launcher {
namespace {

constexpr const char* kToken = "tok";

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

TEST(Heartbeat, CountsOnceASecondInTheStore) {
  auto server = StoreServer::start("127.0.0.1", 0, kToken);
  ASSERT_TRUE(server.ok()) << server.status().message();
  const std::string endpoint = "127.0.0.1:" + std::to_string((*server)->port());
  HeartbeatSender beat(endpoint, kToken, 1);
  beat.beat(10.0);
  EXPECT_EQ(beat.count(), 1) << beat.failure();
  beat.beat(10.5);  // not yet a second
  EXPECT_EQ(beat.count(), 1);
  beat.beat(11.0);
  EXPECT_EQ(beat.count(), 2);
  EXPECT_EQ(beat.failure(), "");
  auto reader = format::StoreClient::connect(endpoint, kToken, 5);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto v = reader->tryGet(heartbeatKey(1));
  ASSERT_TRUE(v.ok() && v->has_value());
  EXPECT_EQ(**v, "2");
  EXPECT_EQ(heartbeatKey(1), "alive/1");
}

// A store that takes the connection and never answers (a network that stopped under an open
// connection looks the same): a beat gives up within about a second, and the next tries wait for
// the reconnect interval instead of blocking the agent every second.
TEST(Heartbeat, AStoreThatStoppedAnsweringHoldsABeatAboutASecond) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  HeartbeatSender beat("127.0.0.1:" + std::to_string(ntohs(addr.sin_port)), kToken, 2);
  auto t = std::chrono::steady_clock::now();
  beat.beat(0);
  EXPECT_LT(secondsSince(t), 2.5);
  EXPECT_EQ(beat.count(), 0);
  EXPECT_NE(beat.failure(), "");
  t = std::chrono::steady_clock::now();
  beat.beat(1);  // a second later: no new connection before the reconnect interval
  beat.beat(2);
  EXPECT_LT(secondsSince(t), 0.5);
  close(listener);
}

TEST(Heartbeat, AStoreThatWentAwayIsSaidAndRetried) {
  auto server = StoreServer::start("127.0.0.1", 0, kToken);
  ASSERT_TRUE(server.ok()) << server.status().message();
  const int port = (*server)->port();
  HeartbeatSender beat("127.0.0.1:" + std::to_string(port), kToken, 3);
  beat.beat(0);
  ASSERT_EQ(beat.count(), 1) << beat.failure();
  server->reset();  // the store ends: its connections close
  beat.beat(1);
  EXPECT_NE(beat.failure(), "");
  EXPECT_EQ(beat.count(), 1);
  auto again = StoreServer::start("127.0.0.1", port, kToken);
  ASSERT_TRUE(again.ok()) << again.status().message();
  beat.beat(2);  // within the reconnect interval: still nothing
  EXPECT_EQ(beat.count(), 1);
  beat.beat(6.5);
  EXPECT_EQ(beat.count(), 1) << "a new store counts from its own start";
  EXPECT_EQ(beat.failure(), "");
}

TEST(SilenceWatch, CountsTheSecondsSinceTheValueLastChanged) {
  SilenceWatch w;
  EXPECT_EQ(w.silentFor(1, 5), 0);  // never observed
  w.observe(1, std::string("4"), 10);
  w.observe(2, std::nullopt, 10);  // never counted
  w.observe(1, std::string("4"), 12);
  EXPECT_DOUBLE_EQ(w.silentFor(1, 12), 2);
  w.observe(1, std::string("5"), 12.5);
  EXPECT_DOUBLE_EQ(w.silentFor(1, 13), 0.5);
  w.observe(2, std::nullopt, 13);
  EXPECT_DOUBLE_EQ(w.silentFor(2, 13.5), 3.5);
  w.observe(2, std::string("1"), 14);
  EXPECT_DOUBLE_EQ(w.silentFor(2, 14), 0);
}

TEST(SilenceWatch, TheLineNamesEverySilentNodeAndAgreesInNumber) {
  EXPECT_EQ(silentNodesLine({}), "");
  EXPECT_EQ(silentNodesLine({{1, "nodeb", 3.04}}),
            "node 1 (host nodeb) not heard from for 3.0 s: the network between it and node 0 "
            "stopped, or the node did");
  EXPECT_EQ(silentNodesLine({{1, "nodeb", 3.04}, {3, "noded", 4.26}}),
            "node 1 (host nodeb) not heard from for 3.0 s, node 3 (host noded) not heard from for "
            "4.3 s: the network between them and node 0 stopped, or they did");
}

}  // namespace
}  // namespace ncclrec::launcher
