// The record path's cost: ns per ncclAllReduce through libncclrec.so (the wrapper) next to ns per
// pncclAllReduce (the stub NCCL's alias of the same function, without the shim), in one process,
// with the same arguments on registered 2-rank communicators (the stub returns at once for
// nranks > 1). The recorder reads NCCLREC_* once per process, so run_record_bench.sh runs this
// binary once per configuration.
//
// The executable links libncclrec.so before the stub libnccl.so.2, so `ncclAllReduce` binds to the
// shim as it would under LD_PRELOAD; main() checks that before measuring. Every call is made from
// kChainFrames noinline frames deep, so a 16-frame stack capture really walks 16 frames; the
// wrapped single-thread benchmark reads its own black box back to confirm one event per call and
// the frames per stack.
//
// Times are CPU ns per call (GoogleBenchmark's CPU column: thread CPU time summed over threads,
// divided by calls), so oversubscribed threads do not count time spent descheduled. Per thread
// count, the last lines give the median over repetitions:
//   ncclrec-bench: recording=<on|off> stack_depth=<n> unwinder=<none|fp|libunwind> frames=<n>
//   ncclrec-bench: threads=<t> direct_ns=<x> wrapped_ns=<y> added_ns=<y-x> ratio=<y/x>
//
// With CUDA completion (NCCLREC_COMPLETION=cuda|cuda-full and NCCLREC_CUDA_LIBRARY naming the fake
// driver of tests/support), the wrapped single-thread benchmark also counts the driver calls its
// thread made (the fake's fakeCudaThreadCalls: the watchdog's polls are on another thread) and
// checks that its calls were CUDA-timed; the config line then says
//   ncclrec-bench: ... completion=<host|cuda|cuda-full> driver_calls_per_op=<x> cuda_timed=<share>
// (the share of calls the markers timed: the rest fell back to host completion, at no driver call,
// when the marker pool ran dry because the watchdog was descheduled).
// Each thread calls on its own stream handle (a made-up, non-null CUstream: the stub ignores it,
// the fake driver takes any handle as a stream of its default context).
//
// The dlsym rows time a lookup through libncclrec.so's exported dlsym (the program's dlsym binds
// to it, as under LD_PRELOAD) next to libc's own dlsym, called directly:
//   ncclrec-bench: dlsym lookup=<handle>:<name> direct_ns=<x> hooked_ns=<y> added_ns=<y-x>
//   ratio=<y/x>
// for a lookup the shim passes on (RTLD_DEFAULT and a handle) and one it redirects (a wrapped
// name on the libnccl handle). run_record_bench.sh runs them once, in a process of their own
// (--benchmark_filter=^dlsym).
//
// Exit status: 0 measured; 1 bad command line; 2 setup failed (NCCL init, shim not in front of
// the stub); 3 the wrapped call did not record what the configuration asks for (events or frames),
// or a hooked lookup did not answer what it must.
#include <benchmark/benchmark.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "format/bbox_layout.h"
#include "format/bbox_ring.h"
#include "nccl.h"

// The stub's alias of ncclAllReduce (NVIDIA's nccl.h does not declare the pnccl* names either).
extern "C" ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                       ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                       cudaStream_t stream);

