#include "launcher/top_server.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "base/clock.h"
#include "base/text.h"
#include "format/dump_io.h"
#include "format/ncclrec.pb.h"
#include "format/reader.h"
#include "format/store_client.h"

namespace ncclrec::launcher {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kMaxRequest = 64u << 10;
constexpr double kCacheSeconds = 0.25;
constexpr double kPeersEverySeconds = 5;
constexpr int kMaxEventsCap = 4096;
constexpr const char* kCountKey = "ncclrec-top/count";

// Takes the same time wherever the two differ.
bool sameToken(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// The attempt directory cxxrun writes now: the highest attempt_N under the run directory.
std::string newestAttempt(const std::string& run_dir) {
  std::error_code ec;
  long best = -1;
  std::string dir = run_dir;
  for (fs::directory_iterator it(run_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("attempt_", 0) != 0) continue;
    char* e = nullptr;
    const long n = std::strtol(name.c_str() + 8, &e, 10);
    if (*e == '\0' && n > best) {
      best = n;
      dir = it->path().string();
    }
  }
  return dir;
}

// The last `max_events` events of `d`, and only the stacks those use.
void trim(format::RankData* d, size_t max_events) {
  if (d->events.size() > max_events)
    d->events.erase(d->events.begin(), d->events.end() - static_cast<ptrdiff_t>(max_events));
  std::set<uint32_t> used;
  for (const auto& e : d->events) used.insert(e.stackId());
  for (auto it = d->stacks.begin(); it != d->stacks.end();)
    it = used.contains(it->first) ? std::next(it) : d->stacks.erase(it);
}

// What the server thread keeps between requests.
class Replier {
 public:
  Replier(const TopServer::Config& config, std::string self)
      : config_(config), self_(std::move(self)), host_(base::hostName()) {}

  std::string answer(const format::pb::TopRequest& request) {
    const auto now = Clock::now();
    const int max_events = request.max_events() > 0
                               ? std::min<int>(int(request.max_events()), kMaxEventsCap)
                               : config_.max_events;
    if (!cached_ || now - read_at_ > std::chrono::duration<double>(kCacheSeconds) ||
        max_events != cached_events_) {
      cached_ = read(max_events);
      read_at_ = now;
      cached_events_ = max_events;
      ++reads;
    }
    format::pb::TopReply reply = *cached_;
    for (const std::string& p : peers()) reply.add_peers(p);
    if (request.ask_snapshot()) reply.set_snapshot_asked(askSnapshot());
    return reply.SerializeAsString();
  }

  uint64_t reads = 0;

 private:
  // ncclrec-top's 't' key through this agent: the ranks of its newest attempt take a snapshot.
  std::string askSnapshot() {
    const std::string dir = newestAttempt(config_.run_dir);
    std::string error;
    const std::string path = format::writeSnapshotRequest(
        dir, fs::path(config_.run_dir).filename().string(),
        "ncclrec-top asks for a thread snapshot through the agent", &error);
    if (path.empty()) return "no thread snapshot asked: " + error;
    return "asked the ranks of " + dir + " for a thread snapshot";
  }

  format::pb::TopReply read(int max_events) {
    format::pb::TopReply reply;
    const std::string dir = newestAttempt(config_.run_dir);
    reply.set_host(host_);
    reply.set_dir(dir);
    reply.set_run_id(fs::path(config_.run_dir).filename().string());
    reply.set_now_ns(base::realtimeNs());
    std::vector<std::string> files;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.size() > format::kBboxSuffix.size() &&
          name.compare(name.size() - format::kBboxSuffix.size(), std::string::npos,
                       format::kBboxSuffix) == 0)
        files.push_back(it->path().string());
    }
    std::sort(files.begin(), files.end());
    for (const std::string& path : files) {
      auto data = format::loadBlackBox(path);
      if (!data.ok()) {
        reply.add_warnings(data.status().message());
        continue;
      }
      trim(&data.value(), size_t(max_events));
      format::pb::TopRank* rank = reply.add_ranks();
      *rank->mutable_data() = format::toProto(*data);
      rank->set_source(path);
      // Killed without a chance to mark its black box (SIGKILL, the OOM killer).
      rank->set_process_gone(!data->exited && data->fatal_signal == 0 && data->host == host_ &&
                             data->pid > 0 && ::kill(data->pid, 0) != 0 && errno == ESRCH);
    }
    return reply;
  }

  // The other agents of the job, as published in the store; this one registers on first use.
  const std::vector<std::string>& peers() {
    if (config_.store_endpoint.empty()) return peers_;
    const auto now = Clock::now();
    if (peers_read_ && now - peers_at_ < std::chrono::duration<double>(kPeersEverySeconds))
      return peers_;
    peers_at_ = now;
    peers_read_ = true;
    if (!store_) {
      auto client = format::StoreClient::connect(config_.store_endpoint, config_.token, 2);
      if (!client.ok()) return peers_;
      store_.emplace(std::move(client).value());
    }
    if (!registered_) {
      auto n = store_->add(kCountKey, 1);
      if (!n.ok() || !store_->set("ncclrec-top/" + std::to_string(*n), self_).ok()) {
        store_.reset();
        return peers_;
      }
      registered_ = true;
    }
    auto count = store_->add(kCountKey, 0);
    if (!count.ok()) {
      store_.reset();
      return peers_;
    }
    std::vector<std::string> found;
    for (int64_t i = 1; i <= std::min<int64_t>(*count, 4096); ++i) {
      auto v = store_->tryGet("ncclrec-top/" + std::to_string(i));
      if (v.ok() && v->has_value() && **v != self_) found.push_back(**v);
    }
    peers_ = std::move(found);
    return peers_;
  }

