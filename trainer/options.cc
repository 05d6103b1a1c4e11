#include "trainer/options.h"

#include <CLI/CLI.hpp>
#include <string>

#include "base/cli_parse.h"
#include "format/version.h"

namespace ncclrec::trainer {
namespace {

constexpr const char* kFooter = R"(
Run under cxxrun (ranks from RANK, WORLD_SIZE, LOCAL_RANK; the NCCL id through its store):
  cxxrun --nproc-per-node 4 --nccl=host ncclrec-trainer --steps 500
With the flight recorder:
  LD_PRELOAD=libncclrec.so NCCLREC_TIMEOUT=3 cxxrun --nproc-per-node 4 ncclrec-trainer \
      --ckpt-dir ckpt --ckpt-every 20 --inject=gated_save

--inject=CLASS[:rank=R][:step=S] plants one bug on rank R (default 0 for gated_*, else the last
rank) at step S (gated_*: the first checkpoint/evaluation at or after S, default 1; slow_rank:
from S on, default 1; others: default 10). size_mismatch is stopped by the shape check unless
--skip-shape-check is given. See docs/trainer.md for the verdict each class should get.

Exit codes: 0 done; 1 an NCCL call failed, parameter shapes differ across ranks, or a checkpoint
cannot be written or read; 2 bad flag or environment.)";

}  // namespace

