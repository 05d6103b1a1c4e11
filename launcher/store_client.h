// Client of cxxrun's key-value store (store_server.h), header-only: a program launched by cxxrun
// includes it and links nothing else. The usual use, sharing an ncclUniqueId, is three lines:
//
//   ncclUniqueId id{};
//   if (rank == 0) ncclGetUniqueId(&id);
//   auto status = ncclrec::launcher::storeBroadcast("nccl_id", rank == 0, &id, sizeof(id));
//
// Calls block (with a timeout) and are not thread-safe: use one client per thread. Errors come
// back as a Status whose message names the store and the key; nothing throws.
#pragma once

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "launcher/store_protocol.h"
#include "recorder/format/status.h"

namespace ncclrec::launcher {

class StoreClient {
 public:
  // Connects to "host:port" and presents `token`, retrying a refused connection until
  // `timeout_s` (the store may still be starting).
  static format::StatusOr<StoreClient> connect(const std::string& endpoint,
                                               const std::string& token, double timeout_s = 60) {
    const size_t colon = endpoint.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == endpoint.size())
      return format::Status::error("store: bad endpoint '" + endpoint + "' (want host:port)");
    const std::string host = endpoint.substr(0, colon), port = endpoint.substr(colon + 1);
    const auto deadline = Clock::now() + toDuration(timeout_s);
    std::string why;
    do {
      addrinfo hints{};
      hints.ai_family = AF_UNSPEC;
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* res = nullptr;
      const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
      if (rc != 0) return format::Status::error("store " + endpoint + ": " + gai_strerror(rc));
      for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
        const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          freeaddrinfo(res);
          const int one = 1;
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          StoreClient client(fd, endpoint);
          auto reply =
              client.call(store::Encoder(uint8_t(store::Cmd::kHello)).str(token), deadline);
          if (!reply.ok()) return reply.status();
          if (reply->code != store::Reply::kOk)
            return format::Status::error("store " + endpoint + ": " + reply->text);
          return client;
        }
        why = strerror(errno);
        ::close(fd);
      }
      freeaddrinfo(res);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (Clock::now() < deadline);
    return format::Status::error("store " + endpoint + ": cannot connect: " + why);
  }

  // Connects to the store of the job that launched this process (CXXRUN_STORE, CXXRUN_TOKEN).
  // Keys are then kept apart per restart attempt (TORCHELASTIC_RESTART_COUNT), so a restarted
  // group never reads what its previous attempt wrote.
  static format::StatusOr<StoreClient> fromEnv(double timeout_s = 60) {
    const char* endpoint = std::getenv("CXXRUN_STORE");
    const char* token = std::getenv("CXXRUN_TOKEN");
    if (endpoint == nullptr || *endpoint == '\0')
      return format::Status::error("store: CXXRUN_STORE is not set (not started by cxxrun?)");
    auto client = connect(endpoint, token != nullptr ? token : "", timeout_s);
    if (!client.ok()) return client;
    const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
    client->prefix_ = std::string("attempt") + (attempt != nullptr ? attempt : "0") + "/";
    return client;
  }

  StoreClient(StoreClient&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)),
        endpoint_(std::move(other.endpoint_)),
        prefix_(std::move(other.prefix_)) {}
  StoreClient& operator=(StoreClient&& other) noexcept {
    std::swap(fd_, other.fd_);
    std::swap(endpoint_, other.endpoint_);
    std::swap(prefix_, other.prefix_);
    return *this;
  }
  ~StoreClient() {
    if (fd_ >= 0) ::close(fd_);
  }

  format::Status set(const std::string& key, const std::string& value) {
    auto r = call(store::Encoder(uint8_t(store::Cmd::kSet)).str(prefix_ + key).str(value),
                  Clock::now() + kIoTimeout);
    return r.ok() ? expect(*r, store::Reply::kOk, key) : r.status();
  }

  // The value of `key`, waiting up to `timeout_s` for another process to set it.
  format::StatusOr<std::string> get(const std::string& key, double timeout_s) {
    auto r = call(store::Encoder(uint8_t(store::Cmd::kGet)).str(prefix_ + key).i64(toMs(timeout_s)),
                  Clock::now() + toDuration(timeout_s) + kIoTimeout);
    if (!r.ok()) return r.status();
    if (r->code == store::Reply::kTimeout)
      return format::Status::error("store " + endpoint_ + ": key '" + key + "' not set after " +
                                   std::to_string(timeout_s) + " s");
    NCCLREC_RETURN_IF_ERROR(expect(*r, store::Reply::kValue, key));
    return std::move(r->text);
  }

  // The value of `key` now, nullopt when it is not set; never waits.
  format::StatusOr<std::optional<std::string>> tryGet(const std::string& key) {
    auto r = call(store::Encoder(uint8_t(store::Cmd::kGet)).str(prefix_ + key).i64(0),
                  Clock::now() + kIoTimeout);
    if (!r.ok()) return r.status();
    if (r->code == store::Reply::kTimeout) return std::optional<std::string>();
    NCCLREC_RETURN_IF_ERROR(expect(*r, store::Reply::kValue, key));
    return std::optional<std::string>(std::move(r->text));
  }

  // Waits until every key is set; fails after `timeout_s`.
  format::Status wait(const std::vector<std::string>& keys, double timeout_s) {
    store::Encoder e(uint8_t(store::Cmd::kWait));
    e.i64(static_cast<int64_t>(keys.size()));
    for (const auto& k : keys) e.str(prefix_ + k);
    e.i64(toMs(timeout_s));
    auto r = call(e, Clock::now() + toDuration(timeout_s) + kIoTimeout);
    if (!r.ok()) return r.status();
    if (r->code == store::Reply::kTimeout)
      return format::Status::error("store " + endpoint_ + ": keys not all set after " +
                                   std::to_string(timeout_s) + " s");
    return expect(*r, store::Reply::kOk, keys.empty() ? "" : keys[0]);
  }

  // Adds `delta` to the integer at `key` (absent: 0) and returns the new value.
  format::StatusOr<int64_t> add(const std::string& key, int64_t delta) {
    auto r = call(store::Encoder(uint8_t(store::Cmd::kAdd)).str(prefix_ + key).i64(delta),
                  Clock::now() + kIoTimeout);
    if (!r.ok()) return r.status();
    NCCLREC_RETURN_IF_ERROR(expect(*r, store::Reply::kInt, key));
    return r->number;
  }

  // Sets `key` to `desired` if it holds `expected` (an absent key holds ""); returns the value
  // the key holds after the call.
  format::StatusOr<std::string> compareSet(const std::string& key, const std::string& expected,
                                           const std::string& desired) {
    auto r = call(store::Encoder(uint8_t(store::Cmd::kCompareSet))
                      .str(prefix_ + key)
                      .str(expected)
                      .str(desired),
                  Clock::now() + kIoTimeout);
    if (!r.ok()) return r.status();
    NCCLREC_RETURN_IF_ERROR(expect(*r, store::Reply::kValue, key));
    return std::move(r->text);
  }

  // True when the key existed.
  format::StatusOr<bool> remove(const std::string& key) {
    auto r = call(store::Encoder(uint8_t(store::Cmd::kDelete)).str(prefix_ + key),
                  Clock::now() + kIoTimeout);
    if (!r.ok()) return r.status();
    NCCLREC_RETURN_IF_ERROR(expect(*r, store::Reply::kInt, key));
    return r->number != 0;
  }

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kIoTimeout{30};

  struct Answer {
    store::Reply code = store::Reply::kError;
    std::string text;
    int64_t number = 0;
  };

  StoreClient(int fd, std::string endpoint) : fd_(fd), endpoint_(std::move(endpoint)) {}

  static std::chrono::milliseconds toDuration(double s) {
    return std::chrono::milliseconds(toMs(s));
  }
  static int64_t toMs(double s) {
    return s <= 0 ? 0 : s > 86400 ? 86400000 : static_cast<int64_t>(s * 1000);
  }

  format::Status expect(const Answer& a, store::Reply want, const std::string& key) const {
    if (a.code == want) return format::okStatus();
    return format::Status::error("store " + endpoint_ + ": key '" + key + "': " +
                                 (a.code == store::Reply::kError ? a.text : "unexpected reply"));
  }

  format::StatusOr<Answer> call(store::Encoder request, Clock::time_point deadline) {
    if (fd_ < 0) return format::Status::error("store: not connected");
    const std::string frame = request.frame();
    for (size_t done = 0; done < frame.size();) {
      const ssize_t n = ::send(fd_, frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return lost(strerror(errno));
      done += static_cast<size_t>(n);
    }
    // Replies come one per request: read exactly one frame, its length first, the rest straight
    // into place (values may be half a megabyte: no small buffer to copy through).
    std::string in(4, '\0');
    size_t have = 0;
    for (;;) {
      if (have == 4 && in.size() == 4) {
        const uint32_t len = store::readU32(in.data());
        if (len == 0 || len > store::kMaxFrame) return lost("bad reply");
        in.resize(4 + static_cast<size_t>(len));
      }
      if (have == in.size() && have > 4) {
        store::Decoder d(std::string_view(in).substr(4));
        Answer a;
        a.code = static_cast<store::Reply>(d.u8());
        if (a.code == store::Reply::kValue || a.code == store::Reply::kError) a.text = d.str();
        if (a.code == store::Reply::kInt) a.number = d.i64();
        if (!d.complete()) return lost("bad reply");
        return a;
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return lost("no reply in time");
      pollfd p{fd_, POLLIN, 0};
      const int rc = ::poll(&p, 1, static_cast<int>(left));
      if (rc < 0 && errno == EINTR) continue;
      if (rc <= 0) continue;
      const ssize_t n = ::recv(fd_, in.data() + have, in.size() - have, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return lost(n == 0 ? "connection closed by the store" : strerror(errno));
      have += static_cast<size_t>(n);
    }
  }

  format::Status lost(const std::string& why) {
    ::close(fd_);
    fd_ = -1;
    return format::Status::error("store " + endpoint_ + ": " + why);
  }

  int fd_ = -1;
  std::string endpoint_;
  std::string prefix_;
};

// Rank `is_root` publishes `size` bytes at `data` under `key`; every other process of the job
// waits up to `timeout_s` for them and copies them into `data`. Uses the job's store (fromEnv).
inline format::Status storeBroadcast(const std::string& key, bool is_root, void* data, size_t size,
                                     double timeout_s = 300) {
  auto client = StoreClient::fromEnv(timeout_s);
  if (!client.ok()) return client.status();
  if (is_root) return client->set(key, std::string(static_cast<const char*>(data), size));
  auto value = client->get(key, timeout_s);
  if (!value.ok()) return value.status();
  if (value->size() != size)
    return format::Status::error("store: key '" + key + "' holds " + std::to_string(value->size()) +
                                 " bytes, expected " + std::to_string(size));
  std::memcpy(data, value->data(), size);
  return format::okStatus();
}

}  // namespace ncclrec::launcher
