#include "launcher/store_server.h"

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "format/store_protocol.h"
#include "launcher/frame_server.h"

namespace ncclrec::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using format::store::Cmd;
using format::store::Reply;

using Conn = FrameServer::Conn;

// A get or wait that found a key missing; answered when the keys appear or at the deadline.
struct Waiter {
  uint64_t conn = 0;
  bool is_get = false;
  std::vector<std::string> keys;
  Clock::time_point deadline;
};

class Service : public FrameServer::Protocol {
 public:
  Service(std::string token, std::atomic<uint64_t>* refused)
      : token_(std::move(token)), refused_(refused) {}

  // Handles one payload from `c`; false: drop the connection.
  bool onFrame(Conn& c, std::string_view payload) override {
    if (payload.empty()) return false;
    const uint64_t id = c.id;
    format::store::Decoder d(payload);
    const auto cmd = static_cast<Cmd>(d.u8());
    if (!c.authed) {
      if (cmd != Cmd::kHello) return false;
      const std::string token = d.str();
      if (!d.complete()) return false;
      if (token != token_) {
        c.out += format::store::Encoder(static_cast<uint8_t>(Reply::kError))
                     .str("wrong job token")
                     .frame();
        c.closing = true;
        ++*refused_;
        return true;
      }
      c.authed = true;
      c.out += format::store::Encoder(static_cast<uint8_t>(Reply::kOk)).frame();
      return true;
    }
    switch (cmd) {
      case Cmd::kSet: {
        std::string key = d.str(), value = d.str();
        if (!d.complete()) return false;
        data_[key] = std::move(value);
        c.out += ok();
        return true;
      }
      case Cmd::kGet: {
        std::string key = d.str();
        const int64_t timeout_ms = d.i64();
        if (!d.complete() || timeout_ms < 0) return false;
        if (auto it = data_.find(key); it != data_.end()) {
          c.out += value(it->second);
        } else {
          waiters_.push_back({id, true, {std::move(key)}, deadline(timeout_ms)});
        }
        return true;
      }
      case Cmd::kWait: {
        const int64_t n = d.i64();
        if (d.failed() || n < 0 || n > 4096) return false;
        std::vector<std::string> keys;
        for (int64_t i = 0; i < n; ++i) keys.push_back(d.str());
        const int64_t timeout_ms = d.i64();
        if (!d.complete() || timeout_ms < 0) return false;
        if (allPresent(keys)) {
          c.out += ok();
        } else {
          waiters_.push_back({id, false, std::move(keys), deadline(timeout_ms)});
        }
        return true;
      }
      case Cmd::kAdd: {
        std::string key = d.str();
        const int64_t delta = d.i64();
        if (!d.complete()) return false;
        int64_t current = 0;
        if (auto it = data_.find(key); it != data_.end()) {
          const std::string& s = it->second;
          const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), current);
          if (ec != std::errc() || ptr != s.data() + s.size()) {
            c.out += format::store::Encoder(static_cast<uint8_t>(Reply::kError))
                         .str("add: the value of '" + key + "' is not an integer")
                         .frame();
            return true;
          }
        }
        current =
            static_cast<int64_t>(static_cast<uint64_t>(current) + static_cast<uint64_t>(delta));
        data_[key] = std::to_string(current);
        c.out += format::store::Encoder(static_cast<uint8_t>(Reply::kInt)).i64(current).frame();
        return true;
      }
      case Cmd::kCompareSet: {
        std::string key = d.str(), expected = d.str(), desired = d.str();
        if (!d.complete()) return false;
        auto it = data_.find(key);
        // torch.distributed semantics: a missing key counts as the empty value.
        if ((it == data_.end() && expected.empty()) ||
            (it != data_.end() && it->second == expected)) {
          data_[key] = desired;
          c.out += value(desired);
        } else {
          c.out += value(it == data_.end() ? std::string() : it->second);
        }
        return true;
      }
      case Cmd::kDelete: {
        std::string key = d.str();
        if (!d.complete()) return false;
        const int64_t erased = static_cast<int64_t>(data_.erase(key));
        c.out += format::store::Encoder(static_cast<uint8_t>(Reply::kInt)).i64(erased).frame();
        return true;
      }
      default:
        return false;
    }
  }

  // Answers the waiters whose keys are all present or whose deadline passed.
  void afterRound(FrameServer::Conns& conns) override {
    const Clock::time_point now = Clock::now();
    for (size_t i = 0; i < waiters_.size();) {
      Waiter& w = waiters_[i];
      auto conn = conns.find(w.conn);
      std::string reply;
      if (conn == conns.end()) {
        reply = "-";  // the client went away: forget the waiter
      } else if (allPresent(w.keys)) {
        reply = w.is_get ? value(data_[w.keys[0]]) : ok();
      } else if (now >= w.deadline) {
        reply = format::store::Encoder(static_cast<uint8_t>(Reply::kTimeout)).frame();
      }
      if (reply.empty()) {
        ++i;
        continue;
      }
      if (conn != conns.end()) conn->second.out += reply;
      waiters_.erase(waiters_.begin() + static_cast<ptrdiff_t>(i));
    }
  }

  // Milliseconds until the nearest waiter's deadline, -1 when none.
  int pollTimeoutMs() override {
    const Clock::time_point now = Clock::now();
    int64_t best = -1;
    for (const Waiter& w : waiters_) {
      const int64_t ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(w.deadline - now).count() + 1;
      if (best < 0 || ms < best) best = ms < 0 ? 0 : ms;
    }
    return static_cast<int>(best > 60000 ? 60000 : best);
  }

 private:
  static std::string ok() {
    return format::store::Encoder(static_cast<uint8_t>(Reply::kOk)).frame();
  }
  static std::string value(const std::string& v) {
    return format::store::Encoder(static_cast<uint8_t>(Reply::kValue)).str(v).frame();
  }
  static Clock::time_point deadline(int64_t timeout_ms) {
    // A day stands for "forever" and keeps the arithmetic away from overflow.
    return Clock::now() + std::chrono::milliseconds(timeout_ms > 86400000 ? 86400000 : timeout_ms);
  }
  bool allPresent(const std::vector<std::string>& keys) const {
    for (const auto& k : keys)
      if (!data_.contains(k)) return false;
    return true;
  }

  std::string token_;
  std::atomic<uint64_t>* refused_;
  std::map<std::string, std::string> data_;
  std::vector<Waiter> waiters_;
};

}  // namespace

base::StatusOr<std::unique_ptr<StoreServer>> StoreServer::start(const std::string& bind_addr,
                                                                int port, std::string token,
                                                                bool* addr_in_use) {
  auto listening =
      FrameServer::listen("store", bind_addr, port, format::store::kMaxFrame, addr_in_use);
  if (!listening.ok()) return listening.status();
  std::unique_ptr<StoreServer> server(new StoreServer());
  server->service_ = std::make_unique<Service>(std::move(token), &server->refused_);
  server->frames_ = std::move(listening).value();
  server->frames_->serve(server->service_.get());
  return server;
}

StoreServer::StoreServer() = default;
StoreServer::~StoreServer() = default;

int StoreServer::port() const { return frames_->port(); }

StoreServer::Stats StoreServer::stats() const {
  return {frames_->accepted(), frames_->violations() + refused_.load()};
}

}  // namespace ncclrec::launcher
