#include "launcher/token.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "format/testing/temp_dir.h"

namespace ncclrec::launcher {
namespace {

TEST(Token, OneNodeGetsAFreshRandomTokenPerRun) {
  auto a = jobToken(false, "r", nullptr, "");
  auto b = jobToken(false, "r", "ignored-on-one-node", "");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(std::regex_match(*a, std::regex("[0-9a-f]{32}"))) << *a;
  EXPECT_NE(*a, *b);
}

TEST(Token, SeveralNodesNeedASharedSecret) {
  auto t = jobToken(true, "exp7", nullptr, "");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message().rfind("cxxrun: a job on several nodes needs a shared secret", 0),
            0u)
      << t.status().message();
  EXPECT_EQ(t.status().message().find('\n'), std::string::npos);
  EXPECT_FALSE(jobToken(true, "exp7", "  \n", "").ok());
}

TEST(Token, TheSecretIsJoinedWithTheRunIdSoJobsSharingItStayApart) {
  auto a = jobToken(true, "exp7", "s3cret\n", "");
  auto b = jobToken(true, "exp8", "s3cret", "");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, "s3cret:exp7");
  EXPECT_NE(*a, *b);
}

TEST(Token, TokenFileComesBeforeTheEnvironment) {
  format::testing::TempDir dir;
  std::ofstream(dir.file("tok")) << "  from-file \nsecond line\n";
  auto t = jobToken(true, "r", "from-env", dir.file("tok"));
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(*t, "from-file:r");

  std::ofstream(dir.file("empty")) << "\n";
  auto empty = jobToken(true, "r", "from-env", dir.file("empty"));
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find(dir.file("empty") + ": the first line is empty"),
            std::string::npos)
      << empty.status().message();

  auto missing = jobToken(true, "r", nullptr, dir.file("nope"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "cxxrun: --rdzv-token-file " + dir.file("nope") +
                                            ": cannot read: No such file or directory");
}

}  // namespace
}  // namespace ncclrec::launcher
