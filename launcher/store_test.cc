#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "format/store_client.h"
#include "launcher/store_server.h"

namespace ncclrec::launcher {
namespace {

constexpr const char* kToken = "t0k3n";

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = StoreServer::start("127.0.0.1", 0, kToken);
    ASSERT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(s).value();
    endpoint_ = "127.0.0.1:" + std::to_string(server_->port());
  }
  format::StoreClient client() {
    auto c = format::StoreClient::connect(endpoint_, kToken, 5);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return std::move(c).value();
  }
  // A raw socket to the server, for speaking nonsense.
  int rawSocket() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(server_->port()));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    return fd;
  }
  // True when the server closed `fd` within 5 s.
  static bool closedByServer(int fd) {
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[256];
    for (;;) {
      const ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
    }
  }
  std::unique_ptr<StoreServer> server_;
  std::string endpoint_;
};

TEST_F(StoreTest, SetGetAddCompareSetDelete) {
  format::StoreClient c = client();
  ASSERT_TRUE(c.set("a", "1").ok());
  auto v = c.get("a", 1);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(*v, "1");
  EXPECT_EQ(*c.add("a", 41), 42);
  EXPECT_EQ(*c.add("fresh", -3), -3);
  EXPECT_EQ(*c.compareSet("a", "nope", "x"), "42");
  EXPECT_EQ(*c.compareSet("a", "42", "x"), "x");
  EXPECT_EQ(*c.compareSet("missing", "", "first"), "first");
  EXPECT_EQ(*c.compareSet("other", "something", "first"), "");
  EXPECT_FALSE(c.add("a", 1).ok());  // "x" is not an integer
  EXPECT_TRUE(*c.remove("a"));
  EXPECT_FALSE(*c.remove("a"));
  const std::string binary("\0\x01\xff zero inside", 16);
  ASSERT_TRUE(c.set("bin", binary).ok());
  EXPECT_EQ(*c.get("bin", 1), binary);
}

TEST_F(StoreTest, GetAndWaitTimeOut) {
  format::StoreClient c = client();
  const auto t0 = std::chrono::steady_clock::now();
  auto v = c.get("never", 0.2);
  EXPECT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("'never' not set"), std::string::npos)
      << v.status().message();
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(190));
  EXPECT_FALSE(c.wait({"x", "y"}, 0.1).ok());
  auto absent = c.tryGet("x");
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(absent->has_value());
  // The connection is still usable after a timeout.
  ASSERT_TRUE(c.set("x", "1").ok());
  ASSERT_TRUE(c.set("y", "2").ok());
  EXPECT_TRUE(c.wait({"x", "y"}, 0.1).ok());
  EXPECT_EQ(c.tryGet("x")->value_or("none"), "1");
}

TEST_F(StoreTest, ManyClientsWaitAddAndCompareSet) {
  constexpr int kClients = 32;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  std::vector<int64_t> tickets(kClients);
  std::vector<std::string> winners(kClients);
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      format::StoreClient c = client();
      auto t = c.add("counter", 1);
      if (!t.ok()) return;
      tickets[i] = *t;
      auto w = c.compareSet("leader", "", "client" + std::to_string(i));
      if (!w.ok()) return;
      winners[i] = *w;
      if (!c.set("arrived/" + std::to_string(i), "1").ok()) return;
      // Every client waits for all the others: only possible if waits do not block the server.
      std::vector<std::string> keys;
      for (int k = 0; k < kClients; ++k) keys.push_back("arrived/" + std::to_string(k));
      if (!c.wait(keys, 20).ok()) return;
      auto go = c.get("go", 20);
      if (go.ok() && *go == "now") ++ok;
    });
  }
  {
    format::StoreClient c = client();
    ASSERT_TRUE(c.wait({"arrived/0"}, 20).ok());
    ASSERT_TRUE(c.set("go", "now").ok());
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kClients);
  std::set<int64_t> distinct(tickets.begin(), tickets.end());
  EXPECT_EQ(distinct.size(), size_t{kClients});
  EXPECT_EQ(*distinct.begin(), 1);
  EXPECT_EQ(*distinct.rbegin(), kClients);
  for (const auto& w : winners) EXPECT_EQ(w, winners[0]);  // one leader, seen by everyone
}

TEST_F(StoreTest, WrongTokenIsRefusedAndDropped) {
  auto c = format::StoreClient::connect(endpoint_, "not-the-token", 2);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("wrong job token"), std::string::npos)
      << c.status().message();
  EXPECT_TRUE(client().set("still", "served").ok());
}