  const TopServer::Config& config_;
  std::string self_;
  std::string host_;
  std::optional<format::pb::TopReply> cached_;
  Clock::time_point read_at_;
  int cached_events_ = 0;
  std::optional<format::StoreClient> store_;
  bool registered_ = false;
  bool peers_read_ = false;
  Clock::time_point peers_at_;
  std::vector<std::string> peers_;
};

// TopRequest frames in, TopReply frames out; a wrong token or an undecodable request is answered
// with `error` set, then the connection is closed.
class TopProtocol : public FrameServer::Protocol {
 public:
  TopProtocol(const TopServer::Config& config, std::string self, TopServer::Counters* counters)
      : config_(config), replier_(config, std::move(self)), counters_(counters) {}

  bool onFrame(FrameServer::Conn& c, std::string_view body) override {
    format::pb::TopRequest request;
    const bool decoded = request.ParseFromArray(body.data(), static_cast<int>(body.size()));
    ++counters_->requests;
    if (!decoded || !sameToken(request.token(), config_.token)) {
      ++counters_->refused;
      format::pb::TopReply refusal;
      refusal.set_error(decoded ? "wrong job token" : "request does not decode");
      c.out += FrameServer::frame(refusal.SerializeAsString());
      c.closing = true;
      return true;
    }
    c.out += FrameServer::frame(replier_.answer(request));
    counters_->reads.store(replier_.reads);
    return true;
  }

 private:
  const TopServer::Config& config_;
  Replier replier_;
  TopServer::Counters* counters_;
};

}  // namespace

base::StatusOr<std::unique_ptr<TopServer>> TopServer::start(Config config) {
  auto listening =
      FrameServer::listen("ncclrec-top server", config.bind_addr, config.port, kMaxRequest);
  if (!listening.ok()) return listening.status();
  std::unique_ptr<TopServer> server(new TopServer(std::move(config)));
  server->frames_ = std::move(listening).value();
  server->protocol_ =
      std::make_unique<TopProtocol>(server->config_, server->endpoint(), &server->counters_);
  server->frames_->serve(server->protocol_.get());
  return server;
}

TopServer::TopServer(Config config) : config_(std::move(config)) {}

TopServer::~TopServer() {
  frames_.reset();  // stops the thread before the endpoint file goes
  if (!remove_on_stop_.empty()) ::unlink(remove_on_stop_.c_str());
}

int TopServer::port() const { return frames_->port(); }

TopServer::Stats TopServer::stats() const {
  return {frames_->accepted(), counters_.requests.load(),
          counters_.refused.load() + frames_->violations(), counters_.reads.load()};
}

std::unique_ptr<TopServer> startTopServer(const Options& o, const JobFacts& facts,
                                          const std::string& run_dir, const std::string& host) {
  auto say = [](const std::string& line) {
    const std::string s = "cxxrun: " + line + "\n";
    (void)!write(STDERR_FILENO, s.data(), s.size());
  };
  const bool loopback = o.master_addr == "localhost" || o.master_addr.rfind("127.", 0) == 0;
  TopServer::Config c;
  c.bind_addr = loopback ? "127.0.0.1" : "0.0.0.0";
  c.advertise_host = loopback ? "127.0.0.1" : host;
  c.token = facts.token;
  c.run_dir = run_dir;
  c.store_endpoint = facts.store_endpoint;
  if (const char* p = std::getenv("CXXRUN_TOP_PORT"); p != nullptr && *p != '\0') {
    char* end = nullptr;
    const long port = std::strtol(p, &end, 10);
    if (*end != '\0' || port < 0 || port > 65535) {
      say("CXXRUN_TOP_PORT='" + std::string(p) + "' is not a port; ncclrec-top is not served");
      return nullptr;
    }
    c.port = static_cast<int>(port);
  }
  auto server = TopServer::start(c);
  if (!server.ok()) {
    say(server.status().message() + "; ncclrec-top --connect is not served (the job runs on)");
    return nullptr;
  }
  // The token goes in a file only its owner reads; the line on stderr names the file.
  std::error_code ec;
  fs::create_directories(run_dir, ec);
  const std::string file = run_dir + "/top." + host + ".endpoint";
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const std::string text = "endpoint=" + (*server)->endpoint() + "\ntoken=" + facts.token + "\n";
  const bool written = fd >= 0 && ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  if (fd >= 0) ::close(fd);
  if (written) (*server)->removeOnStop(file);
  say("ncclrec-top --connect " + (*server)->endpoint() +
      (written ? " --token-file " + file : " (token: CXXRUN_TOKEN; cannot write " + file + ")"));
  return std::move(server).value();
}

}  // namespace ncclrec::launcher
