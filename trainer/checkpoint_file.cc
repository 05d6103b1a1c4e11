#include "trainer/checkpoint_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace ncclrec::trainer {
namespace {

constexpr char kMagic[8] = {'N', 'C', 'R', 'T', 'C', 'K', 'P', 'T'};
constexpr uint32_t kVersion = 1;
// Sanity bounds that a corrupt header cannot push the reader past.
constexpr uint32_t kMaxTensors = 1u << 20;
constexpr uint32_t kMaxName = 4096;
constexpr uint32_t kMaxDims = 16;

template <class T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(v));
}

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  template <class T>
  bool get(T* v) {
    if (bytes_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool bytes(void* out, size_t n) {
    if (bytes_.size() - pos_ < n) return false;
    std::memcpy(out, bytes_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  size_t pos() const { return pos_; }

 private:
  const std::string& bytes_;
  size_t pos_ = 0;
};

base::Status syscallError(const std::string& what, const std::string& path) {
  return base::Status::error("checkpoint " + path + ": " + what + ": " + std::strerror(errno));
}

}  // namespace

uint64_t fnv1a64(const void* data, size_t size, uint64_t hash) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

base::Status writeCheckpointFile(const std::string& path, const Checkpoint& c) {
  std::string out(kMagic, sizeof(kMagic));
  put(out, kVersion);
  put(out, static_cast<uint32_t>(c.tensors.size()));
  put(out, c.step);
  put(out, c.fingerprint);
  for (const CheckpointTensor& t : c.tensors) {
    put(out, static_cast<uint32_t>(t.name.size()));
    out += t.name;
    put(out, static_cast<uint32_t>(t.shape.size()));
    for (int64_t d : t.shape) put(out, d);
    out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size() * sizeof(float));
  }
  put(out, fnv1a64(out.data(), out.size()));

  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return base::Status::error("checkpoint " + path + ": cannot create " + dir + ": " +
                               ec.message());
  }
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return syscallError("cannot create " + tmp, path);
  for (size_t done = 0; done < out.size();) {
    const ssize_t n = ::write(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const base::Status s = syscallError("cannot write " + tmp, path);
      ::close(fd);
      ::unlink(tmp.c_str());
      return s;
    }
    done += static_cast<size_t>(n);
  }
  // Data on disk before the rename makes it visible: a crash leaves the old file or the new one.
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const base::Status s = syscallError("cannot flush " + tmp, path);
    ::unlink(tmp.c_str());
    return s;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const base::Status s = syscallError("cannot rename " + tmp, path);
    ::unlink(tmp.c_str());
    return s;
  }
  // The rename itself is durable once the directory is synced.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return base::okStatus();
}

base::StatusOr<Checkpoint> readCheckpointFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return syscallError("cannot open", path);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto bad = [&](const std::string& why) {
    return base::Status::error("checkpoint " + path + ": " + why);
  };
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return bad("not an ncclrec-trainer checkpoint (no NCRTCKPT magic)");
  }
  if (bytes.size() < sizeof(kMagic) + 4 + 4 + 8 + 8 + 8) return bad("truncated header");
  uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + bytes.size() - sizeof(stored), sizeof(stored));
  Reader r(bytes);
  char magic[sizeof(kMagic)];
  uint32_t version = 0, count = 0;
  Checkpoint c;
  r.bytes(magic, sizeof(magic));
  r.get(&version);
  if (version != kVersion) {
    return bad("format version " + std::to_string(version) + ", this build reads version " +
               std::to_string(kVersion));
  }
  if (fnv1a64(bytes.data(), bytes.size() - sizeof(stored)) != stored) {
    return bad("checksum mismatch (truncated or corrupt)");
  }
  r.get(&count);
  r.get(&c.step);
  r.get(&c.fingerprint);
  if (count > kMaxTensors) return bad("implausible tensor count " + std::to_string(count));
  const size_t end = bytes.size() - sizeof(stored);
  for (uint32_t i = 0; i < count; ++i) {
    CheckpointTensor t;
    uint32_t name_len = 0, ndim = 0;
    if (!r.get(&name_len) || name_len > kMaxName) return bad("bad tensor name");
    t.name.resize(name_len);
    if (!r.bytes(t.name.data(), name_len) || !r.get(&ndim) || ndim > kMaxDims) {
      return bad("bad header of tensor " + std::to_string(i));
    }
    uint64_t numel = 1;
    for (uint32_t d = 0; d < ndim; ++d) {
      int64_t dim = 0;
      if (!r.get(&dim) || dim < 0) return bad("bad shape of tensor '" + t.name + "'");
      t.shape.push_back(dim);
      numel *= static_cast<uint64_t>(dim);
    }
    if (numel > (end - r.pos()) / sizeof(float)) return bad("tensor '" + t.name + "' is cut short");
    t.data.resize(numel);
    r.bytes(t.data.data(), numel * sizeof(float));
    c.tensors.push_back(std::move(t));
  }
  if (r.pos() != end) return bad("trailing bytes after the last tensor");
  return c;
}

}  // namespace ncclrec::trainer
