#include "base/proc_state.h"

#include <dirent.h>

#include <cstdlib>
#include <cstring>

#include "base/file.h"

namespace ncclrec::base {
namespace {

struct StateWord {
  char letter;
  std::string_view word;
};
constexpr StateWord kStateWords[] = {
    {'R', "running"}, {'S', "sleeping"}, {'D', "uninterruptible"},
    {'T', "stopped"}, {'t', "traced"},   {'Z', "zombie"},
    {'X', "dead"},    {'I', "idle"},
};

// The state letter of one task's stat file; 0 when it cannot be read.
char taskState(const std::string& stat_path) {
  const std::optional<std::string> text = readFile(stat_path);
  char state = 0;
  uint64_t ticks = 0;
  if (!text || !parseTaskStat(text->c_str(), &state, &ticks)) return 0;
  return state;
}

std::string wchanOf(const std::string& task_dir) {
  std::optional<std::string> text = readFile(task_dir + "/wchan");
  if (!text) return "";
  text->erase(text->find_last_not_of(" \n") + 1);
  return *text == "0" ? "" : *text;  // "0": not waiting in the kernel
}

}  // namespace

bool parseTaskStat(const char* text, char* state, uint64_t* cpu_ticks) {
  // "tid (comm) S ppid ...": comm may hold spaces and parentheses; the last ')' ends it.
  const char* close = strrchr(text, ')');
  if (close == nullptr || close[1] != ' ' || close[2] == '\0') return false;
  *state = close[2];
  // Fields after the state: ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
  // utime stime (fields 4..15 of proc(5)).
  const char* p = close + 3;
  unsigned long long values[12] = {};
  for (unsigned long long& v : values) {
    char* end = nullptr;
    v = strtoull(p, &end, 10);
    if (end == p) return false;
    p = end;
  }
  *cpu_ticks = values[10] + values[11];
  return true;
}

std::string_view processStateName(char state) {
  for (const StateWord& s : kStateWords)
    if (s.letter == state) return s.word;
  return "";
}

char processStateLetter(std::string_view name) {
  for (const StateWord& s : kStateWords)
    if (s.word == name) return s.letter;
  return 0;
}

bool notRunning(char state) { return state == 'T' || state == 't' || state == 'D'; }

bool stoppedForGood(char state) {
  return state == 'T' || state == 't' || state == 'Z' || state == 'X';
}

std::optional<ProcessState> readProcessState(int pid, const std::string& proc_root) {
  if (pid <= 0) return std::nullopt;
  const std::string dir = proc_root + "/" + std::to_string(pid);
  ProcessState out;
  const char main_state = taskState(dir + "/stat");
  if (main_state == 0) return std::nullopt;
  out.state = main_state;
  out.wchan = wchanOf(dir);
  // A group stop stops every thread; one stopped thread alone (ptrace) leaves the others running.
  bool all_stopped = true;
  int stopped = 0;
  char stop_letter = 'T';
  if (DIR* tasks = opendir((dir + "/task").c_str())) {
    while (const dirent* entry = readdir(tasks)) {
      if (entry->d_name[0] == '.') continue;
      ++out.threads;
      const char s = taskState(dir + "/task/" + entry->d_name + "/stat");
      if (s == 't') stop_letter = 't';
      if (s == 'T' || s == 't') ++stopped;
      // A thread that ended between the listing and the read is not running code either; but
      // a process none of whose threads could be read (it exited meanwhile) is not "stopped".
      if (s != 'T' && s != 't' && s != 0) all_stopped = false;
    }
    closedir(tasks);
  }
  if (stopped > 0 && all_stopped) out.state = stop_letter;
  return out;
}

}  // namespace ncclrec::base
