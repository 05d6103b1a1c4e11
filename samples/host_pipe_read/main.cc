// A rank stuck in host code, blocked in read(): the last rank asks a helper thread (standing in for
// a tokenizer or data service on the other end of a pipe) for its next batch and reads the reply,
// but the helper dropped the request without answering and keeps the pipe open. The rank sleeps in
// read() forever; the others wait in the gradient all-reduce. Its thread snapshot shows it inside
// readReply().
// Fix (healthy): the helper answers. In real jobs: poll() with a timeout, and a helper that closes
// its end (EOF) or answers with an error when it cannot serve.
#include <unistd.h>

#include <thread>
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 6;
constexpr int kBadStep = 3;

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) float readReply(int fd) {
  float value = 0;
  if (read(fd, &value, sizeof(value)) != static_cast<ssize_t>(sizeof(value))) std::exit(1);
  return value;
}

__attribute__((noinline)) float nextBatch(bool dropped) {
  int fds[2];
  if (pipe(fds) != 0) std::exit(1);
  std::thread helper([&] {
    if (dropped) {  // the bug: drops the request, keeps its end open, never answers
      for (;;) pause();
    }
    const float value = 1.0f;
    if (write(fds[1], &value, sizeof(value)) != static_cast<ssize_t>(sizeof(value))) std::exit(1);
  });
  const float value = readReply(fds[0]);
  helper.join();
  close(fds[0]);
  close(fds[1]);
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "host_pipe_read");
  std::vector<float> grads(4096, 1.0f);
  for (int step = 0; step < kSteps; ++step) {
    grads[0] = nextBatch(!job.healthy && job.rank == job.world - 1 && step == kBadStep);
    trainStep(job.comm, grads);
  }
  samples::finish(job);
  return 0;
}
