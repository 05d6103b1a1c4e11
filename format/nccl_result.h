// NCCL's result codes (ncclResult_t) as the black box stores them in Event::result: the recorder
// decides from them whether a call completed or failed, the analyzer what a failure means. Kept
// here, without nccl.h, because neither side may need NCCL's headers to build.
#pragma once

namespace ncclrec::format {

constexpr int kNcclSuccess = 0;
constexpr int kNcclSystemError = 2;
constexpr int kNcclInvalidArgument = 4;
constexpr int kNcclInvalidUsage = 5;
constexpr int kNcclRemoteError = 6;
constexpr int kNcclInProgress = 7;  // a nonblocking communicator's call, running in the background

// The call was accepted: it succeeded, or (nonblocking communicator) it runs in the background.
constexpr bool acceptedResult(int result) {
  return result == kNcclSuccess || result == kNcclInProgress;
}

}  // namespace ncclrec::format
