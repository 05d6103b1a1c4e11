#include "trainer/train.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <sys/stat.h>
#include <torch/cuda.h>
#include <torch/optim/sgd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "base/clock.h"
#include "trainer/checkpoint_file.h"
#include "trainer/ddp.h"
#include "trainer/model.h"
#include "trainer/model_state.h"
#include "trainer/progress.h"
#include "trainer/sampler.h"
#include "trainer/step_sync.h"

namespace ncclrec::trainer {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kCheckpointName = "checkpoint.bin";
// slow_rank's delay before each step: well above a step's own time on hostnccl, well below any
// hang timeout.
constexpr auto kSlowRankDelay = std::chrono::milliseconds(30);
// Steps left out of the step-time figures (allocations, page faults, first connections).
constexpr size_t kTimingWarmup = 5;

// A bad flag combination found only once the environment is known (--device cuda without CUDA).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

double unixSeconds() { return static_cast<double>(base::realtimeNs()) * 1e-9; }

std::string number(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

// noinline: the injected faults get call sites of their own in stacks and dumps.
[[noreturn]] __attribute__((noinline)) void hangInHostCode() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

__attribute__((noinline)) void slowDataLoading() { std::this_thread::sleep_for(kSlowRankDelay); }
// --ckpt-delay: rank 0's checkpoint save on a slow filesystem, in host code while the others wait.
__attribute__((noinline)) void slowStorage(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

void setCurrentCudaDevice(int index) {
  // Through c10's device-guard registry: no CUDA header is needed to build the trainer.
  c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)
      ->setDevice(c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(index)));
}

// Every rank evaluates its shard of the evaluation set (padding excluded) and one all-reduce
// makes the metric job-wide. noinline: the call site of the evaluation collective.
__attribute__((noinline)) double evaluate(Mlp& model, const Dataset& data,
                                          const DistributedSampler& sampler, ncclComm_t comm,
                                          const torch::Device& device) {
  at::NoGradGuard no_grad;
  model->eval();
  const std::vector<int64_t> idx = sampler.indices();
  std::vector<float> weight(idx.size());
  for (size_t i = 0; i < idx.size(); ++i) weight[i] = sampler.isPadding(int64_t(i)) ? 0.0f : 1.0f;
  const at::Tensor index = at::tensor(idx).to(device);
  const at::Tensor w = at::tensor(weight).to(device);
  const at::Tensor err =
      (model->forward(data.x.index_select(0, index)) - data.y.index_select(0, index))
          .pow(2)
          .mean(1);
  double sums[2] = {(err * w).sum().item<double>(), w.sum().item<double>()};
  checkNccl(ncclAllReduce(sums, sums, 2, ncclFloat64, ncclSum, comm, nullptr), comm,
            "ncclAllReduce in evaluate");
  model->train();
  return sums[0] / sums[1];
}

// Rank 0's resume step to every rank: a rank that read another checkpoint (no shared
// filesystem) must not train from another step. noinline: a call site of its own.
__attribute__((noinline)) int64_t agreeOnResumeStep(ncclComm_t comm, int64_t mine) {
  int64_t step = mine;
  checkNccl(ncclBroadcast(&step, &step, 1, ncclInt64, 0, comm, nullptr), comm,
            "ncclBroadcast in agreeOnResumeStep");
  return step;
}

class Trainer {
 public:
  Trainer(const TrainerOptions& o, const DistEnv& env)
      : o_(o), env_(env), progress_(env.rank == 0, o.steps, o.log_every, stdout) {}
  ~Trainer() {
    ddp_.reset();
    // After a failure the process exits at once and the OS closes the connections: aborting
    // could itself wait on peers that are gone (hostnccl's abort has taken seconds there).
    if (comm_ != nullptr && !failed_) ncclCommDestroy(comm_);
  }

  void setUp();
  void train();
  void finish();
  void markFailed() { failed_ = true; }

