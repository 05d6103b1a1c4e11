#include "hostnccl/store.h"

#include <gloo/common/error.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "hostnccl/errors.h"

namespace ncclrec::hostnccl {
namespace {

// Wire protocol, all integers little-endian host order (both ends run this code):
//   hello:   "HNS2" secret[16] nranks:u32 rank:i32 -> 'A' accepted | 'U' unknown
//            (a hello that breaks the session gets no answer; see serveConnection)
//   set:     'S' klen:u32 key vlen:u32 value   -> 'K'
//   get:     'G' klen:u32 key                  -> 'V' vlen:u32 value (blocks until the key is set)
//   done:    'D'                               -> 'K'
constexpr char kHello[4] = {'H', 'N', 'S', '2'};
constexpr uint32_t kMaxField = 64u << 20;

struct Session {
  std::mutex mu;
  std::condition_variable cv;
  uint32_t nranks = 0;  // 0 until the first hello
  uint32_t doneCount = 0;
  std::set<int32_t> ranks;  // the ranks that said hello
  // A hello disagreed with the session (another nranks, a rank said twice): like NCCL's bootstrap
  // root, which stops at the first mismatch, the session serves no one from then on.
  bool broken = false;
  std::map<std::string, std::vector<char>> kv;
};

struct Registry {
  std::mutex mu;
  std::map<Secret, std::shared_ptr<Session>> sessions;
};

// Leaked on purpose: connection threads may outlive static destruction at exit.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

bool readU32(int fd, uint32_t* v) { return recvAll(fd, v, sizeof(*v), std::nullopt); }
bool readField(int fd, std::string* out) {
  uint32_t n;
  if (!readU32(fd, &n) || n > kMaxField) return false;
  out->resize(n);
  return n == 0 || recvAll(fd, out->data(), n, std::nullopt);
}

// Holds a connection open, unanswered, until its peer closes it: the rank waits, as an NCCL rank
// whose bootstrap root stopped waits for its ring information.
void parkUntilPeerCloses(int fd) {
  char c;
  while (::recv(fd, &c, 1, 0) > 0) {
  }
  ::close(fd);
}

// The hello's verdict: 'A' accepted, 'X' this hello broke the session, 'B' an earlier one did.
char admit(Session& session, uint32_t nranks, int32_t rank) {
  std::lock_guard<std::mutex> lock(session.mu);
  if (session.broken) return 'B';
  if (session.nranks == 0) session.nranks = nranks;
  if (session.nranks != nranks || session.ranks.count(rank) != 0) {
    // NCCL's bootstrap root: "mismatch in info from procs" / "rank %d of %d ranks has already
    // checked in", then it stops serving.
    logWarn("rendezvous: %s (rank %d says nranks %u, the session has %u); it serves no one now",
            session.nranks != nranks ? "ranks disagree on nranks" : "a rank joined twice", rank,
            nranks, session.nranks);
    session.broken = true;
    return 'X';
  }
  session.ranks.insert(rank);
  return 'A';
}

void serveConnection(int fd) {
  char hello[4];
  Secret secret;
  uint32_t nranks = 0;
  int32_t rank = -1;
  // A peer that does not complete its hello promptly is not one of ours.
  Deadline helloDeadline = deadlineAfter(std::chrono::seconds(30));
  if (!recvAll(fd, hello, 4, helloDeadline) || std::memcmp(hello, kHello, 4) != 0 ||
      !recvAll(fd, secret.data(), secret.size(), helloDeadline) ||
      !recvAll(fd, &nranks, 4, helloDeadline) || !recvAll(fd, &rank, 4, helloDeadline)) {
    ::close(fd);
    return;
  }
  std::shared_ptr<Session> session;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.sessions.find(secret);
    if (it != r.sessions.end()) session = it->second;
  }
  const char verdict = session ? admit(*session, nranks, rank) : 'U';
  // The hello that broke the session waits forever, like the rank whose information NCCL's root
  // read before it stopped; a later one finds the root gone: closed unanswered, it retries as
  // against a refused connection, then fails.
  if (verdict == 'X') return parkUntilPeerCloses(fd);
  if (verdict == 'U') sendAll(fd, &verdict, 1, std::nullopt);
  if (verdict != 'A') {
    ::close(fd);
    return;
  }
  sendAll(fd, &verdict, 1, std::nullopt);
  for (;;) {
    char op;
    if (!recvAll(fd, &op, 1, std::nullopt)) break;
    if (op == 'S') {
      std::string key, value;
      if (!readField(fd, &key) || !readField(fd, &value)) break;
      {
        std::lock_guard<std::mutex> lock(session->mu);
        session->kv[key] = std::vector<char>(value.begin(), value.end());
      }
      session->cv.notify_all();
      char k = 'K';
      if (!sendAll(fd, &k, 1, std::nullopt)) break;
    } else if (op == 'G') {
      std::string key;
      if (!readField(fd, &key)) break;
      std::vector<char> value;
      {
        // The client bounds this wait with its own deadline and closes the socket on expiry;
        // a late key still wakes us, and the failed send below ends the thread.
        std::unique_lock<std::mutex> lock(session->mu);
        session->cv.wait(lock, [&] { return session->kv.count(key) != 0; });
        value = session->kv[key];
      }
      char v = 'V';
      uint32_t n = static_cast<uint32_t>(value.size());
      if (!sendAll(fd, &v, 1, std::nullopt) || !sendAll(fd, &n, 4, std::nullopt) ||
          (n > 0 && !sendAll(fd, value.data(), n, std::nullopt))) {
        break;
      }
    } else if (op == 'D') {
      bool finished = false;
      {
        std::lock_guard<std::mutex> lock(session->mu);
        finished = ++session->doneCount == session->nranks;
      }
      if (finished) {
        Registry& r = registry();
        std::lock_guard<std::mutex> lock(r.mu);
        r.sessions.erase(secret);
      }
      char k = 'K';
      sendAll(fd, &k, 1, std::nullopt);
      break;
    } else {
      break;
    }
  }
  ::close(fd);
}

}  // namespace

