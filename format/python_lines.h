// Line numbers of Python frames, from the line tables the recorder copies out of CPython code
// objects (bbox_layout.h PyCodeRecord). Used where frames are named: the dump writer and the
// black-box reader. Three encodings, one per CPython era (kPyLines* of bbox_layout.h):
//   kPyLinesLnotab     3.9:   (bytecode delta, signed line delta) byte pairs
//   kPyLinesPep626     3.10:  (bytecode delta, signed line delta) pairs, -128 = no line (PEP 626)
//   kPyLinesLocations  3.11+: the locations table (CPython's Objects/locations.md): entries of
//                      1..8 code units, each with a line delta and optional columns
#pragma once

#include <cstddef>
#include <cstdint>

namespace ncclrec::format {

// The line of the instruction at byte offset `offset` of the bytecode, `first_line` for a
// negative offset, 0 when the table says the instruction has no line or cannot tell (a table cut
// short, an unknown format). Never reads past table[0..size).
int pythonLine(uint32_t line_format, const uint8_t* table, size_t size, int first_line,
               int64_t offset);

}  // namespace ncclrec::format