namespace ncclrec::bench {
namespace {

constexpr int kChainFrames = 16;
constexpr int kMaxThreads = 4;
constexpr size_t kCount = 256;

using AllReduceFn = decltype(&pncclAllReduce);

struct CallArgs {
  AllReduceFn fn;
  const float* send;
  float* recv;
  ncclComm_t comm;
  cudaStream_t stream;
};

cudaStream_t streamOf(int thread) {
  return reinterpret_cast<cudaStream_t>(uintptr_t{0x51000} + 64 * static_cast<uintptr_t>(thread));
}

// One frame per level; the call happens in the innermost one. DoNotOptimize after the recursive
// call keeps it out of tail position, so the compiler cannot turn the chain into a loop.
__attribute__((noinline)) ncclResult_t callThroughFrames(int frames, const CallArgs& a) {
  ncclResult_t rc;
  if (frames <= 1) {
    rc = a.fn(a.send, a.recv, kCount, ncclFloat32, ncclSum, a.comm, a.stream);
  } else {
    rc = callThroughFrames(frames - 1, a);
  }
  benchmark::DoNotOptimize(rc);
  return rc;
}

// The process's own black box, mapped read-only (the recorder keeps writing it).
class OwnBlackBox {
 public:
  ~OwnBlackBox() {
    if (header_ != nullptr) munmap(const_cast<format::BboxHeader*>(header_), bytes_);
  }
  // Finds "<dir>/*.bbox" written by this pid. False when there is none (recording is off).
  bool open(const std::string& dir) {
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) return false;
    while (const dirent* entry = readdir(d)) {
      const std::string name = entry->d_name;
      if (name.size() < 5 || name.compare(name.size() - 5, 5, ".bbox") != 0) continue;
      if (map(dir + "/" + name) && header_->pid == getpid()) break;
      close();
    }
    closedir(d);
    return header_ != nullptr;
  }
  const format::BboxHeader* header() const { return header_; }
  uint64_t writeIndex() const {
    return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(header_->write_index))
        .load(std::memory_order_acquire);
  }
  // Of the events [from, to) still in the ring, the share timed by CUDA markers; -1 for none.
  double cudaTimedShare(uint64_t from, uint64_t to) const {
    const uint64_t capacity = header_->ring_capacity;
    if (to - from > capacity) from = to - capacity;
    uint64_t read = 0, timed = 0;
    format::Event e;
    for (uint64_t i = from; i < to; ++i) {
      if (!format::readEvent(header_, i, &e)) continue;
      ++read;
      if ((e.flags & format::kEventCudaTimed) != 0) ++timed;
    }
    return read == 0 ? -1 : static_cast<double>(timed) / static_cast<double>(read);
  }
  // Frames of the last event's stack; 0 without one, -1 when the last event cannot be read.
  int lastEventFrames() const {
    const uint64_t n = writeIndex();
    format::Event e;
    if (n == 0 || !format::readEvent(header_, n - 1, &e)) return -1;
    if (e.stack_id == format::kNoStack) return 0;
    if (e.stack_id >= header_->stack_capacity) return -1;
    return static_cast<int>(format::stackRecord(header_, e.stack_id)->depth);
  }

 private:
  bool map(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st;
    void* p = MAP_FAILED;
    if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= format::kHeaderBytes) {
      p = mmap(nullptr, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    }
    ::close(fd);
    if (p == MAP_FAILED) return false;
    header_ = static_cast<const format::BboxHeader*>(p);
    bytes_ = st.st_size;
    if (std::memcmp(header_->magic, format::kBboxMagic, sizeof(format::kBboxMagic)) != 0 ||
        header_->file_bytes > bytes_) {
      close();
      return false;
    }
    return true;
  }
  void close() {
    if (header_ != nullptr) munmap(const_cast<format::BboxHeader*>(header_), bytes_);
    header_ = nullptr;
  }
  const format::BboxHeader* header_ = nullptr;
  size_t bytes_ = 0;
};

struct Setup {
  ncclComm_t comms[kMaxThreads] = {};  // one per thread: NCCL comms are not for concurrent use
  std::vector<float> send[kMaxThreads], recv[kMaxThreads];
  OwnBlackBox box;
  bool recording = false;
  // The fake CUDA driver's per-thread call count, when the recorder loaded the fake.
  unsigned long long (*driver_calls)() = nullptr;
  double driver_calls_per_op = -1;  // measured by the wrapped single-thread benchmark
  double cuda_timed = -1;           // the share of its calls timed by CUDA markers
  std::string problem;              // set by a benchmark whose check failed (exit status 3)
};
Setup g_setup;

// The dlsym lookups timed, each through the shim's dlsym and through libc's.
struct Lookup {
  const char* label;
  void* handle;
  const char* name;
};
using DlsymFn = void* (*)(void*, const char*);
DlsymFn g_libc_dlsym = nullptr;
std::vector<Lookup> g_lookups;

