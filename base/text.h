// Small words every component prints: ids in hex, signal names, this host's name. For the tools
// and for init-time code of the recorder (they allocate: not for the record path or a signal
// handler).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ncclrec::base {

// "c0ffee0000000001": the 16 lowercase hex digits of `v`.
std::string hex16(uint64_t v);

// "c0ffee00": the first 8 of hex16(), as listings and headlines show a communicator id.
std::string shortHex(uint64_t v);

// "SIGKILL", or "signal 77" for a number with no name.
std::string signalName(int sig);

// The number signalName() gives that name to ("SIGKILL" -> 9, "signal 77" -> 77); 0 for anything
// else.
int signalNumber(const std::string& name);

// This host's name (gethostname), or "unknown-host" when it has none.
std::string hostName();

// "0", "1-3", "0,2,5-7": ascending numbers (ranks), runs written as ranges.
std::string numberRanges(const std::vector<int>& ascending);

// "16:40:01.203": the time of day of a CLOCK_REALTIME timestamp in ns, to the millisecond, in
// the machine's local time, or in UTC (without a zone suffix either way).
std::string timeOfDay(int64_t realtime_ns, bool utc = false);

// A C++ symbol as source reads it ("ns::f(int)" for "_ZN2ns1fEi"); anything else, as it is.
std::string demangle(const char* symbol);

}  // namespace ncclrec::base
