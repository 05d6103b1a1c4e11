#include "hostnccl/store.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <thread>

namespace ncclrec::hostnccl {
namespace {

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
  ASSERT_TRUE(a.connect(id, 2, deadlineAfter(std::chrono::seconds(10)), &error)) << error;
  ASSERT_TRUE(b.connect(id, 2, deadlineAfter(std::chrono::seconds(10)), &error)) << error;
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
  EXPECT_FALSE(late.connect(id, 2, deadlineAfter(std::chrono::seconds(5)), &error));
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
  EXPECT_FALSE(c.connect(bad, 2, deadlineAfter(std::chrono::seconds(5)), &error));
}

TEST(StoreTest, RefusesDisagreeingRankCounts) {
  std::string error;
  StoreService* s = StoreService::get(&error);
  ASSERT_NE(s, nullptr);
  IdInfo id = localId(s, false);
  s->openSession(id.secret);
  StoreClient a, b;
  ASSERT_TRUE(a.connect(id, 2, std::nullopt, &error));
  EXPECT_FALSE(b.connect(id, 3, std::nullopt, &error));
  EXPECT_NE(error.find("nranks"), std::string::npos) << error;
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
  EXPECT_TRUE(c.connect(id, 1, deadlineAfter(std::chrono::seconds(10)), &error)) << error;
  opener.join();
}

TEST(StoreTest, DerivedIdGivesUpAtTheDeadline) {
  std::string error;
  StoreService* s = StoreService::get(&error);
  ASSERT_NE(s, nullptr);
  IdInfo id = localId(s, true);
  StoreClient c;
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(c.connect(id, 1, deadlineAfter(std::chrono::milliseconds(300)), &error));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

}  // namespace
}  // namespace ncclrec::hostnccl
