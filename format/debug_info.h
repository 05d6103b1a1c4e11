#pragma once
// The name and source line of one address in a module that libdw opened: the one lookup that the
// dump library (recorder/dump/symbolize.cc: the live process's modules) and the analyzer
// (analyzer/offline_symbols.cc: module files on disk) share; each keeps its own way of finding the
// module. Header-only and compiled only with libdw (NCCLREC_HAVE_LIBDW), so that format links no
// libdw itself.
#ifdef NCCLREC_HAVE_LIBDW

#include <elfutils/libdwfl.h>

#include "base/text.h"
#include "format/model.h"

namespace ncclrec::format {

// Fills what the debug information knows of `pc` in `m`: the function (demangled, only when
// `frame` has none: dladdr's name is kept), and the source file and line.
inline void addDebugInfo(Dwfl_Module* m, Dwarf_Addr pc, Frame* frame) {
  if (frame->function.empty()) {
    // The full symbol table names static functions, which dladdr cannot see.
    if (const char* name = dwfl_module_addrname(m, pc)) frame->function = base::demangle(name);
  }
  if (Dwfl_Line* line = dwfl_module_getsrc(m, pc)) {
    int lineno = 0;
    if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
      frame->file = file;
      frame->line = lineno;
    }
  }
}

}  // namespace ncclrec::format

#endif  // NCCLREC_HAVE_LIBDW
