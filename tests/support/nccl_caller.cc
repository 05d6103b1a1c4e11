// nccl_caller: a scriptable NCCL client for tests of the shim. Each argument is one operation, run
// in order on the current communicator; each prints one line "<op> rc=<code>[ key=value...]" and
// flushes it, so a test can read how far a process got even when it is killed.
//
//   init:<nranks>:<rank>   ncclCommInitRank with a fixed unique id (equal in every process)
//   initconfig:<nranks>:<rank>
//                          ncclCommInitRankConfig, commName "nccl_caller", another fixed id
//   initscalable:<nranks>:<rank>
//                          ncclCommInitRankScalable with two more fixed ids
//   initall:<ndev>         ncclCommInitAll; the ndev communicators are pushed, the last is current
//   getuniqueid            ncclGetUniqueId
//   allreduce:<n>          n ncclAllReduce calls, 1024 floats, sum
//   bcast:<n>              n ncclBcast calls, 1024 floats, root 0
//   broadcast:<n>:<root>   n ncclBroadcast calls, 1024 floats
//   reduce:<n>:<root>      n ncclReduce calls, 1024 floats, sum
//   allgather:<n>          n ncclAllGather calls, 1024 floats sent per rank
//   reducescatter:<n>      n ncclReduceScatter calls, 1024 floats received, sum
//   alltoall:<n>           n ncclAlltoAll calls, 1024 floats per peer
//   gather:<n>:<root>      n ncclGather calls, 1024 floats per rank
//   scatter:<n>:<root>     n ncclScatter calls, 1024 floats per rank
//   send:<n>:<peer>        n ncclSend calls, 1024 floats
//   recv:<n>:<peer>        n ncclRecv calls, 1024 floats
//   group / groupend       ncclGroupStart / ncclGroupEnd
//   groupsimend            ncclGroupSimulateEnd (closes a group), printing time=<estimate>
//   split:<color>:<key>    ncclCommSplit; a new communicator becomes the current one
//   shrink:<rank>          ncclCommShrink excluding <rank> (-1: nobody); the new one is current
//   finalize / revoke      ncclCommFinalize / ncclCommRevoke (default flags); it stays current
//   destroy / abort        ncclCommDestroy / ncclCommAbort; the previous one is current again
//   premulsum              ncclRedOpCreatePreMulSum (float 2, host immediate), printing op=<op>
//   redopdestroy           ncclRedOpDestroy of the op the last premulsum made
//   asyncerror             ncclCommGetAsyncError, printing async=<code>
//   checksum               prints sum=<16 hex digits>: FNV-1a of the receive buffer's first 1024
//                          floats, then zeroes the buffer (the send buffer holds a fixed pattern)
//   stubcounts             prints how often the stub NCCL was entered at ncclBcast, ncclBroadcast,
//                          ncclCommInitRank and ncclCommInitRankConfig (stubNcclCallCount, looked
//                          up at run time), or counts=none when the loaded NCCL is not the stub
//   threads:<t>:<n>        t threads, each n ncclAllReduce calls
//   sleep:<ms>             sleeps
//   fork                   forks; the child runs the remaining operations, the parent waits for it
//                          and exits with the child's status (128 + signal when killed)
//   kill / segv / exit:<c> SIGKILL itself / a real invalid memory access / exit(c) (atexit runs)
//
// Buffers hold 1024 floats per rank for up to 64 ranks, so the gather family stays in bounds with
// a real NCCL too.
//
// Exit status: 0 when every NCCL call returned ncclSuccess, 1 when one did not, 2 for a usage
// error (unknown or malformed operation; the message names it), before anything is run.
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "nccl.h"