 private:
  bool me(FaultClass f) const { return o_.injection.on(f, env_.rank); }
  void announce(const std::string& what) const {
    std::fprintf(stderr, "ncclrec-trainer: rank %d: inject %s: %s (t=%.3f)\n", env_.rank,
                 std::string(faultClassName(o_.injection.fault)).c_str(), what.c_str(),
                 unixSeconds());
    std::fflush(stderr);
  }
  void chooseDevice();
  void resume();
  void printBanner();
  void runStep(int64_t step, bool* stop, bool* left);
  void maybeEvaluate(int64_t step, bool last);
  void maybeCheckpoint(int64_t step, bool last);
  Checkpoint makeCheckpoint(int64_t step) const;
  std::string checkpointPath() const { return o_.ckpt_dir + "/" + kCheckpointName; }
  uint64_t fingerprint() const {
    const std::string sig = modelSignature(hidden_, o_.depth);
    return fnv1a64(sig.data(), sig.size());
  }

  const TrainerOptions& o_;
  const DistEnv& env_;
  Progress progress_;
  bool failed_ = false;
  torch::Device device_{torch::kCPU};
  bool cuda_ = false;
  ncclComm_t comm_ = nullptr;
  int64_t hidden_ = 0;
  double lr_ = 0;
  Mlp model_{nullptr};
  Dataset train_data_, eval_data_;
  std::unique_ptr<DataParallel> ddp_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  std::optional<BatchStream> batches_;
  std::optional<DistributedSampler> eval_sampler_;
  int64_t start_step_ = 0;
  int64_t done_steps_ = 0;
  bool gated_fired_ = false;
  // Figures for the summary.
  Clock::time_point loop_start_;
  std::vector<double> step_ms_;
  double first_loss_ = std::numeric_limits<double>::quiet_NaN();
  double last_loss_ = std::numeric_limits<double>::quiet_NaN();
  double last_eval_ = std::numeric_limits<double>::quiet_NaN();
};

void Trainer::chooseDevice() {
  const bool available = torch::cuda::is_available();
  if (o_.device == DeviceChoice::kCuda && !available) {
    throw UsageError("--device cuda: no CUDA device is available to this LibTorch");
  }
  cuda_ = o_.device == DeviceChoice::kCuda || (o_.device == DeviceChoice::kAuto && available);
  if (cuda_) {
    device_ = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env_.local_rank));
    // NCCL binds a communicator to the device current at ncclCommInitRank.
    setCurrentCudaDevice(env_.local_rank);
  }
}

void Trainer::setUp() {
  chooseDevice();
  auto id = shareUniqueId(env_, o_.id_file, o_.init_timeout_s);
  if (!id.ok()) throw std::runtime_error(id.status().message());
  comm_ = initCommunicator(env_, *id);

  // Each rank initializes its model from its own seed on purpose: the broadcast from rank 0
  // below is what makes the replicas equal, and the final checksums show that it did.
  at::manual_seed(o_.seed + 1 + static_cast<uint64_t>(env_.rank));
  hidden_ = me(FaultClass::kSizeMismatch) ? 2 * o_.hidden : o_.hidden;
  if (hidden_ != o_.hidden) {
    announce("hidden layers of " + std::to_string(hidden_) + " instead of " +
             std::to_string(o_.hidden));
  }
  model_ = Mlp(hidden_, o_.depth);
  model_->to(device_);
  train_data_ = makeTeacherDataset(o_.train_samples, o_.seed, 0);
  eval_data_ = makeTeacherDataset(o_.eval_samples, o_.seed, 1);
  for (Dataset* d : {&train_data_, &eval_data_}) {
    d->x = d->x.to(device_);
    d->y = d->y.to(device_);
  }
  const int cuda_index = env_.local_rank;
  const bool cuda = cuda_;
  ddp_ = std::make_unique<DataParallel>(model_.ptr(), comm_, env_.rank, env_.world,
                                        static_cast<int64_t>(o_.bucket_cap_mb * (1 << 20)),
                                        [cuda, cuda_index] {
                                          if (cuda) setCurrentCudaDevice(cuda_index);
                                        });
  if (!o_.skip_shape_check) ddp_->checkParameterShapes();

  lr_ = o_.lr * (o_.scale_lr ? double(env_.world) * double(o_.accum_steps) : 1.0);
  optimizer_ = std::make_unique<torch::optim::SGD>(
      model_->parameters(), torch::optim::SGDOptions(lr_).momentum(o_.momentum));
  if (o_.resume) resume();
  ddp_->broadcastParameters();

  // uneven_data: the culprit's shard ends after S - 1 steps' worth of batches.
  const int64_t max_batches =
      me(FaultClass::kUnevenData) ? (o_.injection.step - 1) * o_.accum_steps : -1;
  batches_.emplace(DistributedSampler(o_.train_samples, env_.world, env_.rank, o_.shuffle, o_.seed,
                                      o_.drop_last),
                   o_.batch_size, max_batches);
  batches_->seek(start_step_ * o_.accum_steps);
  eval_sampler_.emplace(o_.eval_samples, env_.world, env_.rank, /*shuffle=*/false, o_.seed,
                        /*drop_last=*/false);
  printBanner();
}

