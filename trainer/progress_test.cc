#include "trainer/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace ncclrec::trainer {
namespace {

// Runs `body` with a Progress writing into memory and returns what it wrote.
template <class F>
std::string capture(bool enabled, bool tty, int64_t total, int64_t every, F body) {
  char* buf = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&buf, &size);
  {
    Progress p(enabled, total, every, out, tty);
    body(p);
  }
  std::fclose(out);
  std::string s(buf, size);
  std::free(buf);
  return s;
}

TEST(ProgressTest, NotATerminalGetsALineEveryLogEverySteps) {
  const std::string out = capture(true, false, 10, 4, [](Progress& p) {
    for (int s = 1; s <= 10; ++s) p.step(s, 0.5, 100);
  });
  EXPECT_EQ(out,
            "step 1/10  loss 0.500000  100.0 steps/s\n"
            "step 4/10  loss 0.500000  100.0 steps/s\n"
            "step 8/10  loss 0.500000  100.0 steps/s\n"
            "step 10/10  loss 0.500000  100.0 steps/s\n");
}

TEST(ProgressTest, ATerminalGetsOneLineRedrawnInPlace) {
  const std::string out = capture(true, true, 3, 1, [](Progress& p) {
    p.step(1, 1.0, 1);
    p.line("eval");
    p.step(3, 0.25, 1);
  });
  EXPECT_EQ(out,
            "\r\033[Kstep 1/3  loss 1.000000  1.0 steps/s\r\033[Keval\n"
            "\r\033[Kstep 3/3  loss 0.250000  1.0 steps/s\n");
}

TEST(ProgressTest, OtherRanksPrintNothing) {
  EXPECT_EQ(capture(false, false, 3, 1,
                    [](Progress& p) {
                      p.step(3, 1, 1);
                      p.line("x");
                      p.finish();
                    }),
            "");
}

}  // namespace
}  // namespace ncclrec::trainer
