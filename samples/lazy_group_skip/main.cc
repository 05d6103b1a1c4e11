// A communicator created lazily by the first collective on a group, as PyTorch's
// ProcessGroupNCCL does: `Group::allReduce` makes its communicator the first time it is used. The
// job logs metrics over a group of all ranks every other step; rank 3 logs only when its own loss
// improved, so at the first logging step it skips the group's first all-reduce and goes on to
// the next training all-reduce. Ranks 0-2 wait inside the group's creation for rank 3, which
// never joins; rank 3 waits in the training all-reduce for them.
// Fix (healthy): a collective on a group is issued by every member, whatever its own data says
// (reduce a flag instead of skipping the call).
#include <string>
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 4;

// A process group whose communicator is made at its first collective.
class Group {
 public:
  Group(const samples::Job& job, std::string name) : job_(job), name_(std::move(name)) {}
  ~Group() {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
  }
  __attribute__((noinline)) void allReduce(std::vector<float>& data) {
    if (comm_ == nullptr) comm_ = samples::initComm(job_.rank, job_.world, name_);
    CHECK_NCCL(
        ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat, ncclSum, comm_, nullptr));
  }

 private:
  const samples::Job& job_;
  std::string name_;
  ncclComm_t comm_ = nullptr;
};

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

// The mean over the ranks of the first metric, for the log.
__attribute__((noinline)) float logMetrics(Group& metrics, std::vector<float>& values) {
  metrics.allReduce(values);
  return values[0] / 4;
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "lazy_group_skip");
  Group metrics(job, samples::uniqueIdPath("lazy_group_skip", "metrics"));
  std::vector<float> grads(4096, 1.0f), values(8, 1.0f);
  float mean = 0;
  for (int step = 0; step < kSteps; ++step) {
    trainStep(job.comm, grads);
    const bool improved = job.healthy || job.rank != 3;
    if (step % 2 == 1 && improved) mean = logMetrics(metrics, values);
  }
  if (job.rank == 0) std::printf("rank 0: mean metric %.1f\n", static_cast<double>(mean));
  samples::finish(job);
  return 0;
}