void Trainer::resume() {
  int64_t step = 0;
  struct stat st {};
  if (::stat(checkpointPath().c_str(), &st) == 0) {
    auto ckpt = readCheckpointFile(checkpointPath());
    if (!ckpt.ok()) throw std::runtime_error(ckpt.status().message());
    if (ckpt->fingerprint != fingerprint()) {
      throw std::runtime_error("checkpoint " + checkpointPath() +
                               " was written by another model than " +
                               modelSignature(hidden_, o_.depth));
    }
    restoreState(*ckpt, *ddp_, *optimizer_, device_);
    step = ckpt->step;
  }
  start_step_ = agreeOnResumeStep(comm_, step);
  if (start_step_ != step) {
    throw std::runtime_error("rank 0 resumes from step " + std::to_string(start_step_) +
                             ", this rank found step " + std::to_string(step) + " in " +
                             checkpointPath() + " (is --ckpt-dir on a shared filesystem?)");
  }
  if (env_.rank == 0) {
    progress_.line(step > 0
                       ? "resumed from " + checkpointPath() + " after step " + std::to_string(step)
                       : "no checkpoint at " + checkpointPath() + ": starting from step 0");
  }
}

void Trainer::printBanner() {
  if (env_.rank != 0) return;
  const auto& buckets = ddp_->buckets();
  int64_t numel = 0;
  for (const Bucket& b : buckets) numel += b.numel;
  const int64_t effective = o_.batch_size * o_.accum_steps * env_.world;
  std::string text = "ncclrec-trainer: world size " + std::to_string(env_.world) + " on " +
                     (cuda_ ? "cuda" : "cpu") + ", " + ncclLibraryDescription() + "\n";
  text += "  model: " + modelSignature(hidden_, o_.depth) + ", " + std::to_string(numel) +
          " parameters in " + std::to_string(buckets.size()) + " gradient bucket(s) (cap " +
          number("%g", o_.bucket_cap_mb) + " MiB)\n";
  text += "  data: " + std::to_string(o_.train_samples) + " training samples, " +
          std::to_string(batches_->batchesPerEpoch()) + " batches per rank and epoch (" +
          (o_.drop_last ? "drop-last" : "padded") + "), " + std::to_string(o_.eval_samples) +
          " evaluation samples\n";
  text += "  batch: per-rank batch " + std::to_string(o_.batch_size) + " x " +
          std::to_string(o_.accum_steps) + " accumulation step(s) x " + std::to_string(env_.world) +
          " ranks = effective batch " + std::to_string(effective) + "; lr " + number("%g", o_.lr) +
          " scaled to " + number("%g", lr_) +
          (o_.scale_lr ? " (linear scaling)" : " (not scaled)") + "\n";
  text += "  steps: " + std::to_string(o_.steps) +
          (start_step_ > 0 ? " (from step " + std::to_string(start_step_) + ")" : "") +
          ", eval every " + std::to_string(o_.eval_every) + ", checkpoint " +
          (o_.ckpt_dir.empty() ? "off"
                               : (o_.ckpt_every > 0 ? "every " + std::to_string(o_.ckpt_every)
                                                    : std::string("at the end")) +
                                     " in " + o_.ckpt_dir);
  if (o_.injection.active()) text += "\n  inject: " + describeInjection(o_.injection);
  progress_.line(text);
}

