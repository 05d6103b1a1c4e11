// Small helpers of the cxxrun agent (agent_internal.h): clocks, cxxrun's own stderr lines, names
// of this host and of signals, a free port, and the NCCLREC_* knobs the agent reads. Any thread;
// none keeps state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ncclrec::launcher {

int64_t nowNs();  // CLOCK_REALTIME, as file times and the recordings use
double monoS();   // a monotonic clock in seconds, for deadlines
// Writes `line` and a newline to stderr with one write(2).
void say(const std::string& line);
std::string hostName();
// "SIGKILL", or "signal N" for one without a name.
std::string signalName(int sig);
// A port nobody listens on right now, for the workers' own rendezvous (MASTER_PORT); 0 when none.
int freePort();
bool isLoopback(const std::string& addr);
// The value of an NCCLREC_* knob the launcher uses: the environment's, else the default declared
// in the one table of knobs (recorder/format/params_table.h).
std::string param(std::string_view name);
// NCCLREC_DUMP_WAIT in seconds; when it is not a number, says so and gives 10.
double dumpWaitSeconds();
// The whole of a small file; "" when it cannot be read.
std::string readSmallFile(const std::string& path);

}  // namespace ncclrec::launcher