// libc's dlsym, asked for by version: the shim's unversioned dlsym cannot be the answer.
DlsymFn findLibcDlsym() {
  void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  if (libc == nullptr) return nullptr;
  void* f = dlvsym(libc, "dlsym", "GLIBC_2.34");
#if defined(__x86_64__)
  if (f == nullptr) f = dlvsym(libc, "dlsym", "GLIBC_2.2.5");
#elif defined(__aarch64__)
  if (f == nullptr) f = dlvsym(libc, "dlsym", "GLIBC_2.17");
#endif
  return reinterpret_cast<DlsymFn>(f);
}

const char* objectOf(const void* p) {
  Dl_info info;
  return p != nullptr && dladdr(p, &info) != 0 && info.dli_fname != nullptr ? info.dli_fname
                                                                            : "nothing";
}

bool initLookups(std::string* error) {
  g_libc_dlsym = findLibcDlsym();
  if (g_libc_dlsym == nullptr ||
      reinterpret_cast<void*>(g_libc_dlsym) == dlsym(RTLD_DEFAULT, "dlsym") ||
      std::strstr(objectOf(reinterpret_cast<void*>(&dlsym)), "libncclrec") == nullptr) {
    *error = "the program's dlsym is not libncclrec.so's, or libc's dlsym cannot be found";
    return false;
  }
  void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  void* nccl = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
  g_lookups = {{"default:malloc", RTLD_DEFAULT, "malloc"},
               {"libc:getpid", libc, "getpid"},
               {"libnccl:ncclAllReduce", nccl, "ncclAllReduce"}};
  for (const Lookup& l : g_lookups) {
    void* hooked = dlsym(l.handle, l.name);
    void* direct = g_libc_dlsym(l.handle, l.name);
    const bool redirected = std::strncmp(l.name, "nccl", 4) == 0;
    if (hooked == nullptr || direct == nullptr ||
        (redirected ? std::strstr(objectOf(hooked), "libncclrec") == nullptr : hooked != direct)) {
      *error = std::string("dlsym ") + l.label + " answers " + objectOf(hooked) +
               ", libc's dlsym " + objectOf(direct);
      return false;
    }
  }
  return true;
}

void runLookups(benchmark::State& state, const Lookup& l, bool hooked) {
  const DlsymFn fn = hooked ? &dlsym : g_libc_dlsym;
  for (auto _ : state) {
    void* p = fn(l.handle, l.name);
    benchmark::DoNotOptimize(p);
  }
}

bool init(std::string* error) {
  if (!initLookups(error)) return false;
  Dl_info info;
  void* wrapped = dlsym(RTLD_DEFAULT, "ncclAllReduce");
  if (wrapped == nullptr || dladdr(wrapped, &info) == 0 || info.dli_fname == nullptr ||
      std::strstr(info.dli_fname, "libncclrec") == nullptr) {
    *error = std::string("ncclAllReduce resolves to ") +
             (wrapped != nullptr && info.dli_fname != nullptr ? info.dli_fname : "nothing") +
             ", not libncclrec.so: link the shim before the NCCL library";
    return false;
  }
  for (int t = 0; t < kMaxThreads; ++t) {
    ncclUniqueId id;
    ncclResult_t rc = ncclGetUniqueId(&id);
    if (rc == ncclSuccess) rc = ncclCommInitRank(&g_setup.comms[t], 2, id, 0);
    if (rc != ncclSuccess) {
      *error = std::string("ncclCommInitRank failed: ") + ncclGetErrorString(rc);
      return false;
    }
    g_setup.send[t].assign(kCount, 1.0f);
    g_setup.recv[t].assign(kCount, 0.0f);
  }
  const char* dir = std::getenv("NCCLREC_DIR");
  g_setup.recording = g_setup.box.open(dir != nullptr && *dir != '\0' ? dir : "./ncclrec-dumps");
  // Steady state, not start-up: the first pass over the ring faults its pages in (one fault per
  // 32 events), which a long job pays once. Two passes, so the ring has wrapped before timing.
  const uint64_t warm_up =
      g_setup.recording ? 2 * uint64_t{g_setup.box.header()->ring_capacity} : 0;
  const CallArgs args{&ncclAllReduce, g_setup.send[0].data(), g_setup.recv[0].data(),
                      g_setup.comms[0], streamOf(0)};
  for (uint64_t i = 0; i < warm_up; ++i) {
    if (callThroughFrames(kChainFrames, args) != ncclSuccess) {
      *error = "ncclAllReduce failed while warming up the ring";
      return false;
    }
  }
  // The recorder dlopen'ed the driver at its first call (above): find the fake's counter there.
  const char* cuda = std::getenv("NCCLREC_CUDA_LIBRARY");
  if (void* fake =
          cuda != nullptr && *cuda != '\0' ? dlopen(cuda, RTLD_LAZY | RTLD_NOLOAD) : nullptr) {
    g_setup.driver_calls =
        reinterpret_cast<unsigned long long (*)()>(dlsym(fake, "fakeCudaThreadCalls"));
  }
  return true;
}