StoreService* StoreService::get(std::string* error) {
  static std::mutex mu;
  static StoreService* service = nullptr;  // leaked: its thread runs until the process exits
  static pid_t owner = 0;
  std::lock_guard<std::mutex> lock(mu);
  // A child forked after the parent started its service inherits the socket but not the accept
  // thread: it must listen on a port of its own, or its peers would reach the parent.
  if (service != nullptr && owner == getpid()) return service;
  if (service != nullptr) ::close(service->listenFd_);
  // Listen on every interface: the advertised address (the id's, or the one peers learn at
  // init) picks the interface; the secret keeps strangers out.
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    int zero = 0;
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    sockaddr_in6 any{};
    any.sin6_family = AF_INET6;
    any.sin6_addr = in6addr_any;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&any), sizeof(any)) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  if (fd < 0) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_addr.s_addr = htonl(INADDR_ANY);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&any), sizeof(any)) != 0) {
      *error = std::string("rendezvous listener: bind failed: ") + std::strerror(errno);
      if (fd >= 0) ::close(fd);
      return nullptr;
    }
  }
  if (::listen(fd, 1024) != 0) {
    *error = std::string("rendezvous listener: listen failed: ") + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  SockAddr bound;
  bound.len = sizeof(bound.storage);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound.storage), &bound.len);
  auto* s = new StoreService;
  s->listenFd_ = fd;
  s->port_ = bound.port();
  try {
    std::thread([s] { s->acceptLoop(); }).detach();
  } catch (const std::exception& e) {
    *error = std::string("rendezvous listener: cannot start thread: ") + e.what();
    ::close(fd);
    delete s;
    return nullptr;
  }
  service = s;
  owner = getpid();
  logInfo("rendezvous listener on port %d", s->port_);
  return service;
}

