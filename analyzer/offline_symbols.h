// Offline symbolization of black-box stacks. A black box holds return addresses and a module map
// only (symbolizing is too slow for the record path), and a rank that was killed never dumps: under
// a launcher that stops every worker when one dies, no rank may have dumped at all. The analyzer
// then reads the names itself from the module files on this machine, through libdw: the ELF
// symbol table for function names, DWARF for file:line.
#pragma once

#include <vector>

#include "analyzer/site_rule.h"
#include "format/model.h"

namespace ncclrec::analyzer {

// Adds to `symbols` (keyed "module-basename+offset", as collectSymbols does) the frames of
// `ranks` that are not symbolized and that no entry of `symbols` names yet. A module is read only
// when its file exists and its build id equals the one the recording holds (a rebuilt binary
// would give wrong names; none is better), or when the recording has no build id for it. Does
// nothing without libdw. Never throws; unreadable modules are skipped.
void addOfflineSymbols(const std::vector<format::RankData>& ranks, FrameNames& symbols);

}  // namespace ncclrec::analyzer