bool cudaCompletion() {
  const char* c = std::getenv("NCCLREC_COMPLETION");
  return c != nullptr && std::strncmp(c, "cuda", 4) == 0;
}

void runCalls(benchmark::State& state, AllReduceFn fn) {
  const int t = state.thread_index();
  const CallArgs args{fn, g_setup.send[t].data(), g_setup.recv[t].data(), g_setup.comms[t],
                      streamOf(t)};
  const bool check = state.threads() == 1 && g_setup.recording;
  const uint64_t before = check ? g_setup.box.writeIndex() : 0;
  const unsigned long long calls_before = g_setup.driver_calls ? g_setup.driver_calls() : 0;
  for (auto _ : state) {
    if (callThroughFrames(kChainFrames, args) != ncclSuccess) {
      state.SkipWithError("ncclAllReduce failed");
      break;
    }
  }
  if (!check) return;
  // One event per wrapped call, none per direct call.
  const double events = static_cast<double>(g_setup.box.writeIndex() - before);
  state.counters["events_per_call"] = events / static_cast<double>(state.iterations());
  if (fn == &pncclAllReduce) {
    if (events != 0) g_setup.problem = "direct calls were recorded: they went through the shim";
    return;
  }
  if (g_setup.driver_calls != nullptr) {
    g_setup.driver_calls_per_op =
        static_cast<double>(g_setup.driver_calls() - calls_before) / state.iterations();
    state.counters["driver_calls"] = g_setup.driver_calls_per_op;
  }
  if (cudaCompletion()) {
    // Not every call: when the watchdog is descheduled long enough for the marker pool (65536
    // ops) to run dry, calls fall back to host completion, with no driver call.
    g_setup.cuda_timed = g_setup.box.cudaTimedShare(before, g_setup.box.writeIndex());
    if (g_setup.cuda_timed <= 0)
      g_setup.problem = "NCCLREC_COMPLETION asks for CUDA markers but no call was timed by them";
  }
  const int frames = g_setup.box.lastEventFrames();
  const int want = static_cast<int>(
      std::min<uint32_t>(g_setup.box.header()->stack_depth, static_cast<uint32_t>(kChainFrames)));
  state.counters["frames"] = frames;
  if (events != static_cast<double>(state.iterations())) {
    g_setup.problem = "wrapped calls recorded " + std::to_string(static_cast<int64_t>(events)) +
                      " events for " + std::to_string(state.iterations()) + " calls";
  } else if (frames < want) {
    g_setup.problem =
        "wrapped calls recorded " + std::to_string(frames) + " frames, not " + std::to_string(want);
  }
}

// Console output as usual (without colour: the driver script reads it), plus each run's CPU ns per
// call kept for the summary.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  SummaryReporter() : ConsoleReporter(OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      ns_[{run.run_name.function_name, run.threads}].push_back(run.GetAdjustedCPUTime());
    }
    ConsoleReporter::ReportRuns(runs);
  }
  // Median over repetitions; 0 when that benchmark did not run.
  double median(const std::string& name, int64_t threads) const {
    auto it = ns_.find({name, threads});
    if (it == ns_.end() || it->second.empty()) return 0;
    std::vector<double> v = it->second;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  }

 private:
  std::map<std::pair<std::string, int64_t>, std::vector<double>> ns_;
};