namespace {

constexpr size_t kCount = 1024;
constexpr size_t kMaxRanks = 64;
constexpr int kUsageError = 2;

struct Op {
  std::string text;  // the argument as given
  std::string name;
  std::vector<int> args;
};

// Expected argument count per operation name; -1 when the name is unknown.
int arity(std::string_view name) {
  static constexpr struct {
    std::string_view name;
    int arity;
  } kOps[] = {{"init", 2},        {"initconfig", 2}, {"initscalable", 2},  {"initall", 1},
              {"getuniqueid", 0}, {"allreduce", 1},  {"bcast", 1},         {"broadcast", 2},
              {"reduce", 2},      {"allgather", 1},  {"reducescatter", 1}, {"alltoall", 1},
              {"gather", 2},      {"scatter", 2},    {"send", 2},          {"recv", 2},
              {"group", 0},       {"groupend", 0},   {"groupsimend", 0},   {"split", 2},
              {"shrink", 1},      {"finalize", 0},   {"revoke", 0},        {"destroy", 0},
              {"abort", 0},       {"premulsum", 0},  {"redopdestroy", 0},  {"asyncerror", 0},
              {"checksum", 0},    {"stubcounts", 0}, {"threads", 2},       {"sleep", 1},
              {"fork", 0},        {"kill", 0},       {"segv", 0},          {"exit", 1}};
  for (const auto& op : kOps) {
    if (op.name == name) return op.arity;
  }
  return -1;
}

bool parse(std::string_view text, Op* op) {
  op->text = std::string(text);
  const size_t colon = text.find(':');
  op->name = std::string(text.substr(0, colon));
  std::string_view rest = colon == std::string_view::npos ? "" : text.substr(colon + 1);
  while (colon != std::string_view::npos) {
    const size_t next = rest.find(':');
    const std::string_view field = rest.substr(0, next);
    int value = 0;
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (ec != std::errc() || end != field.data() + field.size()) return false;
    op->args.push_back(value);
    if (next == std::string_view::npos) break;
    rest = rest.substr(next + 1);
  }
  return arity(op->name) == static_cast<int>(op->args.size());
}

// A real invalid memory access, for `segv`: not instrumented, so that under UBSan too the process
// dies of SIGSEGV as it would in production.
__attribute__((noinline, no_sanitize_undefined)) void touchNothing() {
  volatile int* volatile nowhere = nullptr;
  *nowhere = 1;
}

using CallFn = ncclResult_t (*)(ncclComm_t, float*, float*, int);

class Caller {
 public:
  Caller() : send_(kCount * kMaxRanks), recv_(kCount * kMaxRanks) {
    for (size_t i = 0; i < send_.size(); ++i) send_[i] = static_cast<float>(i % 251) * 0.5f + 1.0f;
  }
  // Runs ops[first..]; returns the exit status.
  int run(const std::vector<Op>& ops, size_t first);

 private:
  ncclComm_t current() const { return comms_.empty() ? nullptr : comms_.back(); }
  void report(const Op& op, ncclResult_t rc, const std::string& extra = "");
  ncclResult_t repeat(int n, CallFn call, int peer);
  // The operations that create or change communicators; false when `op` is none of them.
  bool runCommOp(const Op& op);
  // The collectives and point-to-point operations; false when `op` is none of them.
  bool runDataOp(const Op& op);

