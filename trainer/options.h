// ncclrec-trainer's command line (docs/trainer.md lists every flag).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainer/injection.h"

namespace ncclrec::trainer {

// Exit codes, documented in docs/trainer.md and --help. Never renumber.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed =
    1;  // an NCCL call failed, parameter shapes differ, bad checkpoint
inline constexpr int kExitUsage = 2;  // bad flag or environment

enum class DeviceChoice { kAuto, kCpu, kCuda };

struct TrainerOptions {
  // Training.
  int64_t steps = 300;      // optimizer steps
  int64_t batch_size = 32;  // per rank and micro-step
  int64_t accum_steps = 1;  // micro-steps per optimizer step; all-reduce on the last only
  double lr = 0.05;         // for one rank's batch; scaled by the effective batch (below)
  bool scale_lr = true;     // linear scaling rule: lr * world * accum_steps
  double momentum = 0.9;
  // Model and data.
  int64_t hidden = 64;
  int64_t depth = 2;  // hidden layers
  int64_t train_samples = 8192;
  int64_t eval_samples = 1024;
  uint64_t seed = 1234;
  bool shuffle = true;
  bool drop_last = false;  // DistributedSampler: drop the tail instead of padding
  // Data parallelism.
  double bucket_cap_mb = 25;
  bool skip_shape_check = false;
  DeviceChoice device = DeviceChoice::kAuto;
  std::string id_file;          // unique id exchange without cxxrun
  double init_timeout_s = 300;  // waiting for rank 0's unique id
  // Evaluation, checkpoints, logs.
  int64_t eval_every = 100;  // 0: never
  std::string ckpt_dir;      // "": no checkpoints
  int64_t ckpt_every = 0;    // 0: only at the end (with --ckpt-dir)
  double ckpt_delay_s = 0;   // rank 0 spends this much longer in each save (a slow filesystem)
  bool resume = false;
  int64_t log_every = 50;   // progress lines when stdout is not a terminal
  double time_limit_s = 0;  // 0: none; rank 0 decides, all ranks stop at the same step
  // Faults.
  Injection injection;
};

struct ParsedOptions {
  std::optional<TrainerOptions> options;  // set when training should run
  int exit_code = kExitOk;                // when not: kExitOk after --help, else kExitUsage
  std::string message;                    // help text, or one error line (no newline)
};

// Never throws. `world` is the job's size (from WORLD_SIZE), needed to check --inject's rank and
// that every rank gets at least one batch.
ParsedOptions parseOptions(int argc, const char* const* argv, int world);

}  // namespace ncclrec::trainer
