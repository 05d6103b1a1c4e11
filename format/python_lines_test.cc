#include "format/python_lines.h"

#include <gtest/gtest.h>

#include <vector>

#include "format/bbox_layout.h"

namespace ncclrec::format {
namespace {

int lineAt(uint32_t format, const std::vector<uint8_t>& table, int first, int64_t offset) {
  return pythonLine(format, table.data(), table.size(), first, offset);
}

TEST(PythonLines, LnotabSumsTheLineIncrementsUpToTheOffset) {
  // (bytecode increment, line increment): +0/+1, +6/+1, +4/+2.
  const std::vector<uint8_t> t = {0, 1, 6, 1, 4, 2};
  EXPECT_EQ(lineAt(kPyLinesLnotab, t, 10, 0), 11);
  EXPECT_EQ(lineAt(kPyLinesLnotab, t, 10, 5), 11);
  EXPECT_EQ(lineAt(kPyLinesLnotab, t, 10, 6), 12);
  EXPECT_EQ(lineAt(kPyLinesLnotab, t, 10, 12), 14);
  // Negative line increments are signed bytes.
  const std::vector<uint8_t> back = {0, 5, 2, 0xfe};
  EXPECT_EQ(lineAt(kPyLinesLnotab, back, 10, 2), 13);
}

TEST(PythonLines, Pep626RangesWithAndWithoutLines) {
  // [0,4) line 5, [4,10) line 6, [10,12) no line, [12,16) line 8.
  const std::vector<uint8_t> t = {4, 0, 6, 1, 2, 0x80, 4, 2};
  EXPECT_EQ(lineAt(kPyLinesPep626, t, 5, 0), 5);
  EXPECT_EQ(lineAt(kPyLinesPep626, t, 5, 4), 6);
  EXPECT_EQ(lineAt(kPyLinesPep626, t, 5, 9), 6);
  EXPECT_EQ(lineAt(kPyLinesPep626, t, 5, 10), 0);
  EXPECT_EQ(lineAt(kPyLinesPep626, t, 5, 12), 8);
  EXPECT_EQ(lineAt(kPyLinesPep626, t, 5, 16), 0);  // past the table
}

TEST(PythonLines, LocationsTableEveryEntryKind) {
  const std::vector<uint8_t> t = {
      0xe9, 0x04,                    // no columns, 2 units, line +2      -> [0,4) line 3
      0x80, 0x05,                    // short form, 1 unit, same line     -> [4,6) line 3
      0xf8,                          // no location, 1 unit               -> [6,8) none
      0xda, 0x01, 0x02,              // one line +1, 3 units              -> [8,14) line 4
      0xf0, 0x03, 0x00, 0x01, 0x02,  // long form, line -1          -> [14,16) line 3
      0xe8, 0x48, 0x03,              // no columns, line +100 (2 varint bytes) -> [16,18) line 103
  };
  EXPECT_EQ(lineAt(kPyLinesLocations, t, 1, 0), 3);
  EXPECT_EQ(lineAt(kPyLinesLocations, t, 1, 3), 3);
  EXPECT_EQ(lineAt(kPyLinesLocations, t, 1, 4), 3);
  EXPECT_EQ(lineAt(kPyLinesLocations, t, 1, 6), 0);
  EXPECT_EQ(lineAt(kPyLinesLocations, t, 1, 8), 4);
  EXPECT_EQ(lineAt(kPyLinesLocations, t, 1, 13), 4);
  EXPECT_EQ(lineAt(kPyLinesLocations, t, 1, 14), 3);
  EXPECT_EQ(lineAt(kPyLinesLocations, t, 1, 16), 103);
  EXPECT_EQ(lineAt(kPyLinesLocations, t, 1, 18), 0);
}

TEST(PythonLines, BadInputGivesZeroNeverAReadPastTheTable) {
  EXPECT_EQ(lineAt(kPyLinesLocations, {0xe9, 0x04}, 7, -1), 7);  // not started: first line
  EXPECT_EQ(lineAt(kPyLinesLocations, {0x04, 0x05}, 7, 0), 0);   // not an entry start
  EXPECT_EQ(lineAt(kPyLinesLocations, {0xe9, 0x44}, 7, 0), 0);   // varint cut short
  EXPECT_EQ(lineAt(kPyLinesLocations, {}, 7, 0), 0);
  EXPECT_EQ(lineAt(kPyLinesNone, {0, 1}, 7, 0), 0);
  EXPECT_EQ(lineAt(99, {0, 1}, 7, 0), 0);
  EXPECT_EQ(pythonLine(kPyLinesLnotab, nullptr, 0, 7, 0), 0);
}

TEST(PythonLines, FrameWordsRoundTrip) {
  const uint64_t w = pythonFrameWord(1234, 56);
  EXPECT_TRUE(isPythonFrameWord(w));
  EXPECT_EQ(pythonCodeIndex(w), 1234u);
  EXPECT_EQ(pythonOffset(w), 56u);
  EXPECT_FALSE(isPythonFrameWord(0x7fffdeadbeefULL));
  EXPECT_EQ(pythonCodeIndex(pythonFrameWord(kPyNoCode, kPyNoOffset)), kPyNoCode);
  EXPECT_EQ(pythonOffset(pythonFrameWord(kPyNoCode, kPyNoOffset)), kPyNoOffset);
}

}  // namespace
}  // namespace ncclrec::format
