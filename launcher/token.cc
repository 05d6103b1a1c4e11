#include "launcher/token.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace ncclrec::launcher {

std::string randomToken() {
  unsigned char bytes[16] = {};
  std::ifstream in("/dev/urandom", std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(bytes), sizeof(bytes))) return "";
  std::string hex;
  char buf[3];
  for (unsigned char b : bytes) {
    std::snprintf(buf, sizeof(buf), "%02x", b);
    hex += buf;
  }
  return hex;
}

namespace {

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  const size_t first = s.find_first_not_of(ws);
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(ws) - first + 1);
}

}  // namespace

base::StatusOr<std::string> jobToken(bool multi_node, const std::string& run_id,
                                     const char* env_secret, const std::string& token_file) {
  if (!multi_node) {
    std::string token = randomToken();
    if (token.empty()) return base::Status::error("cxxrun: cannot read /dev/urandom");
    return token;
  }
  std::string secret;
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    if (!in) {
      return base::Status::error("cxxrun: --rdzv-token-file " + token_file +
                                 ": cannot read: " + std::strerror(errno));
    }
    std::getline(in, secret);
    secret = trim(secret);
    if (secret.empty())
      return base::Status::error("cxxrun: --rdzv-token-file " + token_file +
                                 ": the first line is empty (want the job's shared secret)");
  } else if (env_secret != nullptr) {
    secret = trim(env_secret);
  }
  if (secret.empty()) {
    return base::Status::error(
        "cxxrun: a job on several nodes needs a shared secret for its store: set CXXRUN_TOKEN "
        "(the same on every node, e.g. CXXRUN_TOKEN=$(openssl rand -hex 16)) or give "
        "--rdzv-token-file FILE");
  }
  return secret + ":" + run_id;
}

}  // namespace ncclrec::launcher
