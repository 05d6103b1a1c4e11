#include "hostnccl/unique_id.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>

namespace ncclrec::hostnccl {
namespace {

IdInfo sampleId() {
  IdInfo id;
  auto* in = reinterpret_cast<sockaddr_in*>(&id.root.storage);
  in->sin_family = AF_INET;
  in->sin_port = htons(4242);
  inet_pton(AF_INET, "10.1.2.3", &in->sin_addr);
  id.root.len = sizeof(sockaddr_in);
  for (size_t i = 0; i < id.secret.size(); ++i) id.secret[i] = static_cast<uint8_t>(i * 7 + 1);
  return id;
}

TEST(UniqueIdTest, RoundTripsIpv4) {
  ncclUniqueId raw;
  IdInfo in = sampleId();
  in.derived = true;
  encodeId(in, &raw);
  IdInfo out;
  ASSERT_TRUE(decodeId(raw, &out));
  EXPECT_EQ(out.root.str(), "10.1.2.3:4242");
  EXPECT_EQ(out.secret, in.secret);
  EXPECT_TRUE(out.derived);
}

TEST(UniqueIdTest, RoundTripsIpv6) {
  IdInfo in;
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&in.root.storage);
  in6->sin6_family = AF_INET6;
  in6->sin6_port = htons(80);
  inet_pton(AF_INET6, "fd00::1", &in6->sin6_addr);
  in.root.len = sizeof(sockaddr_in6);
  ncclUniqueId raw;
  encodeId(in, &raw);
  IdInfo out;
  ASSERT_TRUE(decodeId(raw, &out));
  EXPECT_EQ(out.root.str(), "[fd00::1]:80");
  EXPECT_FALSE(out.derived);
}

TEST(UniqueIdTest, RejectsForeignBytes) {
  ncclUniqueId raw;
  std::memset(&raw, 0, sizeof(raw));
  IdInfo out;
  EXPECT_FALSE(decodeId(raw, &out));
  encodeId(sampleId(), &raw);
  raw.internal[4] = 9;  // unknown version
  EXPECT_FALSE(decodeId(raw, &out));
}

TEST(UniqueIdTest, RandomSecretsDiffer) {
  Secret a, b;
  ASSERT_TRUE(randomSecret(&a));
  ASSERT_TRUE(randomSecret(&b));
  EXPECT_NE(a, b);
}

TEST(UniqueIdTest, DerivedSecretsDependOnEveryInput) {
  Secret parent = sampleId().secret;
  int32_t x[3] = {1, 2, 3}, y[3] = {1, 2, 4};
  EXPECT_EQ(deriveSecret(parent, x, sizeof(x)), deriveSecret(parent, x, sizeof(x)));
  EXPECT_NE(deriveSecret(parent, x, sizeof(x)), deriveSecret(parent, y, sizeof(y)));
  Secret other = parent;
  other[0] ^= 1;
  EXPECT_NE(deriveSecret(parent, x, sizeof(x)), deriveSecret(other, x, sizeof(x)));
}

}  // namespace
}  // namespace ncclrec::hostnccl
