// One small NCCL job per hang class, for recording the analyzer's golden data (tests/data/) and
// for its live end-to-end test. Every rank runs the same loop; the fault hits `culprit` at
// `step`. Run with RANK, WORLD_SIZE and NCCLREC_SAMPLE_ID_FILE set, under libncclrec.so.
//   argv[1]: gated | skipped | exited | crashed | size_mismatch | stuck_in_host | cross_comm |
//            skip_in_cycle | pipeline | late_desync | frozen | frozen_between | uninterruptible |
//            slow_step | gathered | no_hang
//   argv[2]: steps (default 4); argv[3]: the faulty step (default 2); argv[4]: culprit (default 3
//   for every class but gated, where it is 0)
// The modes with sub-communicators (skip_in_cycle, late_desync) pair the ranks (0-1, 2-3, ...)
// with ncclCommSplit; cross_comm has no single culprit: the upper half of the ranks (rank >=
// WORLD_SIZE / 2) swaps two communicators at the faulty step. frozen: the culprit's process stops
// (SIGSTOP, as a frozen node or a debugger would stop it) inside the faulty step's all-reduce,
// which every rank enters; frozen_between: it stops before that all-reduce, between two ops;
// uninterruptible: its main thread sleeps uninterruptibly there (a vfork whose child does not
// exec: the parent waits in the kernel, state D) while its other threads, the recorder's
// watchdog included, go on. slow_step is healthy: the culprit spends 2 s in host code at the
// faulty step (a checkpoint that finishes) while the others wait for it in the next all-reduce.
// gathered is healthy too: each step's all-reduce is followed by a gather of the loss to rank 0
// (gatherLoss()), for the transport's faults that hit one of a root's several connections.
#include <nccl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "samples/common/unique_id_file.h"

