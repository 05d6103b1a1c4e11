// Which directory ncclrec-top reads. NCCLREC_DIR may hold black boxes directly (a job run without
// a launcher), or be cxxrun's tree, one directory per run and attempt:
//   ncclrec-dumps/<run id>/attempt_<N>/HOST.PID.bbox
// Given such a parent, the newest run (directory modification time) and its highest attempt are
// read, and the label says which was picked among how many.
#pragma once

#include <string>

namespace ncclrec::live {

struct ResolvedDir {
  std::string dir;      // the directory whose files are read
  std::string label;    // "DIR", or "DIR/run/attempt_1 (newest of 3 runs, newest of 2 attempts)"
  std::string problem;  // "" when dir exists and is a directory, else why not, naming it
};

// Descends from `base` while it holds no *.bbox or *.ncclrec.pb file but has subdirectories: to
// the highest attempt_<N> when there are such, else to the most recently modified one (at most
// three levels). Never fails: a missing or unreadable `base` is reported in `problem`.
ResolvedDir resolveDir(const std::string& base);

}  // namespace ncclrec::live
