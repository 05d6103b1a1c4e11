// Client of cxxrun's key-value store (store_server.h), header-only: a program launched by cxxrun
// includes it and links nothing else. The usual use, sharing an ncclUniqueId, is three lines:
//
//   ncclUniqueId id{};
//   if (rank == 0) ncclGetUniqueId(&id);
//   auto status = ncclrec::format::storeBroadcast("nccl_id", rank == 0, &id, sizeof(id));
//
// Calls block (with a timeout) and are not thread-safe: use one client per thread. Errors come
// back as a Status whose message names the store and the key; nothing throws.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/status.h"
#include "format/frame_client.h"
#include "format/store_protocol.h"

namespace ncclrec::format {

class StoreClient {
 public:
  // Connects to "host:port" ("[v6]:port" too) and presents `token`, retrying a refused
  // connection until `timeout_s` (the store may still be starting).
  static base::StatusOr<StoreClient> connect(const std::string& endpoint, const std::string& token,
                                             double timeout_s = 60) {
    if (auto e = format::parseEndpoint(endpoint); !e.ok())
      return base::Status::error("store: " + e.status().message());
    const auto deadline = Clock::now() + toDuration(timeout_s);
    for (;;) {
      // One try may take a moment past a deadline already near (a timeout of 0: one try).
      const auto try_until = std::max(deadline, Clock::now() + kConnectTry);
      bool retry = false;
      auto socket = format::FrameSocket::connect(endpoint, "the store", try_until, &retry);
      if (socket.ok()) {
        StoreClient client(std::move(socket).value(), endpoint);
        auto reply = client.call(store::Encoder(uint8_t(store::Cmd::kHello)).str(token), try_until);
        if (!reply.ok()) return reply.status();
        if (reply->code != store::Reply::kOk)
          return base::Status::error("store " + endpoint + ": " + reply->text);
        return client;
      }
      if (!retry || Clock::now() >= deadline)
        return base::Status::error("store " + endpoint + ": " + socket.status().message());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  // Connects to the store of the job that launched this process (CXXRUN_STORE, CXXRUN_TOKEN).
  // Keys are then kept apart per restart attempt (TORCHELASTIC_RESTART_COUNT), so a restarted
  // group never reads what its previous attempt wrote.
  static base::StatusOr<StoreClient> fromEnv(double timeout_s = 60) {
    const char* endpoint = std::getenv("CXXRUN_STORE");
    const char* token = std::getenv("CXXRUN_TOKEN");
    if (endpoint == nullptr || *endpoint == '\0')
      return base::Status::error("store: CXXRUN_STORE is not set (not started by cxxrun?)");
    auto client = connect(endpoint, token != nullptr ? token : "", timeout_s);
    if (!client.ok()) return client;
    const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
    client->prefix_ = std::string("attempt") + (attempt != nullptr ? attempt : "0") + "/";
    return client;
  }

  // How long one request may wait for the store to take it and answer (beyond the wait a get
  // or wait asks for); 30 s unless set. A short one suits a client whose calls must not hold up
  // its caller on a network that stopped (the agents' heartbeat).
  void setIoTimeout(std::chrono::milliseconds timeout) { io_timeout_ = timeout; }
  // This end's address on the connection to the store (FrameSocket::localAddress): how the
  // store's host reaches this one.
  std::string localAddress() const { return socket_.localAddress(); }

  StoreClient(StoreClient&&) noexcept = default;
  StoreClient& operator=(StoreClient&&) noexcept = default;

  base::Status set(const std::string& key, const std::string& value) {
    auto r = call(store::Encoder(uint8_t(store::Cmd::kSet)).str(prefix_ + key).str(value),
                  Clock::now() + io_timeout_);
    return r.ok() ? expect(*r, store::Reply::kOk, key) : r.status();
  }

  // The value of `key`, waiting up to `timeout_s` for another process to set it.
  base::StatusOr<std::string> get(const std::string& key, double timeout_s) {
    auto r = call(store::Encoder(uint8_t(store::Cmd::kGet)).str(prefix_ + key).i64(toMs(timeout_s)),
                  Clock::now() + toDuration(timeout_s) + io_timeout_);
    if (!r.ok()) return r.status();
    if (r->code == store::Reply::kTimeout)
      return base::Status::error("store " + endpoint_ + ": key '" + key + "' not set after " +
                                 std::to_string(timeout_s) + " s");
    NCCLREC_RETURN_IF_ERROR(expect(*r, store::Reply::kValue, key));
    return std::move(r->text);
  }

  // The value of `key` now, nullopt when it is not set; never waits.
  base::StatusOr<std::optional<std::string>> tryGet(const std::string& key) {
    auto r = call(store::Encoder(uint8_t(store::Cmd::kGet)).str(prefix_ + key).i64(0),
                  Clock::now() + io_timeout_);
    if (!r.ok()) return r.status();
    if (r->code == store::Reply::kTimeout) return std::optional<std::string>();
    NCCLREC_RETURN_IF_ERROR(expect(*r, store::Reply::kValue, key));
    return std::optional<std::string>(std::move(r->text));
  }

  // Waits until every key is set; fails after `timeout_s`.
  base::Status wait(const std::vector<std::string>& keys, double timeout_s) {
    store::Encoder e(uint8_t(store::Cmd::kWait));
    e.i64(static_cast<int64_t>(keys.size()));
    for (const auto& k : keys) e.str(prefix_ + k);
    e.i64(toMs(timeout_s));
    auto r = call(e, Clock::now() + toDuration(timeout_s) + io_timeout_);
    if (!r.ok()) return r.status();
    if (r->code == store::Reply::kTimeout)
      return base::Status::error("store " + endpoint_ + ": keys not all set after " +
                                 std::to_string(timeout_s) + " s");
    return expect(*r, store::Reply::kOk, keys.empty() ? "" : keys[0]);
  }

  // Adds `delta` to the integer at `key` (absent: 0) and returns the new value.
  base::StatusOr<int64_t> add(const std::string& key, int64_t delta) {
    auto r = call(store::Encoder(uint8_t(store::Cmd::kAdd)).str(prefix_ + key).i64(delta),
                  Clock::now() + io_timeout_);
    if (!r.ok()) return r.status();
    NCCLREC_RETURN_IF_ERROR(expect(*r, store::Reply::kInt, key));
    return r->number;
  }

  // Sets `key` to `desired` if it holds `expected` (an absent key holds ""); returns the value
  // the key holds after the call.
  base::StatusOr<std::string> compareSet(const std::string& key, const std::string& expected,
                                         const std::string& desired) {
    auto r = call(store::Encoder(uint8_t(store::Cmd::kCompareSet))
                      .str(prefix_ + key)
                      .str(expected)
                      .str(desired),
                  Clock::now() + io_timeout_);
    if (!r.ok()) return r.status();
    NCCLREC_RETURN_IF_ERROR(expect(*r, store::Reply::kValue, key));
    return std::move(r->text);
  }

  // True when the key existed.
  base::StatusOr<bool> remove(const std::string& key) {
    auto r = call(store::Encoder(uint8_t(store::Cmd::kDelete)).str(prefix_ + key),
                  Clock::now() + io_timeout_);
    if (!r.ok()) return r.status();
    NCCLREC_RETURN_IF_ERROR(expect(*r, store::Reply::kInt, key));
    return r->number != 0;
  }

 private:
  using Clock = format::FrameSocket::Clock;
  static constexpr std::chrono::seconds kIoTimeout{30};
  static constexpr std::chrono::seconds kConnectTry{1};

  struct Answer {
    store::Reply code = store::Reply::kError;
    std::string text;
    int64_t number = 0;
  };

  StoreClient(format::FrameSocket socket, std::string endpoint)
      : socket_(std::move(socket)), endpoint_(std::move(endpoint)) {}

  static std::chrono::milliseconds toDuration(double s) {
    return std::chrono::milliseconds(toMs(s));
  }
  static int64_t toMs(double s) {
    return s <= 0 ? 0 : s > 86400 ? 86400000 : static_cast<int64_t>(s * 1000);
  }

  base::Status expect(const Answer& a, store::Reply want, const std::string& key) const {
    if (a.code == want) return base::okStatus();
    return base::Status::error("store " + endpoint_ + ": key '" + key + "': " +
                               (a.code == store::Reply::kError ? a.text : "unexpected reply"));
  }

  // Replies come one per request: one frame out, exactly one frame back.
  base::StatusOr<Answer> call(store::Encoder request, Clock::time_point deadline) {
    if (!socket_.connected()) return base::Status::error("store: not connected");
    if (auto sent = socket_.sendAll(request.frame(), deadline); !sent.ok())
      return lost(sent.message());
    auto body = socket_.readFrame(store::kMaxFrame, deadline);
    if (!body.ok()) return lost(body.status().message());
    if (body->empty()) return lost("bad reply");
    store::Decoder d(*body);
    Answer a;
    a.code = static_cast<store::Reply>(d.u8());
    if (a.code == store::Reply::kValue || a.code == store::Reply::kError) a.text = d.str();
    if (a.code == store::Reply::kInt) a.number = d.i64();
    if (!d.complete()) return lost("bad reply");
    return a;
  }

  base::Status lost(const std::string& why) {
    socket_.close();
    return base::Status::error("store " + endpoint_ + ": " + why);
  }

  format::FrameSocket socket_;
  std::string endpoint_;
  std::string prefix_;
  std::chrono::milliseconds io_timeout_ = kIoTimeout;
};

// Rank `is_root` publishes `size` bytes at `data` under `key`; every other process of the job
// waits up to `timeout_s` for them and copies them into `data`. Uses the job's store (fromEnv).
inline base::Status storeBroadcast(const std::string& key, bool is_root, void* data, size_t size,
                                   double timeout_s = 300) {
  auto client = StoreClient::fromEnv(timeout_s);
  if (!client.ok()) return client.status();
  if (is_root) return client->set(key, std::string(static_cast<const char*>(data), size));
  auto value = client->get(key, timeout_s);
  if (!value.ok()) return value.status();
  if (value->size() != size)
    return base::Status::error("store: key '" + key + "' holds " + std::to_string(value->size()) +
                               " bytes, expected " + std::to_string(size));
  std::memcpy(data, value->data(), size);
  return base::okStatus();
}

}  // namespace ncclrec::format
