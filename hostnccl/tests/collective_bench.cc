// hostnccl's collectives against Gloo's own in one run, over the same TCP loopback: all-reduce
// (gloo::allreduce, ring) of 4 MiB of floats (throughput) and 8 bytes (latency) at 2 and 4 ranks,
// gather to rank 0 (gloo::gather) of 1 MiB and 8 bytes per rank at 4 ranks, where the root waits
// for three peers at once, and of 8 bytes at 2 ranks, where it waits for one, and all-to-all
// (gloo::alltoall) of 256 KiB and 8 bytes per pair at 4 ranks.
//
// This process is rank 0 and runs Google Benchmark; each benchmark re-executes this binary as
// ranks 1..n-1 ("follower" mode) with the same fixed iteration count. After the run it prints
// hostnccl's throughput as a fraction of Gloo's for each configuration.
#include <benchmark/benchmark.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/gather.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <nccl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

extern char** environ;

namespace {

constexpr int kWarmup = 3;
std::string gSelf;
// Seconds per iteration of each round, keyed by "<impl>/<op>/<ranks>/<bytes>".
std::map<std::string, std::vector<double>> gSeconds;

std::string toHex(const ncclUniqueId& id) {
  std::string s;
  char b[3];
  for (unsigned char c : id.internal) {
    std::snprintf(b, sizeof(b), "%02x", c);
    s += b;
  }
  return s;
}

ncclUniqueId fromHex(const std::string& s) {
  ncclUniqueId id{};
  for (size_t i = 0; i < sizeof(id.internal) && 2 * i + 1 < s.size(); ++i) {
    id.internal[i] = static_cast<char>(std::stoi(s.substr(2 * i, 2), nullptr, 16));
  }
  return id;
}

// The collective a benchmark runs; `count` floats per rank.
enum class Op { kAllReduce = 0, kGather = 1, kAllToAll = 2 };
const char* opName(Op op) {
  return op == Op::kAllReduce ? "allreduce" : op == Op::kGather ? "gather" : "alltoall";
}

// One rank's loop of one collective, used by rank 0 (timed) and by the followers.
struct Rank {
  virtual ~Rank() = default;
  virtual void run(Op op) = 0;
};

struct NcclRank : Rank {
  NcclRank(const std::string& idHex, int rank, int n, size_t count)
      : buf(count, 1.0f), in(count * n, 1.0f), all(count * n) {
    if (ncclCommInitRank(&comm, n, fromHex(idHex), rank) != ncclSuccess) {
      std::fprintf(stderr, "rank %d: ncclCommInitRank: %s\n", rank, ncclGetLastError(nullptr));
      std::exit(1);
    }
  }
  ~NcclRank() override { ncclCommDestroy(comm); }
  void run(Op op) override {
    ncclResult_t rc =
        op == Op::kAllReduce
            ? ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr)
        : op == Op::kGather
            ? ncclGather(buf.data(), all.data(), buf.size(), ncclFloat32, 0, comm, nullptr)
            : ncclAlltoAll(in.data(), all.data(), buf.size(), ncclFloat32, comm, nullptr);
    if (rc != ncclSuccess) {
      std::fprintf(stderr, "nccl %s: %s\n", opName(op), ncclGetLastError(comm));
      std::exit(1);
    }
  }
  ncclComm_t comm = nullptr;
  std::vector<float> buf, in, all;  // in: all-to-all's input
};

struct GlooRank : Rank {
  GlooRank(const std::string& dir, int rank, int n, size_t count)
      : buf(count, 1.0f), in(count * n, 1.0f), all(count * n) {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto dev = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore store(dir);
    auto c = std::make_shared<gloo::rendezvous::Context>(rank, n);
    c->connectFullMesh(store, dev);
    context = c;
  }
  void run(Op op) override {
    if (op == Op::kAllToAll) {
      gloo::AlltoallOptions opts(context);
      opts.setInput(in.data(), in.size());
      opts.setOutput(all.data(), all.size());
      gloo::alltoall(opts);
      return;
    }
    if (op == Op::kGather) {
      gloo::GatherOptions opts(context);
      opts.setInput(buf.data(), buf.size());
      if (context->rank == 0) opts.setOutput(all.data(), all.size());
      opts.setRoot(0);
      gloo::gather(opts);
      return;
    }
    gloo::AllreduceOptions opts(context);
    opts.setOutput(buf.data(), buf.size());
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    opts.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    gloo::allreduce(opts);
  }
  std::shared_ptr<gloo::Context> context;
  std::vector<float> buf, in, all;  // in: all-to-all's input
};

std::unique_ptr<Rank> makeRank(const std::string& impl, const std::string& where, int rank, int n,
                               size_t count) {
  if (impl == "hostnccl") return std::make_unique<NcclRank>(where, rank, n, count);
  return std::make_unique<GlooRank>(where, rank, n, count);
}

