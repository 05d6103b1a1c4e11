#include "format/root_address.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <array>
#include <cstring>

namespace ncclrec::format {
namespace {

// An NCCL unique id as ncclGetUniqueId lays it out: a 64-bit magic, then the root's sockaddr.
template <class Sockaddr>
std::array<char, 128> ncclId(const Sockaddr& sa) {
  std::array<char, 128> id{};
  const uint64_t magic = 0x0123456789abcdefull;
  std::memcpy(id.data(), &magic, 8);
  std::memcpy(id.data() + 8, &sa, sizeof(sa));
  return id;
}

TEST(RootAddressTest, ReadsNcclIpv4Root) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(41234);
  inet_pton(AF_INET, "10.1.2.3", &sa.sin_addr);
  const auto id = ncclId(sa);
  const RootAddress r = rootOfUniqueId(id.data(), id.size());
  EXPECT_EQ(r.family, AF_INET);
  EXPECT_EQ(r.port, 41234);
  EXPECT_EQ(formatRootAddress(r.family, r.port, r.addr), "10.1.2.3:41234");
}

TEST(RootAddressTest, ReadsNcclIpv6Root) {
  sockaddr_in6 sa{};
  sa.sin6_family = AF_INET6;
  sa.sin6_port = htons(5000);
  inet_pton(AF_INET6, "fe80::1", &sa.sin6_addr);
  const auto id = ncclId(sa);
  const RootAddress r = rootOfUniqueId(id.data(), id.size());
  EXPECT_EQ(formatRootAddress(r.family, r.port, r.addr), "[fe80::1]:5000");
}

TEST(RootAddressTest, ReadsHostncclRoot) {
  std::array<char, 128> id{};
  std::memcpy(id.data(), "HNCL", 4);
  id[4] = 1;
  const uint16_t family = AF_INET;
  const uint16_t port = htons(4242);
  std::memcpy(id.data() + 6, &family, 2);
  std::memcpy(id.data() + 8, &port, 2);
  in_addr a{};
  inet_pton(AF_INET, "127.0.0.1", &a);
  std::memcpy(id.data() + 10, &a, 4);
  const RootAddress r = rootOfUniqueId(id.data(), id.size());
  EXPECT_EQ(formatRootAddress(r.family, r.port, r.addr), "127.0.0.1:4242");
}

TEST(RootAddressTest, ZeroOrForeignIdHasNoRoot) {
  std::array<char, 128> id{};
  EXPECT_EQ(rootOfUniqueId(id.data(), id.size()).family, 0);
  id[8] = 7;  // no such address family
  id[10] = 1;
  EXPECT_EQ(rootOfUniqueId(id.data(), id.size()).family, 0);
  EXPECT_EQ(rootOfUniqueId(nullptr, 128).family, 0);
  EXPECT_EQ(rootOfUniqueId(id.data(), 8).family, 0);
  const uint8_t none[16] = {};
  EXPECT_EQ(formatRootAddress(0, 80, none), "");
}

}  // namespace
}  // namespace ncclrec::format
