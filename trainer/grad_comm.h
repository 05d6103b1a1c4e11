// The thread that all-reduces gradient buckets while backward goes on.
//
// Gradient hooks run on the autograd thread; they pack a bucket and hand it here, and this thread
// issues the bucket's ncclAllReduce (ncclAvg, in place). On hostnccl a collective returns only when
// its data is in place, so issuing it from the hook would stall backward for the whole transfer;
// from this thread, backward computes the next buckets' gradients meanwhile. On a GPU, NCCL returns
// once the collective is enqueued on the stream, and the thread costs nothing.
//
// Invariant: buckets are launched in the same order on every rank, and no other collective is
// issued on the communicator until wait() has returned; NCCL pairs collectives by issue order, and
// a communicator is used by one thread at a time.
#pragma once

#include <nccl.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace ncclrec::trainer {

class GradCommThread {
 public:
  // `thread_setup` runs first on the new thread (on a GPU: select this rank's device).
  GradCommThread(ncclComm_t comm, std::function<void()> thread_setup);
  // Joins the thread; one still blocked in NCCL (the job hangs or a peer died) is left behind
  // rather than waited for, so an error can still end the process.
  ~GradCommThread();
  GradCommThread(const GradCommThread&) = delete;
  GradCommThread& operator=(const GradCommThread&) = delete;

  // Queues the all-reduce of `count` floats at `data`, which must stay valid until wait() returns.
  void launch(float* data, size_t count);
  // Blocks until every launched all-reduce returned; throws NcclError for the first that failed.
  void wait();

 private:
  struct Job {
    float* data;
    size_t count;
  };
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Job> queue;
    size_t unfinished = 0;  // queued or running
    bool stop = false;
    std::string error;  // the first failure, "" when none
  };
  static void run(std::shared_ptr<State> state, ncclComm_t comm, std::function<void()> setup);

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace ncclrec::trainer