namespace {

#define CHECK_NCCL(call)                                                     \
  do {                                                                       \
    const ncclResult_t r = (call);                                           \
    if (r != ncclSuccess) {                                                  \
      std::fprintf(stderr, "%s failed: %s\n", #call, ncclGetErrorString(r)); \
      std::exit(1);                                                          \
    }                                                                        \
  } while (0)

// noinline: each function is a distinct call site in the recorded stacks.
__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads, size_t n) {
  CHECK_NCCL(ncclAllReduce(grads.data(), grads.data(), n, ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) void logLoss(ncclComm_t comm, float* loss) {
  CHECK_NCCL(ncclAllReduce(loss, loss, 1, ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) void syncMetrics(ncclComm_t comm, float* metric) {
  CHECK_NCCL(ncclAllReduce(metric, metric, 1, ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) void gatherLoss(ncclComm_t comm, const float* loss,
                                          std::vector<float>& losses) {
  CHECK_NCCL(ncclGather(loss, losses.data(), 1, ncclFloat, 0, comm, nullptr));
}

__attribute__((noinline)) void pairReduce(ncclComm_t pair, float* value) {
  CHECK_NCCL(ncclAllReduce(value, value, 1, ncclFloat, ncclSum, pair, nullptr));
}

// The same shape as pairReduce() from another call site: it pairs with the partner's next
// pairReduce() and completes.
__attribute__((noinline)) void pairHandshake(ncclComm_t pair, float* value) {
  CHECK_NCCL(ncclAllReduce(value, value, 1, ncclFloat, ncclSum, pair, nullptr));
}

__attribute__((noinline)) void sendActivations(ncclComm_t comm, std::vector<float>& act, int peer) {
  CHECK_NCCL(ncclSend(act.data(), act.size(), ncclFloat, peer, comm, nullptr));
}

__attribute__((noinline)) void recvActivations(ncclComm_t comm, std::vector<float>& act, int peer) {
  CHECK_NCCL(ncclRecv(act.data(), act.size(), ncclFloat, peer, comm, nullptr));
}

// pipeline: each step passes kMicroBatches activations down the stages; the culprit stage, at
// the faulty step, receives them all but sends one fewer.
constexpr int kMicroBatches = 4;
void pipelineStep(ncclComm_t comm, int rank, int world, bool fault, std::vector<float>& act) {
  for (int m = 0; m < kMicroBatches; ++m) {
    if (rank > 0) recvActivations(comm, act, rank - 1);
    if (rank < world - 1 && !(fault && m == kMicroBatches - 1)) {
      sendActivations(comm, act, rank + 1);
    }
  }
}

__attribute__((noinline)) void saveCheckpoint(ncclComm_t comm, float* checksum) {
  CHECK_NCCL(ncclAllReduce(checksum, checksum, 1, ncclFloat, ncclSum, comm, nullptr));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "no_hang";
  const int steps = argc > 2 ? std::atoi(argv[2]) : 4;
  const int fault_step = argc > 3 ? std::atoi(argv[3]) : 2;
  const int culprit = argc > 4 ? std::atoi(argv[4]) : (mode == "gated" ? 0 : 3);
  const int rank = samples::envInt("RANK", 0);
  const int world = samples::envInt("WORLD_SIZE", 1);
  const char* id_file = std::getenv("NCCLREC_SAMPLE_ID_FILE");
  const ncclUniqueId id =
      samples::shareUniqueId(rank, id_file != nullptr ? id_file : "/tmp/ncclrec-scenario.id");
  ncclComm_t comm = nullptr;
  CHECK_NCCL(ncclCommInitRank(&comm, world, id, rank));
  // cross_comm: a second communicator for metrics; the upper half of the ranks syncs metrics
  // before the gradients at the faulty step while the lower half does it after: each side waits
  // for the other, and no rank differs from the others of its side.
  ncclComm_t metrics = nullptr;
  if (mode == "cross_comm") {
    const std::string path =
        std::string(id_file != nullptr ? id_file : "/tmp/ncclrec-scenario.id") + ".metrics";
    CHECK_NCCL(ncclCommInitRank(&metrics, world, samples::shareUniqueId(rank, path), rank));
  }
  ncclComm_t pair = nullptr;
  if (mode == "skip_in_cycle" || mode == "late_desync") {
    CHECK_NCCL(ncclCommSplit(comm, rank / 2, rank, &pair, nullptr));
  }
  std::vector<float> grads(1024, 1.0f);
  std::vector<float> act(256, 1.0f);
  float loss = 1.0f;
  std::vector<float> losses(world, 0.0f);
  const bool me = rank == culprit;
  for (int step = 0; step < steps; ++step) {
    const bool fault =
        mode == "cross_comm" ? rank >= world / 2 && step == fault_step : me && step == fault_step;
    if (fault && mode == "exited") return 0;  // an early return: the "uneven inputs" bug
    if (fault && mode == "crashed") raise(SIGKILL);
    if (fault && mode == "stuck_in_host") sleep(600);
    if (fault && mode == "slow_step") std::this_thread::sleep_for(std::chrono::seconds(2));
    if (fault && mode == "frozen_between") {
      // After a watchdog poll or two (a real job has beaten long before), every thread stops.
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      raise(SIGSTOP);
    }
    if (fault && mode == "uninterruptible") {
      // The child only sleeps (raw syscalls, as allowed after vfork) and dies with its parent;
      // until then the parent's thread is in uninterruptible sleep.
      if (vfork() == 0) {
        syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
        const timespec forever{600, 0};
        syscall(SYS_nanosleep, &forever, nullptr);
        _exit(0);
      }
    }
    if (mode == "frozen" && step == fault_step) {
      if (me) {
        // The culprit enters the all-reduce first and stops inside it, before the others come.
        std::thread([] {
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          kill(getpid(), SIGSTOP);
        }).detach();
      } else {
        std::this_thread::sleep_for(std::chrono::seconds(1));
      }
    }
    if (mode == "pipeline") {
      pipelineStep(comm, rank, world, fault, act);
      logLoss(comm, &loss);
      continue;
    }
    if (mode == "late_desync") {
      // The gradients of every step first, then each pair's steps: the culprit's extra
      // pairHandshake() completes against its partner's pairReduce(), so it stays one op ahead on
      // the pair's communicator until the end.
      trainStep(comm, grads, grads.size());
      if (step + 1 < steps) continue;
      for (int s = 0; s < steps; ++s) {
        if (me && s == fault_step) pairHandshake(pair, &loss);
        pairReduce(pair, &loss);
      }
      // Blocking host collectives: the culprit's last pairReduce() waits for its partner, which
      // waits for it here (a cycle, the late symptom); on a GPU the partner would go on and exit.
      logLoss(comm, &loss);
      break;
    }
    if (metrics != nullptr && fault) syncMetrics(metrics, &loss);
    if (!(fault && mode == "skip_in_cycle")) {
      trainStep(comm, grads, fault && mode == "size_mismatch" ? grads.size() / 2 : grads.size());
    }
    if (metrics != nullptr && !fault) syncMetrics(metrics, &loss);
    if (pair != nullptr) pairReduce(pair, &loss);
    if (mode == "skipped" && !fault) logLoss(comm, &loss);
    if (mode == "gathered") gatherLoss(comm, &loss, losses);
    if (mode == "gated" && fault) saveCheckpoint(comm, &loss);
  }
  if (pair != nullptr) CHECK_NCCL(ncclCommDestroy(pair));
  if (metrics != nullptr) CHECK_NCCL(ncclCommDestroy(metrics));
  CHECK_NCCL(ncclCommDestroy(comm));
  return 0;
}
