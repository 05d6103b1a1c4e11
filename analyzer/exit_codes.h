// ncclrec-analyze's exit codes (documented in docs/analyzer.md and in --help). Scripts and the
// launcher's automatic verdict depend on them: never renumber.
#pragma once

namespace ncclrec::analyzer {

inline constexpr int kExitOk = 0;
// Bad input or usage: a path that is not readable or not a recording, a bad flag, no mode.
// One line on stderr names what is at fault.
inline constexpr int kExitBadInput = 1;
// A hang (or a mismatch that leads to one) was diagnosed: the verdict names it.
inline constexpr int kExitHang = 3;
// Something is incomplete but the recordings do not tell why; the output says what data is
// missing.
inline constexpr int kExitUndecided = 4;

}  // namespace ncclrec::analyzer