void runBench(benchmark::State& state, const std::string& impl) {
  const int n = static_cast<int>(state.range(0));
  const size_t bytes = static_cast<size_t>(state.range(1));
  const Op op = static_cast<Op>(state.range(2));
  const size_t count = std::max<size_t>(1, bytes / sizeof(float));
  const long iters = state.max_iterations;
  std::string where;
  std::filesystem::path dir;
  if (impl == "hostnccl") {
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess) {
      state.SkipWithError("ncclGetUniqueId failed");
      return;
    }
    where = toHex(id);
  } else {
    dir = std::filesystem::temp_directory_path() /
          ("hostnccl-bench-" + std::to_string(getpid()) + "-" + std::to_string(std::rand()));
    std::filesystem::create_directories(dir);
    where = dir.string();
  }
  std::vector<pid_t> followers;
  for (int r = 1; r < n; ++r) {
    std::vector<std::string> args = {gSelf,
                                     "--follower",
                                     impl,
                                     std::to_string(static_cast<int>(op)),
                                     where,
                                     std::to_string(r),
                                     std::to_string(n),
                                     std::to_string(count),
                                     std::to_string(iters + kWarmup)};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid;
    if (posix_spawn(&pid, gSelf.c_str(), nullptr, nullptr, argv.data(), environ) == 0) {
      followers.push_back(pid);
    }
  }
  {
    auto me = makeRank(impl, where, 0, n, count);
    for (int i = 0; i < kWarmup; ++i) me->run(op);
    auto start = std::chrono::steady_clock::now();
    for (auto _ : state) me->run(op);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    gSeconds[impl + "/" + opName(op) + "/" + std::to_string(n) + "/" + std::to_string(bytes)]
        .push_back(secs / iters);
  }
  for (pid_t p : followers) waitpid(p, nullptr, 0);
  if (!dir.empty()) std::filesystem::remove_all(dir);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * count * sizeof(float)));
}

// Rounds interleave the two implementations so that load from other processes on the machine
// hits both alike; the summary uses each side's median.
constexpr int kRounds = 3;

void registerAll() {
  struct Config {
    Op op;
    int ranks;
    int bytes;
    int iterations;
    benchmark::TimeUnit unit;
  };
  const Config configs[] = {{Op::kAllReduce, 2, 4 << 20, 30, benchmark::kMillisecond},
                            {Op::kAllReduce, 4, 4 << 20, 15, benchmark::kMillisecond},
                            {Op::kAllReduce, 2, 8, 1000, benchmark::kMicrosecond},
                            {Op::kAllReduce, 4, 8, 500, benchmark::kMicrosecond},
                            {Op::kGather, 4, 1 << 20, 30, benchmark::kMillisecond},
                            {Op::kGather, 2, 8, 1000, benchmark::kMicrosecond},
                            {Op::kGather, 4, 8, 500, benchmark::kMicrosecond},
                            {Op::kAllToAll, 4, 256 << 10, 30, benchmark::kMillisecond},
                            {Op::kAllToAll, 4, 8, 500, benchmark::kMicrosecond}};
  for (int round = 0; round < kRounds; ++round) {
    for (const Config& c : configs) {
      for (const char* impl : {"hostnccl", "gloo"}) {
        // Fixed iteration counts: the followers must run exactly as many collectives as rank 0.
        const std::string name = std::string(impl) + "/" + opName(c.op);
        benchmark::RegisterBenchmark(name.c_str(),
                                     [impl](benchmark::State& s) { runBench(s, impl); })
            ->Args({c.ranks, c.bytes, static_cast<int>(c.op)})
            ->Iterations(c.iterations)
            ->UseRealTime()
            ->Unit(c.unit);
      }
    }
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int follower(char** argv) {
  std::string impl = argv[2], where = argv[4];
  const Op op = static_cast<Op>(std::atoi(argv[3]));
  int rank = std::atoi(argv[5]), n = std::atoi(argv[6]);
  size_t count = std::strtoull(argv[7], nullptr, 10);
  long iters = std::atol(argv[8]);
  auto me = makeRank(impl, where, rank, n, count);
  for (long i = 0; i < iters; ++i) me->run(op);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  gSelf = std::filesystem::canonical("/proc/self/exe").string();
  if (argc >= 9 && std::strcmp(argv[1], "--follower") == 0) return follower(argv);
  registerAll();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::printf(
      "\nhostnccl vs Gloo, median of %d interleaved rounds (throughput ratio = Gloo's "
      "time / hostnccl's; >= 1 means hostnccl is as fast or faster):\n",
      kRounds);
  for (const auto& [key, secs] : gSeconds) {
    if (key.rfind("hostnccl/", 0) != 0) continue;
    auto gloo = gSeconds.find("gloo/" + key.substr(9));
    if (gloo == gSeconds.end()) continue;
    double h = median(secs), g = median(gloo->second);
    std::printf(
        "  op/ranks/bytes %-20s hostnccl %10.1f us  gloo %10.1f us  throughput ratio %.2f\n",
        key.substr(9).c_str(), h * 1e6, g * 1e6, g / h);
  }
  return 0;
}
