#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "base/clock.h"
#include "base/text.h"

namespace ncclrec {
namespace {

TEST(BaseTest, Clocks) {
  const int64_t a = base::monotonicNs();
  const int64_t b = base::monotonicNs();
  EXPECT_LE(a, b);
  // 2020-01-01 .. 2100-01-01: a wall clock, in nanoseconds.
  EXPECT_GT(base::realtimeNs(), int64_t{1'577'836'800} * 1'000'000'000);
  EXPECT_LT(base::realtimeNs(), int64_t{4'102'444'800} * 1'000'000'000);
}

TEST(BaseTest, Hex) {
  EXPECT_EQ(base::hex16(0xc0ffee0000000001ull), "c0ffee0000000001");
  EXPECT_EQ(base::hex16(0x2a), "000000000000002a");
  EXPECT_EQ(base::shortHex(0xc0ffee0000000001ull), "c0ffee00");
}

TEST(BaseTest, Names) {
  EXPECT_EQ(base::signalName(SIGKILL), "SIGKILL");
  EXPECT_EQ(base::signalName(SIGUSR2), "SIGUSR2");
  EXPECT_EQ(base::signalName(0), "signal 0");
  EXPECT_EQ(base::signalNumber("SIGKILL"), SIGKILL);
  EXPECT_EQ(base::signalNumber(base::signalName(SIGSEGV)), SIGSEGV);
  EXPECT_EQ(base::signalNumber("exit code 1"), 0);
  EXPECT_EQ(base::signalNumber(""), 0);
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  EXPECT_EQ(base::hostName(), host);
}

TEST(TextTest, TimeOfDayToTheMillisecond) {
  // 2023-11-14 22:13:20.045 UTC.
  EXPECT_EQ(base::timeOfDay(1'700'000'000'045'000'000, true), "22:13:20.045");
  EXPECT_EQ(base::timeOfDay(1'700'000'000'999'999'999, true), "22:13:20.999");
  EXPECT_EQ(base::timeOfDay(1'700'000'000'045'000'000).size(), 12u);  // local: same shape
}

TEST(TextTest, DemangleReadsCxxSymbolsAndKeepsOthers) {
  EXPECT_EQ(base::demangle("_ZN2ns1fEi"), "ns::f(int)");
  EXPECT_EQ(base::demangle("ncclAllReduce"), "ncclAllReduce");
  EXPECT_EQ(base::demangle("_Z"), "_Z");
}

}  // namespace
}  // namespace ncclrec
