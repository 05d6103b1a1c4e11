// Rank 0's console: one progress line redrawn in place on a terminal; on a pipe or a file (a
// launcher, a log) a line every --log-every steps instead of one per step. Other ranks print
// nothing through it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace ncclrec::trainer {

class Progress {
 public:
  // `enabled`: this is rank 0. `tty`: redraw in place (isatty on `out` by default).
  Progress(bool enabled, int64_t total_steps, int64_t log_every, FILE* out);
  Progress(bool enabled, int64_t total_steps, int64_t log_every, FILE* out, bool tty);

  // After each optimizer step; `loss` is the job-wide mean loss of the step.
  void step(int64_t step, double loss, double steps_per_s);
  // A line of its own (an evaluation, a checkpoint), clearing a progress line drawn in place.
  void line(const std::string& text);
  // Ends a progress line drawn in place.
  void finish();

 private:
  bool enabled_;
  int64_t total_;
  int64_t log_every_;
  FILE* out_;
  bool tty_;
  bool drawn_ = false;  // a progress line is on screen without its newline
  double last_draw_s_ = -1;
};

}  // namespace ncclrec::trainer