  std::vector<ncclComm_t> comms_;  // the current communicator is the last
  bool failed_ = false;
  ncclRedOp_t premul_op_ = ncclSum;
  std::vector<float> send_;
  std::vector<float> recv_;
};

// Fixed unique ids, equal in every process; `salt` tells apart the ids of the init variants.
ncclUniqueId fixedUniqueId(int salt = 0) {
  ncclUniqueId id;
  for (size_t i = 0; i < sizeof(id.internal); ++i) {
    id.internal[i] = static_cast<char>(i * 7 + 1 + salt * 13);
  }
  return id;
}

std::string checksum(const float* data, size_t count) {
  uint64_t hash = 0xcbf29ce484222325ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(data);
  for (size_t i = 0; i < count * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ull;
  char text[32];
  std::snprintf(text, sizeof(text), " sum=%016" PRIx64, hash);
  return text;
}

// The stub's call counters, found at run time so that the program still runs on another NCCL.
std::string stubCounts() {
  using CountFn = int (*)(const char*);
  const auto count = reinterpret_cast<CountFn>(dlsym(RTLD_DEFAULT, "stubNcclCallCount"));
  if (count == nullptr) return " counts=none";
  std::string text;
  for (const char* name :
       {"ncclBcast", "ncclBroadcast", "ncclCommInitRank", "ncclCommInitRankConfig"}) {
    text += std::string(" ") + name + "=" + std::to_string(count(name));
  }
  return text;
}

ncclResult_t callAllReduce(ncclComm_t comm, float* send, float* recv, int) {
  return ncclAllReduce(send, recv, kCount, ncclFloat, ncclSum, comm, nullptr);
}
ncclResult_t callBcast(ncclComm_t comm, float*, float* recv, int) {
  return ncclBcast(recv, kCount, ncclFloat, 0, comm, nullptr);
}
ncclResult_t callGather(ncclComm_t comm, float* send, float* recv, int root) {
  return ncclGather(send, recv, kCount, ncclFloat, root, comm, nullptr);
}
ncclResult_t callScatter(ncclComm_t comm, float* send, float* recv, int root) {
  return ncclScatter(send, recv, kCount, ncclFloat, root, comm, nullptr);
}
ncclResult_t callBroadcast(ncclComm_t comm, float* send, float* recv, int root) {
  return ncclBroadcast(send, recv, kCount, ncclFloat, root, comm, nullptr);
}
ncclResult_t callReduce(ncclComm_t comm, float* send, float* recv, int root) {
  return ncclReduce(send, recv, kCount, ncclFloat, ncclSum, root, comm, nullptr);
}
ncclResult_t callAllGather(ncclComm_t comm, float* send, float* recv, int) {
  return ncclAllGather(send, recv, kCount, ncclFloat, comm, nullptr);
}
ncclResult_t callReduceScatter(ncclComm_t comm, float* send, float* recv, int) {
  return ncclReduceScatter(send, recv, kCount, ncclFloat, ncclSum, comm, nullptr);
}
ncclResult_t callAlltoAll(ncclComm_t comm, float* send, float* recv, int) {
  return ncclAlltoAll(send, recv, kCount, ncclFloat, comm, nullptr);
}
ncclResult_t callSend(ncclComm_t comm, float* send, float*, int peer) {
  return ncclSend(send, kCount, ncclFloat, peer, comm, nullptr);
}
ncclResult_t callRecv(ncclComm_t comm, float*, float* recv, int peer) {
  return ncclRecv(recv, kCount, ncclFloat, peer, comm, nullptr);
}

void Caller::report(const Op& op, ncclResult_t rc, const std::string& extra) {
  if (rc != ncclSuccess) failed_ = true;
  std::printf("%s rc=%d%s\n", op.text.c_str(), static_cast<int>(rc), extra.c_str());
  std::fflush(stdout);
}

ncclResult_t Caller::repeat(int n, CallFn call, int peer) {
  ncclResult_t first = ncclSuccess;
  for (int i = 0; i < n; ++i) {
    const ncclResult_t rc = call(current(), send_.data(), recv_.data(), peer);
    if (first == ncclSuccess) first = rc;
  }
  return first;
}

bool Caller::runCommOp(const Op& op) {
  const std::vector<int>& a = op.args;
  ncclComm_t comm = nullptr;
  if (op.name == "init" || op.name == "initconfig") {
    ncclResult_t rc;
    if (op.name == "init") {
      rc = ncclCommInitRank(&comm, a[0], fixedUniqueId(), a[1]);
    } else {
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.commName = "nccl_caller";
      rc = ncclCommInitRankConfig(&comm, a[0], fixedUniqueId(1), a[1], &config);
    }
    if (rc == ncclSuccess) comms_.push_back(comm);
    report(op, rc);
  } else if (op.name == "initscalable") {
    ncclUniqueId ids[2] = {fixedUniqueId(2), fixedUniqueId(3)};
    const ncclResult_t rc = ncclCommInitRankScalable(&comm, a[0], a[1], 2, ids, nullptr);
    if (rc == ncclSuccess) comms_.push_back(comm);
    report(op, rc);
  } else if (op.name == "initall") {
    std::vector<ncclComm_t> comms(static_cast<size_t>(a[0] > 0 ? a[0] : 0));
    const ncclResult_t rc = ncclCommInitAll(comms.data(), a[0], nullptr);
    if (rc == ncclSuccess) comms_.insert(comms_.end(), comms.begin(), comms.end());
    report(op, rc);
  } else if (op.name == "split") {
    const ncclResult_t rc = ncclCommSplit(current(), a[0], a[1], &comm, nullptr);
    if (rc == ncclSuccess && comm != nullptr) comms_.push_back(comm);
    report(op, rc, comm != nullptr ? " comm=new" : " comm=null");
  } else if (op.name == "shrink") {
    int excluded = a[0];
    const ncclResult_t rc =
        ncclCommShrink(current(), excluded >= 0 ? &excluded : nullptr, excluded >= 0 ? 1 : 0, &comm,
                       nullptr, NCCL_SHRINK_DEFAULT);
    if (rc == ncclSuccess && comm != nullptr) comms_.push_back(comm);
    report(op, rc);
  } else if (op.name == "finalize") {
    report(op, ncclCommFinalize(current()));
  } else if (op.name == "revoke") {
    report(op, ncclCommRevoke(current(), NCCL_REVOKE_DEFAULT));
  } else if (op.name == "destroy" || op.name == "abort") {
    comm = current();
    if (!comms_.empty()) comms_.pop_back();
    report(op, op.name == "destroy" ? ncclCommDestroy(comm) : ncclCommAbort(comm));
  } else if (op.name == "premulsum") {
    float scalar = 2.0f;
    const ncclResult_t rc = ncclRedOpCreatePreMulSum(&premul_op_, &scalar, ncclFloat,
                                                     ncclScalarHostImmediate, current());
    report(op, rc, " op=" + std::to_string(static_cast<int>(premul_op_)));
  } else if (op.name == "redopdestroy") {
    report(op, ncclRedOpDestroy(premul_op_, current()));
  } else if (op.name == "asyncerror") {
    ncclResult_t async = ncclSuccess;
    const ncclResult_t rc = ncclCommGetAsyncError(current(), &async);
    report(op, rc, " async=" + std::to_string(static_cast<int>(async)));
  } else {
    return false;
  }
  return true;
}

bool Caller::runDataOp(const Op& op) {
  static constexpr struct {
    std::string_view name;
    CallFn call;
    bool has_peer;  // the second argument is a root or peer
  } kDataOps[] = {{"allreduce", callAllReduce, false},
                  {"bcast", callBcast, false},
                  {"broadcast", callBroadcast, true},
                  {"reduce", callReduce, true},
                  {"allgather", callAllGather, false},
                  {"reducescatter", callReduceScatter, false},
                  {"alltoall", callAlltoAll, false},
                  {"gather", callGather, true},
                  {"scatter", callScatter, true},
                  {"send", callSend, true},
                  {"recv", callRecv, true}};
  for (const auto& d : kDataOps) {
    if (d.name != op.name) continue;
    report(op, repeat(op.args[0], d.call, d.has_peer ? op.args[1] : 0));
    return true;
  }
  if (op.name == "group") {
    report(op, ncclGroupStart());
  } else if (op.name == "groupend") {
    report(op, ncclGroupEnd());
  } else if (op.name == "groupsimend") {
    ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
    const ncclResult_t rc = ncclGroupSimulateEnd(&info);
    report(op, rc, " time=" + std::to_string(info.estimatedTime));
  } else {
    return false;
  }
  return true;
}

int Caller::run(const std::vector<Op>& ops, size_t first) {
  for (size_t i = first; i < ops.size(); ++i) {
    const Op& op = ops[i];
    const std::vector<int>& a = op.args;
    if (runCommOp(op) || runDataOp(op)) continue;
    if (op.name == "getuniqueid") {
      ncclUniqueId id;
      report(op, ncclGetUniqueId(&id));
    } else if (op.name == "checksum") {
      report(op, ncclSuccess, checksum(recv_.data(), kCount));
      std::fill(recv_.begin(), recv_.end(), 0.0f);
    } else if (op.name == "stubcounts") {
      report(op, ncclSuccess, stubCounts());
    } else if (op.name == "threads") {
      std::vector<std::thread> threads;
      std::vector<ncclResult_t> results(static_cast<size_t>(a[0]), ncclSuccess);
      for (int t = 0; t < a[0]; ++t) {
        threads.emplace_back([this, &results, t, n = a[1]] {
          std::vector<float> send(kCount), recv(kCount);
          for (int k = 0; k < n; ++k) {
            const ncclResult_t rc = callAllReduce(current(), send.data(), recv.data(), 0);
            if (results[t] == ncclSuccess) results[t] = rc;
          }
        });
      }
      for (std::thread& thread : threads) thread.join();
      ncclResult_t rc = ncclSuccess;
      for (ncclResult_t r : results) rc = rc == ncclSuccess ? r : rc;
      report(op, rc);
    } else if (op.name == "sleep") {
      std::this_thread::sleep_for(std::chrono::milliseconds(a[0]));
      report(op, ncclSuccess);
    } else if (op.name == "fork") {
      std::fflush(stdout);
      const pid_t pid = fork();
      if (pid < 0) {
        std::fprintf(stderr, "nccl_caller: fork failed: %s\n", std::strerror(errno));
        return 1;
      }
      if (pid == 0) return run(ops, i + 1);
      int status = 0;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      report(op, ncclSuccess, " child=" + std::to_string(pid) + " status=" + std::to_string(code));
      return code;
    } else if (op.name == "kill") {
      report(op, ncclSuccess);
      raise(SIGKILL);
    } else if (op.name == "segv") {
      report(op, ncclSuccess);
      touchNothing();
    } else if (op.name == "exit") {
      report(op, ncclSuccess);
      std::exit(a[0]);
    }
  }
  return failed_ ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Op> ops;
  for (int i = 1; i < argc; ++i) {
    Op op;
    if (!parse(argv[i], &op)) {
      std::fprintf(stderr, "nccl_caller: bad operation '%s' (see the list in nccl_caller.cc)\n",
                   argv[i]);
      return kUsageError;
    }
    ops.push_back(std::move(op));
  }
  Caller caller;
  return caller.run(ops, 0);
}
