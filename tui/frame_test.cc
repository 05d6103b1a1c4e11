#include "tui/frame.h"

#include <gtest/gtest.h>

namespace ncclrec::tui {
namespace {

TEST(Frame, PutClipsAndStyles) {
  Frame f(6, 2);
  EXPECT_EQ(f.put(0, 4, "abc", Style::kHeader), 7);
  EXPECT_EQ(f.text(0), "    ab");
  EXPECT_EQ(f.styles(0), "....HH");
  f.put(1, -2, "xyzw");
  EXPECT_EQ(f.text(1), "zw    ");
  f.put(5, 0, "off the frame");  // ignored
  EXPECT_EQ(f.put(0, 0, "\x01\xff"), 2);
  EXPECT_EQ(f.text(0), "??  ab");
}

TEST(Frame, RowAndCellStyles) {
  Frame f(4, 1);
  f.styleRow(0, Style::kSelected);
  f.styleCells(0, 2, 10, Style::kBanner);
  EXPECT_EQ(f.styles(0), "SSBB");
}

TEST(Frame, PlainTextAndGoldenTrimTrailingBlanks) {
  Frame f(5, 2);
  f.put(0, 0, "ab", Style::kTitle);
  EXPECT_EQ(f.plainText(), "ab\n\n");
  EXPECT_EQ(f.golden(), "ab\n\n--- styles\nTT\n\n");
}

TEST(Frame, SizesBelowOneAreOne) {
  Frame f(0, -3);
  EXPECT_EQ(f.width(), 1);
  EXPECT_EQ(f.height(), 1);
}

}  // namespace
}  // namespace ncclrec::tui
