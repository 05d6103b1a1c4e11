#include "hostnccl/store.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace ncclrec::hostnccl {
namespace {

constexpr auto kOk = StoreClient::Result::kOk;
constexpr auto kRefused = StoreClient::Result::kRefused;
constexpr auto kUnreachable = StoreClient::Result::kUnreachable;

IdInfo localId(StoreService* s, bool derived) {
  IdInfo id;
  auto* in = reinterpret_cast<sockaddr_in*>(&id.root.storage);
  in->sin_family = AF_INET;
  in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  id.root.len = sizeof(sockaddr_in);
  id.root.setPort(s->port());
  EXPECT_TRUE(randomSecret(&id.secret));
  id.derived = derived;
  return id;
}

TEST(StoreTest, TwoClientsExchangeKeysAndGetBlocksUntilSet) {
  std::string error;
  StoreService* s = StoreService::get(&error);
  ASSERT_NE(s, nullptr) << error;
  IdInfo id = localId(s, false);
  s->openSession(id.secret);
  StoreClient a, b;
  ASSERT_EQ(a.connect(id, 2, 0, deadlineAfter(std::chrono::seconds(10)), &error), kOk) << error;
  ASSERT_EQ(b.connect(id, 2, 1, deadlineAfter(std::chrono::seconds(10)), &error), kOk) << error;
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    a.set("k", {'h', 'i'});
  });
  EXPECT_EQ(b.get("k"), (std::vector<char>{'h', 'i'}));
  setter.join();
  a.done();
  b.done();
  // Both ranks finished: the session is closed and the id cannot be reused.
  StoreClient late;
  EXPECT_EQ(late.connect(id, 2, 0, deadlineAfter(std::chrono::seconds(5)), &error), kRefused);
  EXPECT_NE(error.find("refused"), std::string::npos) << error;
}

TEST(StoreTest, RefusesAWrongSecret) {
  std::string error;
  StoreService* s = StoreService::get(&error);
  ASSERT_NE(s, nullptr);
  IdInfo good = localId(s, false);
  s->openSession(good.secret);
  IdInfo bad = good;
  bad.secret[3] ^= 0x10;
  StoreClient c;
  EXPECT_EQ(c.connect(bad, 2, 0, deadlineAfter(std::chrono::seconds(5)), &error), kRefused);
}

// As NCCL's bootstrap root: the first hello that disagrees (another nranks, a rank said twice)
// stops the session; that rank waits unanswered, and a later one finds no root and gives up.
void expectSessionBrokenBy(int nranks, int rank) {
  std::string error;
  StoreService* s = StoreService::get(&error);
  ASSERT_NE(s, nullptr);
  IdInfo id = localId(s, false);
  s->openSession(id.secret);
  StoreClient a, b, c;
  ASSERT_EQ(a.connect(id, 2, 0, std::nullopt, &error), kOk) << error;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(b.connect(id, nranks, rank, deadlineAfter(std::chrono::milliseconds(500)), &error),
            kUnreachable);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(450))
      << "the hello that broke the session must wait unanswered, not be refused";
  EXPECT_EQ(c.connect(id, 2, 1, deadlineAfter(std::chrono::milliseconds(800)), &error),
            kUnreachable);
  EXPECT_NE(error.find("did not answer"), std::string::npos) << error;
}

TEST(StoreTest, DisagreeingRankCountsStopTheSession) { expectSessionBrokenBy(3, 1); }

TEST(StoreTest, ARankSaidTwiceStopsTheSession) { expectSessionBrokenBy(2, 0); }

TEST(StoreTest, AnIdWhoseRootIsGoneIsRetriedThenUnreachable) {
  // A port nobody listens on: refused, retried with growing sleeps, until the deadline.
  std::string error;
  StoreService* s = StoreService::get(&error);
  ASSERT_NE(s, nullptr);
  IdInfo id = localId(s, false);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&any), sizeof(any)), 0);
  socklen_t len = sizeof(any);
  getsockname(fd, reinterpret_cast<sockaddr*>(&any), &len);
  id.root.setPort(ntohs(any.sin_port));  // bound, never listening: connections are refused
  StoreClient c;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(c.connect(id, 2, 0, deadlineAfter(std::chrono::milliseconds(700)), &error),
            kUnreachable);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(250)) << "refusals are retried";
  EXPECT_LT(took, std::chrono::seconds(3));
  EXPECT_NE(error.find("refused"), std::string::npos) << error;
  ::close(fd);
}

TEST(StoreTest, DerivedIdWaitsForItsRootToOpenTheSession) {
  std::string error;
  StoreService* s = StoreService::get(&error);
  ASSERT_NE(s, nullptr);
  IdInfo id = localId(s, true);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    s->openSession(id.secret);
  });
  StoreClient c;
  EXPECT_EQ(c.connect(id, 1, 0, deadlineAfter(std::chrono::seconds(10)), &error), kOk) << error;
  opener.join();
}

TEST(StoreTest, DerivedIdGivesUpAtTheDeadline) {
  std::string error;
  StoreService* s = StoreService::get(&error);
  ASSERT_NE(s, nullptr);
  IdInfo id = localId(s, true);
  StoreClient c;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(c.connect(id, 1, 0, deadlineAfter(std::chrono::milliseconds(300)), &error),
            kUnreachable);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

}  // namespace
}  // namespace ncclrec::hostnccl
