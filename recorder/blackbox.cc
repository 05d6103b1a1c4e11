#include "recorder/blackbox.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "base/text.h"
#include "format/bbox_ring.h"
#include "recorder/clock.h"
#include "recorder/net_env.h"

namespace ncclrec::recorder {
namespace {

void copyString(char* dst, size_t cap, const std::string& src) {
  const size_t n = std::min(cap - 1, src.size());
  memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

int envInt(const char* name, int fallback) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long n = strtol(v, &end, 10);
  return (*end == '\0' && n >= 0 && n < (1 << 30)) ? static_cast<int>(n) : fallback;
}

// The first of `names` that is set to a number, else `fallback`.
int envIntOf(std::initializer_list<const char*> names, int fallback) {
  for (const char* name : names) {
    const int v = envInt(name, -1);
    if (v >= 0) return v;
  }
  return fallback;
}

}  // namespace

bool makeDirectories(const std::string& dir, std::string* error) {
  std::string prefix;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    prefix = dir.substr(0, pos);
    if (prefix.empty()) continue;
    if (mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      *error = "cannot create directory " + prefix + ": " + strerror(errno);
      return false;
    }
  }
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *error = dir + " is not a directory";
    return false;
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    *error = "directory " + dir + " is not writable: " + strerror(errno);
    return false;
  }
  return true;
}

std::unique_ptr<BlackBox> BlackBox::create(const Params& params, std::string* error,
                                           const PythonRegions& python) {
  if (!makeDirectories(params.dir, error)) return nullptr;
  format::RecordingName name;
  name.host = base::hostName();
  name.pid = getpid();
  std::string path;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    name.instance = attempt;
    path = params.dir + "/" + name.fileName();
    fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) {
      *error = "cannot create " + path + ": " + strerror(errno);
      return nullptr;
    }
  }
  if (fd < 0) {
    name.instance = 0;
    *error = "cannot create a black box named " + params.dir + "/" + name.fileName() +
             " or its -1..-99 variants: all names taken";
    return nullptr;
  }
  const uint32_t stack_depth = static_cast<uint32_t>(params.stack_depth) + python.depth;
  const uint32_t threads = params.snapshot_signal > 0 ? params.snapshot_threads : 0;
  const format::BboxGeometry g = format::computeGeometry(
      params.ring_capacity, params.max_comms, params.max_stacks, stack_depth, kModuleCapacity,
      python.code_capacity, python.blob_bytes, threads, params.max_links);
  const int rc = posix_fallocate(fd, 0, static_cast<off_t>(g.file_bytes));
  if (rc != 0) {
    *error = "cannot reserve " + std::to_string(g.file_bytes >> 20) + " MiB for " + path + ": " +
             strerror(rc);
    close(fd);
    unlink(path.c_str());
    return nullptr;
  }
  void* map = mmap(nullptr, g.file_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    *error = "cannot map " + path + ": " + strerror(errno);
    unlink(path.c_str());
    return nullptr;
  }
  auto* h = static_cast<format::BboxHeader*>(map);
  format::initHeader(h, params.ring_capacity, params.max_comms, params.max_stacks, stack_depth,
                     kModuleCapacity, python.code_capacity, python.blob_bytes, threads,
                     params.max_links);
  h->python_depth = python.depth;
  h->pid = getpid();
  // torchrun's and cxxrun's variables, else the MPI launcher's or Slurm's: a process that hangs
  // in its first communicator's creation is still known by its rank.
  h->global_rank = envIntOf({"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}, -1);
  h->world_size = envIntOf({"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}, -1);
  h->local_rank = envIntOf(
      {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}, -1);
  h->start_realtime_ns = realtimeNs();
  h->start_monotonic_ns = monotonicNs();
  copyString(h->host, sizeof(h->host), name.host);
  copyString(h->run_id, sizeof(h->run_id), params.run_id);
  char exe[sizeof(h->exe)] = {};
  if (readlink("/proc/self/exe", exe, sizeof(exe) - 1) < 0) exe[0] = '\0';
  copyString(h->exe, sizeof(h->exe), exe);
  captureNetEnv(environ, h->net_env, sizeof(h->net_env));
  return std::unique_ptr<BlackBox>(new BlackBox(h, g.file_bytes, path, name));
}

BlackBox::~BlackBox() {
  if (header_ != nullptr) munmap(header_, bytes_);
}

void BlackBox::abandon() {
  if (header_ != nullptr) munmap(header_, bytes_);
  header_ = nullptr;
}

}  // namespace ncclrec::recorder
