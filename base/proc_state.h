// What the kernel says of a process (/proc/PID): whether it runs, sleeps, is stopped or sleeps
// uninterruptibly, and in which kernel function it waits. The launcher's agent and ncclrec-watch
// read it for the ranks of their host when a job hangs (a rank that stopped running cannot
// dump), and the recorder's thread snapshot parses its own threads' stat lines with
// parseTaskStat().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ncclrec::base {

// Parses the content of /proc/.../stat: the state letter and utime + stime in clock ticks. False
// when it is malformed. Allocation-free (the recorder calls it while its process is stopped for
// a snapshot).
bool parseTaskStat(const char* text, char* state, uint64_t* cpu_ticks);

// The state letter of proc(5) as a word: 'R' "running", 'S' "sleeping", 'D' "uninterruptible",
// 'T' "stopped", 't' "traced", 'Z' "zombie", 'X' "dead", 'I' "idle"; "" for anything else.
std::string_view processStateName(char state);
// The letter processStateName() gives that word to; 0 for anything else.
char processStateLetter(std::string_view name);
// Whether a process in that state is there but runs none of its code: stopped by a signal or a
// debugger, or in uninterruptible sleep.
bool notRunning(char state);
// The states that do not end on their own: stopped, traced, a zombie or dead. A process in
// uninterruptible sleep may wake, and another of its threads may still run (its recorder may
// answer a dump request); one in these states answers nothing until someone else acts.
bool stoppedForGood(char state);

struct ProcessState {
  // The process as one: 'T' or 't' when every thread is stopped (a group stop: SIGSTOP, a
  // debugger), else 'D' when its main thread sleeps uninterruptibly, else its main thread's letter.
  char state = 0;
  std::string wchan;  // the kernel function that thread waits in; "" when none or not readable
  int threads = 0;    // threads listed in /proc/PID/task
};

// The state of process `pid` from `proc_root`/PID (tests pass a directory of their own); nullopt
// when there is no such process or its stat cannot be read.
std::optional<ProcessState> readProcessState(int pid, const std::string& proc_root = "/proc");

}  // namespace ncclrec::base
