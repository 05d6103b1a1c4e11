// Every NCCLREC_* environment variable, declared once: name, type, default, description.
//
// The recorder reads them once at its first NCCL call (recorder/params.h), launchers and tools
// read the ones they use through the same table (paramValue() below), `ncclrec-analyze
// --print-params` prints it, and docs/recorder.md is checked against it by a test. Add a knob here
// and nowhere else.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace ncclrec::format {

enum class ParamType { kString, kInt, kDouble, kBool, kSignal, kChoice };

struct ParamSpec {
  std::string_view name;
  ParamType type;
  std::string_view default_value;
  std::string_view description;
  std::string_view choices;  // "a|b|c" for kChoice, else empty
};

// X(name, type, default, choices, description)
#define NCCLREC_PARAMS(X)                                                                          \
  X(NCCLREC_DIR, kString, "./ncclrec-dumps", "",                                                   \
    "Directory for black boxes, dumps and the job-wide trigger file (created 0700)")               \
  X(NCCLREC_RUN_ID, kString, "", "",                                                               \
    "Run id stored in every black box and dump; launchers set one per run; empty: the launcher's " \
    "job id (TORCHELASTIC_RUN_ID, SLURM_JOB_ID.SLURM_STEP_ID, OMPI_MCA_ess_base_jobid, "           \
    "PMIX_NAMESPACE)")                                                                             \
  X(NCCLREC_DISABLE, kBool, "0", "", "1 = record nothing and pass every call through")             \
  X(NCCLREC_BUFFER, kInt, "20000", "",                                                             \
    "Events kept per process (ring size, rounded up to a power of two)")                           \
  X(NCCLREC_STACK_DEPTH, kInt, "16", "",                                                           \
    "Return addresses captured per call (0 = no stacks, max 64)")                                  \
  X(NCCLREC_PYTHON_DEPTH, kInt, "32", "",                                                          \
    "Python frames captured per call on threads running Python (0 = none, max 64)")                \
  X(NCCLREC_UNWIND, kChoice, "auto", "auto|libunwind|fp",                                          \
    "Stack walker: libunwind (dlopen'ed, accurate), fp (frame pointers), auto = libunwind if "     \
    "found")                                                                                       \
  X(NCCLREC_MAX_COMMS, kInt, "4096", "", "Communicators tracked per process")                      \
  X(NCCLREC_MAX_STACKS, kInt, "4096", "", "Distinct call stacks interned per process")             \
  X(NCCLREC_MAX_LINKS, kInt, "1024", "",                                                           \
    "Connections (communicator, channel, peer, direction) whose transport progress is counted "    \
    "per process, from NCCL's proxy events (0 = none; 96 bytes each)")                             \
  X(NCCLREC_TIMEOUT, kDouble, "60", "",                                                            \
    "Upper bound: seconds an op may stay incomplete before a hang is declared; set, it is also "   \
    "the fixed rule of live detection for every stall not certain at once")                        \
  X(NCCLREC_STALL_FLOOR, kDouble, "2", "",                                                         \
    "Live detection: least seconds without progress before ops that all ranks issued are a hang")  \
  X(NCCLREC_STALL_FACTOR, kDouble, "4", "",                                                        \
    "Live detection: a hang after this many times the longest recent gap between completions")     \
  X(NCCLREC_HOST_WARN, kDouble, "5", "",                                                           \
    "Live detection: least seconds before warning that ranks wait for a rank in host code")        \
  X(NCCLREC_HOST_STALL, kDouble, "30", "",                                                         \
    "Live detection: least seconds before a rank in host code while others wait is a hang")        \
  X(NCCLREC_INIT_STALL, kDouble, "30", "",                                                         \
    "Live detection: seconds a communicator's creation that every member joined may take before "  \
    "it is a hang (its bootstrap cannot connect)")                                                 \
  X(NCCLREC_POLL_MS, kInt, "200", "", "Watchdog poll period in milliseconds")                      \
  X(NCCLREC_DUMP_SIGNAL, kSignal, "SIGUSR2", "",                                                   \
    "Signal that makes a process dump (name or number; 0 = none)")                                 \
  X(NCCLREC_SNAPSHOT_SIGNAL, kSignal, "SIGRTMAX-3", "",                                            \
    "Real-time signal each thread answers with its own stack at every dump (0 = no thread "        \
    "snapshots)")                                                                                  \
  X(NCCLREC_SNAPSHOT_MS, kInt, "100", "",                                                          \
    "Milliseconds a dump waits for the threads' stacks; a thread later than that is listed with "  \
    "its kernel state")                                                                            \
  X(NCCLREC_SNAPSHOT_THREADS, kInt, "256", "",                                                     \
    "Threads a snapshot records (max 1024; the black box reserves 1152 bytes per thread)")         \
  X(NCCLREC_DUMP_ON_EXIT, kBool, "1", "", "Write a final dump, marked exited, at normal exit")     \
  X(NCCLREC_FATAL_SIGNALS, kBool, "1", "",                                                         \
    "Mark the black box on SIGSEGV/SIGABRT/SIGBUS/SIGFPE/SIGILL, then chain the old handler")      \
  X(NCCLREC_COMPLETION, kChoice, "auto", "auto|host|cuda|cuda-full|profiler",                      \
    "Completion tracking: cuda = a CUDA event after each op on its stream, cuda-full = also one "  \
    "before it (start seen, not inferred), host = call return, profiler = NCCL's profiler "        \
    "callbacks (the shim becomes NCCL_PROFILER_PLUGIN if unset), auto = with a CUDA driver, "      \
    "profiler for ops NCCL runs with kernel channels and cuda for the others, else host")          \
  X(NCCLREC_CUDA_LIBRARY, kString, "libcuda.so.1", "",                                             \
    "CUDA driver library dlopen'ed for completion tracking")                                       \
  X(NCCLREC_DUMP_LIBRARY, kString, "", "",                                                         \
    "Path of libncclrec_dump.so, loaded at the first dump (default: beside libncclrec.so)")        \
  X(NCCLREC_SYMBOLIZE, kBool, "1", "", "Resolve file:line from debug info when dumping")           \
  X(NCCLREC_DEBUG, kChoice, "WARN", "NONE|WARN|INFO|TRACE",                                        \
    "Level of ncclrec's own log on stderr")                                                        \
  X(NCCLREC_DEBUG_SUBSYS, kString, "ALL", "",                                                      \
    "Comma list of log subsystems: INIT,CALL,WATCHDOG,DUMP,STACK,CUDA or ALL (^X excludes X)")     \
  X(NCCLREC_DUMP_WAIT, kDouble, "10", "",                                                          \
    "Seconds a launcher or ncclrec-watch waits for every rank's dump after a hang before "         \
    "analyzing")                                                                                   \
  X(NCCLREC_WATCHER, kString, "auto", "",                                                          \
    "Live hang detection without cxxrun: auto = a stalled rank starts ncclrec-watch (beside "      \
    "libncclrec.so, else from PATH), off = never, or the path of the program to start")            \
  X(NCCLREC_METRICS_PORT, kString, "off", "",                                                      \
    "Prometheus metrics of cxxrun's agent and ncclrec-exporter: off, PORT (every interface) or "   \
    "ADDR:PORT; 0 = a free port")                                                                  \
  X(NCCLREC_METRICS_TEXTFILE, kString, "", "",                                                     \
    "Also write the metrics for node_exporter's textfile collector: a directory (the file is "     \
    "ncclrec_<run id>.prom) or a *.prom path; empty = none")                                       \
  X(NCCLREC_METRICS_INTERVAL, kDouble, "15", "",                                                   \
    "Seconds between two writes of the metrics text file")                                         \
  X(NCCLREC_METRICS_LINGER, kDouble, "30", "",                                                     \
    "Seconds cxxrun keeps serving its metrics after a job that hung or failed, for a last scrape")

inline constexpr ParamSpec kParams[] = {
#define NCCLREC_PARAM_SPEC(name, type, def, choices, desc) \
  ParamSpec{#name, ParamType::type, def, desc, choices},
    NCCLREC_PARAMS(NCCLREC_PARAM_SPEC)
#undef NCCLREC_PARAM_SPEC
};

inline std::span<const ParamSpec> allParams() { return kParams; }
std::string_view paramTypeName(ParamType type);

// The table's entry for `name`; nullptr when the table has none.
const ParamSpec* findParam(std::string_view name);

// The value of knob `name` for a tool or a launcher: the environment's when set and not empty,
// else the table's default ("" for a name the table lacks). It allocates: read it at startup, not
// on the record path. The recorder reads and checks its knobs through recorder/params.h.
std::string paramValue(std::string_view name);

}  // namespace ncclrec::format
