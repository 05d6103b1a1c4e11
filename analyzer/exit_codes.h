// ncclrec-analyze's exit codes (documented in docs/analyzer.md and in --help). Scripts and the
// launcher's automatic verdict depend on them: never renumber.
#pragma once

namespace ncclrec::analyzer {

inline constexpr int kExitOk = 0;
// Bad input or usage: a path that is not readable or not a recording, a bad flag, no mode.
// One line on stderr names what is at fault.
inline constexpr int kExitBadInput = 1;

}  // namespace ncclrec::analyzer
