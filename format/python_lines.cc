#include "format/python_lines.h"

#include "format/bbox_layout.h"

namespace ncclrec::format {
namespace {

// 3.9: pairs of (bytecode increment, signed line increment); the line of an offset is the sum of
// the line increments of every pair whose running bytecode offset does not exceed it.
int lnotabLine(const uint8_t* t, size_t size, int first_line, int64_t offset) {
  int line = first_line;
  int64_t addr = 0;
  for (size_t i = 0; i + 1 < size; i += 2) {
    addr += t[i];
    if (addr > offset) break;
    line += static_cast<int8_t>(t[i + 1]);
  }
  return line;
}

// 3.10 (PEP 626): pairs of (bytecode length of a range, signed line delta); a delta of -128 marks
// a range without a line. The running line advances by every other delta.
int pep626Line(const uint8_t* t, size_t size, int first_line, int64_t offset) {
  int line = first_line;
  int64_t end = 0;
  for (size_t i = 0; i + 1 < size; i += 2) {
    const int64_t start = end;
    end += t[i];
    const int delta = static_cast<int8_t>(t[i + 1]);
    if (delta != -128) line += delta;
    if (start <= offset && offset < end) return delta == -128 ? 0 : line;
  }
  return 0;
}

// Variable-length integers of the locations table: 6 bits per byte, bit 6 = more follows.
bool readVarint(const uint8_t* t, size_t size, size_t* at, uint32_t* out) {
  uint32_t value = 0;
  int shift = 0;
  while (*at < size && shift < 32) {
    const uint8_t b = t[(*at)++];
    value |= static_cast<uint32_t>(b & 63) << shift;
    shift += 6;
    if ((b & 64) == 0) {
      *out = value;
      return true;
    }
  }
  return false;
}

bool readSignedVarint(const uint8_t* t, size_t size, size_t* at, int* out) {
  uint32_t u = 0;
  if (!readVarint(t, size, at, &u)) return false;
  *out = (u & 1) != 0 ? -static_cast<int>(u >> 1) : static_cast<int>(u >> 1);
  return true;
}

// 3.11+: each entry starts with a byte whose bit 7 is set; bits 3..6 are its kind, bits 0..2 its
// length in code units minus one. Kind 15: no location; 14: long form (signed line delta, then
// end line, column, end column); 13: no columns (signed line delta); 10..12: one line, line delta
// kind - 10, two column bytes; 0..9: short form, same line, one column byte.
int locationsLine(const uint8_t* t, size_t size, int first_line, int64_t offset) {
  int line = first_line;
  int64_t end = 0;
  size_t at = 0;
  while (at < size) {
    const uint8_t head = t[at++];
    if ((head & 0x80) == 0) return 0;  // not at an entry start: the table is damaged
    const int kind = (head >> 3) & 15;
    const int64_t start = end;
    end += (int64_t{head & 7} + 1) * 2;
    bool has_line = true;
    int delta = 0;
    if (kind == 15) {
      has_line = false;
    } else if (kind == 14 || kind == 13) {
      if (!readSignedVarint(t, size, &at, &delta)) return 0;
    } else if (kind >= 10) {
      delta = kind - 10;
    }
    line += delta;
    if (start <= offset && offset < end) return has_line ? line : 0;
    // Skip the rest of this entry: every byte up to the next one with bit 7 set.
    while (at < size && (t[at] & 0x80) == 0) ++at;
  }
  return 0;
}

}  // namespace

int pythonLine(uint32_t line_format, const uint8_t* table, size_t size, int first_line,
               int64_t offset) {
  if (offset < 0) return first_line;
  if (table == nullptr) return 0;
  switch (line_format) {
    case kPyLinesLnotab:
      return lnotabLine(table, size, first_line, offset);
    case kPyLinesPep626:
      return pep626Line(table, size, first_line, offset);
    case kPyLinesLocations:
      return locationsLine(table, size, first_line, offset);
    default:
      return 0;
  }
}

}  // namespace ncclrec::format