void Trainer::runStep(int64_t step, bool* stop, bool* left) {
  const Injection& inj = o_.injection;
  if (me(FaultClass::kSlowRank) && step >= inj.step) {
    if (step == inj.step) announce("sleeping before every step from step " + std::to_string(step));
    slowDataLoading();
  }
  if (inj.at(FaultClass::kCrash, env_.rank, step)) {
    announce("abort() at step " + std::to_string(step));
    std::abort();
  }
  if (inj.at(FaultClass::kHostHang, env_.rank, step)) {
    announce("sleeping forever in host code at step " + std::to_string(step));
    hangInHostCode();
  }

  StepStats local;
  bool skipped = false;
  std::vector<int64_t> batch;
  for (int64_t micro = 0; micro < o_.accum_steps; ++micro) {
    if (!batches_->next(&batch)) {
      if (me(FaultClass::kUnevenData)) {
        announce("this rank's data ran out at step " + std::to_string(step) + ": leaving the loop");
      }
      *left = true;
      return;
    }
    const at::Tensor index = at::tensor(batch).to(device_);
    // No-sync on every micro-step but the last: the hooks stay idle and gradients accumulate.
    ddp_->prepareBackward(micro == o_.accum_steps - 1);
    at::Tensor loss = at::mse_loss(model_->forward(train_data_.x.index_select(0, index)),
                                   train_data_.y.index_select(0, index));
    if (inj.at(FaultClass::kNanSkip, env_.rank, step) && micro == 0) {
      announce("NaN loss at step " + std::to_string(step) + ": skipping backward");
      loss = loss * std::numeric_limits<double>::quiet_NaN();
    }
    const double value = loss.item<double>();
    local.loss_sum += value * double(batch.size());
    local.samples += double(batch.size());
    // A local check: the injected bug. Skipping alone means skipping this step's all-reduces
    // while the other ranks issue them (docs/trainer.md shows the job-wide check).
    if (!std::isfinite(value)) {
      skipped = true;
      break;
    }
    (loss / double(o_.accum_steps)).backward();
  }
  if (!skipped) {
    ddp_->finishGradientSync();
    optimizer_->step();
  }
  optimizer_->zero_grad();

  const bool time_up =
      env_.rank == 0 && o_.time_limit_s > 0 &&
      std::chrono::duration<double>(Clock::now() - loop_start_).count() >= o_.time_limit_s;
  StepStats global;
  if (inj.at(FaultClass::kOpOrder, env_.rank, step)) {
    announce("agreeOnStop before syncStepStats at step " + std::to_string(step));
    *stop = agreeOnStop(comm_, time_up);
    global = syncStepStats(comm_, local);
  } else {
    global = syncStepStats(comm_, local);
    *stop = agreeOnStop(comm_, time_up);
  }
  const double loss = global.loss_sum / global.samples;
  if (std::isnan(first_loss_)) first_loss_ = loss;
  last_loss_ = loss;
}

void Trainer::maybeEvaluate(int64_t step, bool last) {
  if (o_.eval_every == 0 || (step % o_.eval_every != 0 && !last)) return;
  const Injection& inj = o_.injection;
  if (inj.fault == FaultClass::kGatedEvalBarrier && !gated_fired_ && step >= inj.step) {
    // The injected bug, as in `if (rank == 0) evaluate()`: only the culprit evaluates, and the
    // evaluation's all-reduce waits for ranks that went on training.
    gated_fired_ = true;
    if (!me(FaultClass::kGatedEvalBarrier)) return;
    announce("evaluating alone after step " + std::to_string(step));
  }
  last_eval_ = evaluate(model_, eval_data_, *eval_sampler_, comm_, device_);
  progress_.line("eval after step " + std::to_string(step) + ": mse " + number("%.6f", last_eval_));
}

