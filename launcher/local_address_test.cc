#include "launcher/local_address.h"

#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>

namespace ncclrec::launcher {
namespace {

TEST(LocalAddress, LoopbackAndThisMachinesOwnAddressesAreLocal) {
  EXPECT_TRUE(isLocalAddress("127.0.0.1"));
  EXPECT_TRUE(isLocalAddress("127.0.0.2"));
  EXPECT_TRUE(isLocalAddress("localhost"));
  // Every IPv4 address of an interface here, written out.
  ifaddrs* ifs = nullptr;
  ASSERT_EQ(getifaddrs(&ifs), 0);
  int checked = 0;
  for (const ifaddrs* i = ifs; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    char text[NI_MAXHOST];
    ASSERT_EQ(getnameinfo(i->ifa_addr, sizeof(sockaddr_in), text, sizeof(text), nullptr, 0,
                          NI_NUMERICHOST),
              0);
    EXPECT_TRUE(isLocalAddress(text)) << text;
    ++checked;
  }
  freeifaddrs(ifs);
  EXPECT_GT(checked, 0);
}

TEST(LocalAddress, OtherMachinesAndNamesThatDoNotResolveAreNot) {
  // TEST-NET-3 (RFC 5737): documentation only, never assigned to an interface.
  EXPECT_FALSE(isLocalAddress("203.0.113.7"));
  EXPECT_FALSE(isLocalAddress("no-such-host.invalid"));
  EXPECT_FALSE(isLocalAddress(""));
}

}  // namespace
}  // namespace ncclrec::launcher