void StoreService::awaitSessionEnd(const Secret& secret,
                                   std::chrono::steady_clock::time_point until) {
  Registry& r = registry();
  while (std::chrono::steady_clock::now() < until) {
    {
      std::lock_guard<std::mutex> lock(r.mu);
      if (r.sessions.count(secret) == 0) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void StoreService::openSession(const Secret& secret) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto& slot = r.sessions[secret];
  if (!slot) slot = std::make_shared<Session>();
}

void StoreService::acceptLoop() {
  for (;;) {
    int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) {
        if (errno == EMFILE || errno == ENFILE)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      logWarn("rendezvous listener stopped: accept: %s", std::strerror(errno));
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    try {
      std::thread(serveConnection, fd).detach();
    } catch (...) {
      ::close(fd);
    }
  }
}

StoreClient::Result StoreClient::connect(const IdInfo& id, int nranks, int rank,
                                         const Deadline& deadline, std::string* error) {
  deadline_ = deadline;
  auto retryDelay = std::chrono::milliseconds(5);
  int attempts = 0;
  for (;;) {
    int fd = connectTo(id.root, deadline, error);
    char verdict = 0;
    if (fd >= 0) {
      const uint32_t n = static_cast<uint32_t>(nranks);
      const int32_t r = rank;
      if (sendAll(fd, kHello, 4, deadline) &&
          sendAll(fd, id.secret.data(), id.secret.size(), deadline) &&
          sendAll(fd, &n, 4, deadline) && sendAll(fd, &r, 4, deadline) &&
          recvAll(fd, &verdict, 1, deadline)) {
        if (verdict == 'A') {
          fd_ = fd;
          local_.len = sizeof(local_.storage);
          getsockname(fd, reinterpret_cast<sockaddr*>(&local_.storage), &local_.len);
          return Result::kOk;
        }
      } else {
        *error = "rendezvous with " + id.root.str() + " did not answer the hello";
      }
      ::close(fd);
    }
    if (verdict == 'U') {
      *error =
          "rendezvous with " + id.root.str() + " refused the unique id (unknown or already used)";
      // A derived id's root may not be listening for it yet; a user id's root always is, so a
      // refusal there is final.
      if (!id.derived) return Result::kRefused;
    } else if (!id.derived) {
      // No root there (refused, unreachable, timed out, or it closed on us: it stopped serving):
      // NCCL retries kConnectRetries times, sleeping 100 ms more each time, then gives up with
      // ncclRemoteError.
      if (++attempts > kConnectRetries) {
        *error +=
            ", exceeded the retry count after " + std::to_string(kConnectRetries) + " attempts";
        return Result::kUnreachable;
      }
      const auto sleep = std::chrono::milliseconds(100) * attempts;
      if (deadline && std::chrono::steady_clock::now() + sleep > *deadline)
        return Result::kUnreachable;
      std::this_thread::sleep_for(sleep);
      continue;
    }
    if (deadline && std::chrono::steady_clock::now() + retryDelay > *deadline)
      return Result::kUnreachable;
    std::this_thread::sleep_for(retryDelay);
    retryDelay = std::min(retryDelay * 2, std::chrono::milliseconds(200));
  }
}

StoreClient::~StoreClient() {
  if (fd_ >= 0) ::close(fd_);
}

bool StoreClient::request(char op, const std::string& key, const std::vector<char>* value,
                          std::vector<char>* reply) {
  if (fd_ < 0) return false;
  uint32_t klen = static_cast<uint32_t>(key.size());
  if (!sendAll(fd_, &op, 1, deadline_)) return false;
  if (op != 'D' &&
      (!sendAll(fd_, &klen, 4, deadline_) || !sendAll(fd_, key.data(), klen, deadline_))) {
    return false;
  }
  if (value != nullptr) {
    uint32_t vlen = static_cast<uint32_t>(value->size());
    if (!sendAll(fd_, &vlen, 4, deadline_) ||
        (vlen > 0 && !sendAll(fd_, value->data(), vlen, deadline_))) {
      return false;
    }
  }
  char status;
  if (!recvAll(fd_, &status, 1, deadline_)) return false;
  if (status == 'K') return true;
  if (status != 'V' || reply == nullptr) return false;
  uint32_t n;
  if (!recvAll(fd_, &n, 4, deadline_) || n > kMaxField) return false;
  reply->resize(n);
  return n == 0 || recvAll(fd_, reply->data(), n, deadline_);
}

void StoreClient::set(const std::string& key, const std::vector<char>& data) {
  if (!request('S', key, &data, nullptr)) {
    GLOO_THROW_IO_EXCEPTION("hostnccl rendezvous: set '", key, "' failed or timed out");
  }
}

std::vector<char> StoreClient::get(const std::string& key) {
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  std::vector<char> value;
  if (!request('G', key, nullptr, &value)) {
    GLOO_THROW_IO_EXCEPTION("hostnccl rendezvous: waiting for '", key,
                            "' failed or timed out (a rank did not join?)");
  }
  cache_[key] = value;
  return value;
}

void StoreClient::wait(const std::vector<std::string>& keys) {
  for (const auto& k : keys) get(k);
}

void StoreClient::wait(const std::vector<std::string>& keys,
                       const std::chrono::milliseconds& /*timeout: ours is the init deadline*/) {
  wait(keys);
}

void StoreClient::done() {
  request('D', "", nullptr, nullptr);
  ::close(fd_);
  fd_ = -1;
}

}  // namespace ncclrec::hostnccl
