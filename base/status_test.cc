#include "base/status.h"

#include <gtest/gtest.h>

#include <string>

namespace ncclrec::base {
namespace {

Status failIf(bool fail) { return fail ? Status::error("boom") : okStatus(); }

StatusOr<int> half(int x) {
  if (x % 2 != 0) return Status::error(std::to_string(x) + " is odd");
  return x / 2;
}

Status chain(bool fail, int* steps) {
  NCCLREC_RETURN_IF_ERROR(failIf(fail));
  ++*steps;
  return okStatus();
}

StatusOr<int> quarter(int x) {
  NCCLREC_ASSIGN_OR_RETURN(const int h, half(x));
  NCCLREC_ASSIGN_OR_RETURN(int q, half(h));
  return q;
}

TEST(StatusTest, OkAndError) {
  EXPECT_TRUE(Status().ok());
  EXPECT_TRUE(Status().message().empty());
  const Status e = Status::error("x.bbox: bad");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.message(), "x.bbox: bad");
}

TEST(StatusTest, StatusOrHoldsValueOrError) {
  StatusOr<std::string> v = std::string("abc");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "abc");
  EXPECT_EQ(v->size(), 3u);
  EXPECT_TRUE(v.status().ok());
  StatusOr<std::string> e = Status::error("nope");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "nope");
  StatusOr<int> misuse = okStatus();
  EXPECT_FALSE(misuse.ok());
  EXPECT_NE(misuse.status().message().find("internal error"), std::string::npos);
}

TEST(StatusTest, Macros) {
  int steps = 0;
  EXPECT_TRUE(chain(false, &steps).ok());
  EXPECT_EQ(steps, 1);
  EXPECT_EQ(chain(true, &steps).message(), "boom");
  EXPECT_EQ(steps, 1);
  ASSERT_TRUE(quarter(8).ok());
  EXPECT_EQ(*quarter(8), 2);
  EXPECT_EQ(quarter(6).status().message(), "3 is odd");
  EXPECT_EQ(quarter(5).status().message(), "5 is odd");
}

}  // namespace
}  // namespace ncclrec::base
