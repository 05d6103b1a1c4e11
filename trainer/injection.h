// Fault injection for the reference trainer: --inject=CLASS[:rank=R][:step=S]. Each class plants
// one classic data-parallel bug on one rank, so that ncclrec has a real job to diagnose; the
// verdict each one should get is in docs/trainer.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace ncclrec::trainer {

enum class FaultClass {
  kNone,
  kGatedSave,         // an extra all-reduce in saveCheckpoint() on rank R only
  kGatedEvalBarrier,  // rank R alone evaluates and waits in the eval all-reduce
  kUnevenData,        // rank R's data runs out at step S: it leaves the loop and exits
  kNanSkip,           // rank R gets a NaN loss at step S and skips backward and its all-reduces
  kCrash,             // rank R aborts at step S
  kHostHang,          // rank R sleeps forever in host code at step S
  kSizeMismatch,      // rank R builds a wider hidden layer (see --skip-shape-check)
  kOpOrder,           // rank R swaps agreeOnStop()'s broadcast and syncStepStats()'s all-reduce
  kSlowRank,          // rank R sleeps before each step from step S on; no hang
};

struct Injection {
  FaultClass fault = FaultClass::kNone;
  int rank = -1;      // the culprit, a global rank
  int64_t step = -1;  // 1-based optimizer step; for gated_*: the first save/eval at or after it

  bool active() const { return fault != FaultClass::kNone; }
  // This rank is the culprit of `f`.
  bool on(FaultClass f, int my_rank) const { return fault == f && rank == my_rank; }
  // ... and `step` is the faulty step.
  bool at(FaultClass f, int my_rank, int64_t now) const { return on(f, my_rank) && now == step; }
};

std::string_view faultClassName(FaultClass f);
// Every class but kNone, in declaration order.
const std::vector<FaultClass>& allFaultClasses();
// "gated_save|gated_eval_barrier|...", for help texts and error messages.
std::string faultClassList();

// Parses "CLASS[:rank=R][:step=S]" for a job of `world` ranks. The culprit defaults to rank 0 for
// gated_* and to the last rank otherwise; the step to 1 for gated_* and slow_rank, to 10 for the
// others; size_mismatch takes no step. Fails with one line naming the part at fault (unknown
// class or key, bad number, rank outside the job).
base::StatusOr<Injection> parseInjection(std::string_view spec, int world);

// "gated_save on rank 0 at the first checkpoint at or after step 1", for the start-up banner.
std::string describeInjection(const Injection& injection);

}  // namespace ncclrec::trainer
