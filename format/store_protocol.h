// The wire format of cxxrun's key-value store, shared by the server (store_server.h) and the
// header-only client (store_client.h). Header-only so that a program can use the client without
// linking anything of ncclrec.
//
// Every message, both ways, is a frame: a 4-byte little-endian length, then that many bytes of
// payload: one command or reply byte, then fields (int64: 8 bytes little-endian; string: int32
// length + bytes). The first request on a connection must be kHello with the job token; the server
// drops a connection (and only it) on a wrong token, a frame longer than kMaxFrame, or a payload
// that does not decode.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ncclrec::format::store {

inline constexpr uint32_t kMaxFrame = 1u << 20;  // keys and values of a job are small

enum class Cmd : uint8_t {
  kHello = 1,       // token
  kSet = 2,         // key, value                      -> kOk
  kGet = 3,         // key, timeout_ms (waits for key)  -> kValue value | kTimeout
  kWait = 4,        // n, n keys, timeout_ms            -> kOk | kTimeout
  kAdd = 5,         // key, delta                       -> kInt value | kError message
  kCompareSet = 6,  // key, expected, desired           -> kValue value after the call
  kDelete = 7,      // key                              -> kInt 1 (deleted) | 0 (absent)
};

enum class Reply : uint8_t { kOk = 1, kValue = 2, kTimeout = 3, kInt = 4, kError = 5 };

class Encoder {
 public:
  explicit Encoder(uint8_t code) { buf_.assign(4, '\0'), buf_.push_back(static_cast<char>(code)); }
  Encoder& i64(int64_t v) {
    for (int i = 0; i < 8; ++i)
      buf_.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff));
    return *this;
  }
  Encoder& str(std::string_view s) {
    const auto n = static_cast<uint32_t>(s.size());
    for (int i = 0; i < 4; ++i) buf_.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    buf_.append(s);
    return *this;
  }
  // The finished frame, length prefix filled in.
  std::string frame() {
    const auto n = static_cast<uint32_t>(buf_.size() - 4);
    for (int i = 0; i < 4; ++i) buf_[i] = static_cast<char>((n >> (8 * i)) & 0xff);
    return buf_;
  }

 private:
  std::string buf_;
};

inline uint32_t readU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

// Reads the fields of one payload (without its length prefix). Any read past the end sets
// failed(); the caller checks once at the end.
class Decoder {
 public:
  explicit Decoder(std::string_view payload) : rest_(payload) {}
  uint8_t u8() {
    if (rest_.empty()) return fail(), 0;
    const auto v = static_cast<uint8_t>(rest_[0]);
    rest_.remove_prefix(1);
    return v;
  }
  int64_t i64() {
    if (rest_.size() < 8) return fail(), 0;
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v |= static_cast<uint64_t>(static_cast<uint8_t>(rest_[i])) << (8 * i);
    rest_.remove_prefix(8);
    return static_cast<int64_t>(v);
  }
  std::string str() {
    if (rest_.size() < 4) return fail(), std::string();
    const uint32_t n = readU32(rest_.data());
    if (rest_.size() - 4 < n) return fail(), std::string();
    std::string s(rest_.substr(4, n));
    rest_.remove_prefix(4 + static_cast<size_t>(n));
    return s;
  }
  bool failed() const { return failed_; }
  // Decoded without error and nothing left over.
  bool complete() const { return !failed_ && rest_.empty(); }

 private:
  void fail() {
    failed_ = true;
    rest_ = {};
  }
  std::string_view rest_;
  bool failed_ = false;
};

}  // namespace ncclrec::format::store