TEST_F(StoreTest, BadInputDropsOnlyThatConnection) {
  format::StoreClient good = client();
  ASSERT_TRUE(good.set("k", "v").ok());
  // A client blocked in a get while the bad ones arrive must still be answered.
  std::thread waiter([&] {
    format::StoreClient w = client();
    auto v = w.get("late", 10);
    EXPECT_TRUE(v.ok() && *v == "ok") << (v.ok() ? *v : v.status().message());
  });

  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {  // random bytes
    const int fd = rawSocket();
    std::string junk(5 + rng() % 512, '\0');
    for (auto& ch : junk) ch = static_cast<char>(rng());
    // A length that matches, so that the payload itself is decoded (and refused).
    const uint32_t len = static_cast<uint32_t>(junk.size() - 4);
    for (int i = 0; i < 4; ++i) junk[i] = static_cast<char>((len >> (8 * i)) & 0xff);
    (void)!send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
    shutdown(fd, SHUT_WR);
    EXPECT_TRUE(closedByServer(fd)) << round;
    close(fd);
  }
  {  // a huge length
    const int fd = rawSocket();
    const std::string frame("\xff\xff\xff\x7f", 4);
    (void)!send(fd, frame.data(), frame.size(), MSG_NOSIGNAL);
    EXPECT_TRUE(closedByServer(fd));
    close(fd);
  }
  {  // a well-formed request before the token
    const int fd = rawSocket();
    const std::string frame =
        format::store::Encoder(uint8_t(format::store::Cmd::kSet)).str("k").str("evil").frame();
    (void)!send(fd, frame.data(), frame.size(), MSG_NOSIGNAL);
    EXPECT_TRUE(closedByServer(fd));
    close(fd);
  }
  {  // an authenticated client that then sends a command with trailing garbage
    const int fd = rawSocket();
    std::string frames =
        format::store::Encoder(uint8_t(format::store::Cmd::kHello)).str(kToken).frame();
    std::string bad =
        format::store::Encoder(uint8_t(format::store::Cmd::kDelete)).str("k").i64(9).frame();
    (void)!send(fd, (frames + bad).data(), frames.size() + bad.size(), MSG_NOSIGNAL);
    EXPECT_TRUE(closedByServer(fd));
    close(fd);
  }
  EXPECT_EQ(*good.get("k", 1), "v");  // untouched by the unauthenticated set
  ASSERT_TRUE(good.set("late", "ok").ok());
  waiter.join();
  EXPECT_GE(server_->stats().dropped, 23u);
}

TEST(StoreServerStart, BusyPortIsReportedAsInUse) {
  auto first = StoreServer::start("127.0.0.1", 0, kToken);
  ASSERT_TRUE(first.ok());
  bool in_use = false;
  auto second = StoreServer::start("127.0.0.1", (*first)->port(), kToken, &in_use);
  EXPECT_FALSE(second.ok());
  EXPECT_TRUE(in_use);
}

TEST(StoreClientEnv, FromEnvNeedsCxxrunStore) {
  unsetenv("CXXRUN_STORE");
  auto c = format::StoreClient::fromEnv(0.1);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("CXXRUN_STORE is not set"), std::string::npos);
}

TEST(StoreClientEnv, BroadcastSharesBytesAndKeepsAttemptsApart) {
  auto server = StoreServer::start("127.0.0.1", 0, kToken);
  ASSERT_TRUE(server.ok());
  setenv("CXXRUN_STORE", ("127.0.0.1:" + std::to_string((*server)->port())).c_str(), 1);
  setenv("CXXRUN_TOKEN", kToken, 1);
  setenv("TORCHELASTIC_RESTART_COUNT", "0", 1);
  char root[16] = "unique-id-bytes";
  ASSERT_TRUE(format::storeBroadcast("nccl_id", true, root, sizeof(root)).ok());
  char got[16] = {};
  ASSERT_TRUE(format::storeBroadcast("nccl_id", false, got, sizeof(got), 2).ok());
  EXPECT_STREQ(got, "unique-id-bytes");
  char wrong_size[8] = {};
  EXPECT_FALSE(format::storeBroadcast("nccl_id", false, wrong_size, sizeof(wrong_size), 2).ok());
  setenv("TORCHELASTIC_RESTART_COUNT", "1", 1);  // a restarted group does not see attempt 0's id
  EXPECT_FALSE(format::storeBroadcast("nccl_id", false, got, sizeof(got), 0.2).ok());
  unsetenv("CXXRUN_STORE");
  unsetenv("CXXRUN_TOKEN");
  unsetenv("TORCHELASTIC_RESTART_COUNT");
}

}  // namespace
}  // namespace ncclrec::launcher
