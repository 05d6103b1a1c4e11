// Small helpers of the cxxrun agent (agent_internal.h): a monotonic clock in seconds, cxxrun's own
// stderr lines, a free port, NCCLREC_DUMP_WAIT. (Clocks, host and signal names and the NCCLREC_*
// knobs come from format/base and params_table.h.) Any thread;
// none keeps state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ncclrec::launcher {

double monoS();  // a monotonic clock in seconds, for deadlines
// Writes `line` and a newline to stderr with one write(2).
void say(const std::string& line);
// A port nobody listens on right now, for the workers' own rendezvous (MASTER_PORT); 0 when none.
int freePort();
bool isLoopback(const std::string& addr);
// NCCLREC_DUMP_WAIT in seconds; when it is not a number, says so and gives 10.
double dumpWaitSeconds();

}  // namespace ncclrec::launcher