// What the recorder was asked for, from its black box, and which unwinder it could load.
void printConfig() {
  const char* completion = std::getenv("NCCLREC_COMPLETION");
  char cuda[128] = "completion=host";
  if (g_setup.recording && cudaCompletion() && g_setup.driver_calls_per_op >= 0) {
    std::snprintf(cuda, sizeof(cuda), "completion=%s driver_calls_per_op=%.3f cuda_timed=%.3f",
                  completion, g_setup.driver_calls_per_op, g_setup.cuda_timed);
  }
  if (!g_setup.recording) {
    std::printf("ncclrec-bench: recording=off stack_depth=0 unwinder=none frames=0 %s\n", cuda);
    return;
  }
  const uint32_t depth = g_setup.box.header()->stack_depth;
  const char* unwind = std::getenv("NCCLREC_UNWIND");
  const bool want_fp = unwind != nullptr && std::strcmp(unwind, "fp") == 0;
  // The recorder dlopens libunwind.so.8 (RTLD_LOCAL) when it may use it.
  void* libunwind = dlopen("libunwind.so.8", RTLD_LAZY | RTLD_NOLOAD);
  const char* unwinder = depth == 0                           ? "none"
                         : (!want_fp && libunwind != nullptr) ? "libunwind"
                                                              : "fp";
  if (libunwind != nullptr) dlclose(libunwind);
  std::printf("ncclrec-bench: recording=on stack_depth=%u unwinder=%s frames=%d %s\n", depth,
              unwinder, depth == 0 ? 0 : g_setup.box.lastEventFrames(), cuda);
}

}  // namespace
}  // namespace ncclrec::bench

int main(int argc, char** argv) {
  using namespace ncclrec::bench;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::string error;
  if (!init(&error)) {
    std::fprintf(stderr, "ncclrec_record_bench: %s\n", error.c_str());
    return 2;
  }
  for (const int threads : {1, kMaxThreads}) {
    benchmark::RegisterBenchmark("direct",
                                 [](benchmark::State& s) { runCalls(s, &pncclAllReduce); })
        ->Threads(threads)
        ->Unit(benchmark::kNanosecond);
    benchmark::RegisterBenchmark("wrapped",
                                 [](benchmark::State& s) { runCalls(s, &ncclAllReduce); })
        ->Threads(threads)
        ->Unit(benchmark::kNanosecond);
  }
  for (const Lookup& l : g_lookups) {
    benchmark::RegisterBenchmark((std::string("dlsym_direct/") + l.label).c_str(),
                                 [&l](benchmark::State& s) { runLookups(s, l, false); })
        ->Unit(benchmark::kNanosecond);
    benchmark::RegisterBenchmark((std::string("dlsym_hooked/") + l.label).c_str(),
                                 [&l](benchmark::State& s) { runLookups(s, l, true); })
        ->Unit(benchmark::kNanosecond);
  }
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  printConfig();
  for (const int threads : {1, kMaxThreads}) {
    const double direct = reporter.median("direct", threads);
    const double wrapped = reporter.median("wrapped", threads);
    if (direct <= 0 || wrapped <= 0) continue;  // filtered out or failed
    std::printf(
        "ncclrec-bench: threads=%d direct_ns=%.1f wrapped_ns=%.1f added_ns=%.1f "
        "ratio=%.2f\n",
        threads, direct, wrapped, wrapped - direct, wrapped / direct);
  }
  for (const Lookup& l : g_lookups) {
    const double direct = reporter.median(std::string("dlsym_direct/") + l.label, 1);
    const double hooked = reporter.median(std::string("dlsym_hooked/") + l.label, 1);
    if (direct <= 0 || hooked <= 0) continue;
    std::printf(
        "ncclrec-bench: dlsym lookup=%s direct_ns=%.1f hooked_ns=%.1f added_ns=%.1f ratio=%.2f\n",
        l.label, direct, hooked, hooked - direct, hooked / direct);
  }
  std::fflush(stdout);
  if (!g_setup.problem.empty()) {
    std::fprintf(stderr, "ncclrec_record_bench: %s\n", g_setup.problem.c_str());
    return 3;
  }
  return 0;
}