void Trainer::maybeCheckpoint(int64_t step, bool last) {
  if (o_.ckpt_dir.empty()) return;
  if (!last && (o_.ckpt_every == 0 || step % o_.ckpt_every != 0)) return;
  const Injection& inj = o_.injection;
  bool gated = false;
  if (inj.fault == FaultClass::kGatedSave && !gated_fired_ && step >= inj.step) {
    gated_fired_ = true;
    gated = me(FaultClass::kGatedSave);
    if (gated) announce("extra all-reduce in saveCheckpoint after step " + std::to_string(step));
  }
  std::optional<Checkpoint> ckpt;
  if (env_.rank == 0) ckpt = makeCheckpoint(step);
  if (env_.rank == 0 && o_.ckpt_delay_s > 0) slowStorage(o_.ckpt_delay_s);
  saveCheckpoint(comm_, env_.rank, checkpointPath(), ckpt ? &*ckpt : nullptr, gated);
  progress_.line("checkpoint after step " + std::to_string(step) + ": " + checkpointPath());
}

Checkpoint Trainer::makeCheckpoint(int64_t step) const {
  return stateToCheckpoint(step, fingerprint(), *ddp_, *optimizer_);
}

void Trainer::train() {
  loop_start_ = Clock::now();
  for (int64_t step = start_step_ + 1; step <= o_.steps; ++step) {
    const auto t0 = Clock::now();
    bool stop = false, left = false;
    runStep(step, &stop, &left);
    if (left) break;  // this rank's data ran out: it leaves the loop (uneven data)
    done_steps_ = step;
    step_ms_.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    const double elapsed = std::chrono::duration<double>(Clock::now() - loop_start_).count();
    progress_.step(step, last_loss_, double(step - start_step_) / std::max(elapsed, 1e-9));
    const bool last = step == o_.steps || stop;
    maybeEvaluate(step, last);
    maybeCheckpoint(step, last);
    if (stop) {
      progress_.line("time limit reached after step " + std::to_string(step));
      break;
    }
  }
  progress_.finish();
}

void Trainer::finish() {
  uint64_t checksum = 0xcbf29ce484222325ull;
  for (const at::Tensor& p : ddp_->parameters()) {
    const std::vector<float> v = toVector(p);
    checksum = fnv1a64(v.data(), v.size() * sizeof(float), checksum);
  }
  if (env_.rank == 0) {
    const double seconds = std::chrono::duration<double>(Clock::now() - loop_start_).count();
    std::vector<double> timed(step_ms_.begin() + std::min(kTimingWarmup, step_ms_.size()),
                              step_ms_.end());
    std::string timing = "no steps timed";
    if (!timed.empty()) {
      double sum = 0;
      for (double t : timed) sum += t;
      std::nth_element(timed.begin(), timed.begin() + timed.size() / 2, timed.end());
      timing = "step time median " + number("%.3f", timed[timed.size() / 2]) + " ms, mean " +
               number("%.3f", sum / double(timed.size())) + " ms over " +
               std::to_string(timed.size()) + " steps";
    }
    progress_.line("done: " + std::to_string(done_steps_) + " steps in " + number("%.2f", seconds) +
                   " s; loss " + number("%.6f", first_loss_) + " -> " + number("%.6f", last_loss_) +
                   "; eval mse " +
                   (std::isnan(last_eval_) ? std::string("n/a") : number("%.6f", last_eval_)) +
                   "; " + timing);
  }
  char line[96];
  std::snprintf(line, sizeof(line), "checksum: rank %d 0x%016llx after %lld steps\n", env_.rank,
                static_cast<unsigned long long>(checksum), static_cast<long long>(done_steps_));
  std::fputs(line, stdout);
  std::fflush(stdout);
}

}  // namespace

int runTrainer(const TrainerOptions& options, const DistEnv& env) {
  Trainer trainer(options, env);
  const auto fail = [&](const std::string& message, int code, bool print) {
    trainer.markFailed();
    std::fflush(stdout);
    if (print) std::fprintf(stderr, "ncclrec-trainer: rank %d: %s\n", env.rank, message.c_str());
    return code;
  };
  try {
    trainer.setUp();
    trainer.train();
    trainer.finish();
    return kExitOk;
  } catch (const UsageError& e) {
    return fail(e.what(), kExitUsage, true);
  } catch (const ShapeMismatchError& e) {
    // Every rank finds the mismatch; rank 0 and the ranks at fault say so.
    return fail(e.what(), kExitFailed, env.rank == 0 || e.culprit());
  } catch (const std::exception& e) {
    return fail(e.what(), kExitFailed, true);
  }
}

}  // namespace ncclrec::trainer