ParsedOptions parseOptions(int argc, const char* const* argv, int world) {
  ParsedOptions result;
  TrainerOptions o;
  CLI::App app("ncclrec-trainer: a data-parallel LibTorch trainer over the NCCL C API",
               "ncclrec-trainer");
  app.footer(kFooter);
  std::string device = "auto", inject;
  bool no_lr_scaling = false, no_shuffle = false;
  app.add_option("--steps", o.steps, "Optimizer steps (default 300)");
  app.add_option("--batch-size", o.batch_size, "Samples per rank and micro-step (default 32)");
  app.add_option("--accum-steps", o.accum_steps,
                 "Micro-steps per optimizer step; gradients are all-reduced on the last only "
                 "(default 1)");
  app.add_option("--lr", o.lr, "Learning rate for one rank's batch (default 0.05)");
  app.add_flag("--no-lr-scaling", no_lr_scaling,
               "Do not scale the learning rate by world size x accumulation steps");
  app.add_option("--momentum", o.momentum, "SGD momentum (default 0.9)");
  app.add_option("--hidden", o.hidden, "Width of the hidden layers (default 64)");
  app.add_option("--depth", o.depth, "Number of hidden layers (default 2)");
  app.add_option("--train-samples", o.train_samples, "Training set size (default 8192)");
  app.add_option("--eval-samples", o.eval_samples, "Evaluation set size (default 1024)");
  app.add_option("--seed", o.seed,
                 "Seed of the data, the teacher and the shuffling (default 1234)");
  app.add_flag("--no-shuffle", no_shuffle, "Do not reshuffle the training set every epoch");
  app.add_flag("--drop-last", o.drop_last,
               "Drop the samples that do not divide evenly among the ranks instead of padding");
  app.add_option("--bucket-cap-mb", o.bucket_cap_mb, "Gradient bucket size in MiB (default 25)");
  app.add_flag("--skip-shape-check", o.skip_shape_check,
               "Do not check that parameter shapes agree across ranks before training");
  app.add_option("--device", device, "auto (cuda:LOCAL_RANK when CUDA is available), cpu, cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_option("--id-file", o.id_file,
                 "Without cxxrun: file through which rank 0 shares the NCCL unique id");
  app.add_option("--init-timeout", o.init_timeout_s,
                 "Seconds to wait for rank 0's unique id (default 300)");
  app.add_option("--eval-every", o.eval_every,
                 "Evaluate every N steps and after the last one; 0: never (default 100)");
  app.add_option("--ckpt-dir", o.ckpt_dir, "Directory for checkpoint.bin (rank 0 writes it)");
  app.add_option("--ckpt-every", o.ckpt_every,
                 "Checkpoint every N steps; with --ckpt-dir always after the last step too");
  app.add_option("--ckpt-delay", o.ckpt_delay_s,
                 "Seconds rank 0 spends longer in each checkpoint save, the others waiting for it "
                 "(a slow filesystem; default 0)");
  app.add_flag("--resume", o.resume, "Start from --ckpt-dir/checkpoint.bin when it exists");
  app.add_option("--log-every", o.log_every,
                 "Progress line every N steps when stdout is not a terminal (default 50)");
  app.add_option("--time-limit", o.time_limit_s,
                 "Stop after this many seconds (rank 0's clock decides for everyone); 0: none");
  app.add_option("--inject", inject,
                 "Plant a bug: CLASS[:rank=R][:step=S], CLASS one of " + faultClassList());
  app.set_version_flag("--version",
                       std::string("ncclrec-trainer ") + ncclrec::format::versionString());
  const base::CliOutcome parsed = base::parseCli(app, argc, argv);
  if (parsed.done()) {
    if (parsed.failed()) result.exit_code = kExitUsage;
    result.message = parsed.failed() ? "ncclrec-trainer: " + parsed.text : parsed.text;
    return result;
  }
  const auto fail = [&](const std::string& why) {
    result.exit_code = kExitUsage;
    result.message = "ncclrec-trainer: " + why;
    return result;
  };
  o.scale_lr = !no_lr_scaling;
  o.shuffle = !no_shuffle;
  o.device = device == "cpu"    ? DeviceChoice::kCpu
             : device == "cuda" ? DeviceChoice::kCuda
                                : DeviceChoice::kAuto;
  if (o.steps < 1) return fail("--steps must be at least 1");
  if (o.batch_size < 1) return fail("--batch-size must be at least 1");
  if (o.accum_steps < 1) return fail("--accum-steps must be at least 1");
  if (!(o.lr > 0)) return fail("--lr must be positive");
  if (!(o.momentum >= 0 && o.momentum < 1)) return fail("--momentum must be in [0, 1)");
  if (o.hidden < 1 || o.depth < 1) return fail("--hidden and --depth must be at least 1");
  if (!(o.bucket_cap_mb > 0)) return fail("--bucket-cap-mb must be positive");
  if (o.eval_every < 0 || o.ckpt_every < 0) {
    return fail("--eval-every and --ckpt-every must not be negative");
  }
  if (o.log_every < 1) return fail("--log-every must be at least 1");
  if (o.time_limit_s < 0) return fail("--time-limit must not be negative");
  if (o.eval_samples < world) {
    return fail("--eval-samples " + std::to_string(o.eval_samples) + " is below the world size " +
                std::to_string(world) + ": every rank needs an evaluation sample");
  }
  const int64_t per_rank =
      o.drop_last ? o.train_samples / world : (o.train_samples + world - 1) / world;
  if (per_rank < o.batch_size) {
    return fail("--train-samples " + std::to_string(o.train_samples) + " gives each of the " +
                std::to_string(world) + " ranks " + std::to_string(per_rank) +
                " samples, fewer than one batch of " + std::to_string(o.batch_size));
  }
  if (!(o.ckpt_delay_s >= 0)) return fail("--ckpt-delay must be 0 or more seconds");
  if ((o.ckpt_every > 0 || o.resume || o.ckpt_delay_s > 0) && o.ckpt_dir.empty()) {
    return fail("--ckpt-every, --ckpt-delay and --resume need --ckpt-dir");
  }
  if (!inject.empty()) {
    auto parsed = parseInjection(inject, world);
    if (!parsed.ok()) return fail(parsed.status().message());
    o.injection = *parsed;
    const Injection& inj = o.injection;
    if (inj.step > o.steps) {
      return fail("--inject=" + inject + ": step " + std::to_string(inj.step) +
                  " is after the last step (--steps " + std::to_string(o.steps) + ")");
    }
    if (inj.fault == FaultClass::kGatedSave && o.ckpt_dir.empty()) {
      return fail("--inject=" + inject + " needs checkpoints: give --ckpt-dir");
    }
    if (inj.fault == FaultClass::kGatedEvalBarrier && o.eval_every == 0) {
      return fail("--inject=" + inject + " needs evaluations: give --eval-every N > 0");
    }
  }
  result.options = o;
  return result;
}

}  // namespace ncclrec::trainer
