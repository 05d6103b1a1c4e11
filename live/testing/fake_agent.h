// A cxxrun agent's ncclrec-top server, faked for the tests of live/: it serves its connections
// on loopback one after the other; each request frame is answered by `answer(request bytes)`,
// sent as one frame (or as raw bytes when `raw`).
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace ncclrec::live::testing {

class FakeAgent {
 public:
  explicit FakeAgent(std::function<std::string(const std::string&)> answer, bool raw = false);
  ~FakeAgent();
  FakeAgent(const FakeAgent&) = delete;
  FakeAgent& operator=(const FakeAgent&) = delete;
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_.load(); }

 private:
  void serve();
  void answerAll(int fd);  // one connection, until the client closes it
  std::function<std::string(const std::string&)> answer_;
  bool raw_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<int> requests_{0};
  std::thread thread_;
};

}  // namespace ncclrec::live::testing
