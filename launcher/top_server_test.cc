#include "launcher/top_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/clock.h"
#include "base/text.h"
#include "format/ncclrec.pb.h"
#include "format/recording_files.h"
#include "format/testing/bbox_builder.h"
#include "format/testing/temp_dir.h"
#include "launcher/store_server.h"

namespace ncclrec::launcher {
namespace {

namespace fs = std::filesystem;
using format::testing::BboxBuilder;
using format::testing::TempDir;

void writeBox(const std::string& path, int rank, int pid, int events) {
  BboxBuilder b;
  b.header()->pid = pid;
  b.header()->global_rank = rank;
  b.header()->world_size = 2;
  std::strncpy(b.header()->host, base::hostName().c_str(), sizeof(b.header()->host) - 1);
  const uint32_t sid = b.addStack({0x401000});
  for (int i = 1; i <= events; ++i) {
    format::Event e = format::testing::makeCollective(format::OpType::kAllReduce, 7, rank, 2,
                                                      uint64_t(i), 8, 1000 + i);
    e.stack_id = sid;
    b.addEvent(e);
  }
  ASSERT_TRUE(b.writeTo(path));
}

// A client speaking the wire format by hand.
class Client {
 public:
  explicit Client(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  ~Client() { close(fd_); }
  bool connected() const { return connected_; }
  void sendRaw(const std::string& bytes) { send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL); }
  void sendFrame(const std::string& body) {
    std::string f(4, '\0');
    for (int i = 0; i < 4; ++i) f[size_t(i)] = char((body.size() >> (8 * i)) & 0xff);
    sendRaw(f + body);
  }
  // The next reply; nullopt when the server closed the connection instead.
  std::optional<format::pb::TopReply> reply() {
    unsigned char len[4];
    if (recv(fd_, len, 4, MSG_WAITALL) != 4) return std::nullopt;
    const uint32_t n = len[0] | len[1] << 8 | len[2] << 16 | uint32_t(len[3]) << 24;
    std::string body(n, '\0');
    if (n > 0 && recv(fd_, body.data(), n, MSG_WAITALL) != ssize_t(n)) return std::nullopt;
    format::pb::TopReply r;
    if (!r.ParseFromString(body)) return std::nullopt;
    return r;
  }
  std::optional<format::pb::TopReply> ask(const std::string& token, uint32_t max_events = 0,
                                          bool ask_snapshot = false) {
    format::pb::TopRequest req;
    req.set_token(token);
    req.set_max_events(max_events);
    req.set_ask_snapshot(ask_snapshot);
    sendFrame(req.SerializeAsString());
    return reply();
  }
  bool closedByServer() {
    char c;
    return recv(fd_, &c, 1, 0) == 0;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

std::unique_ptr<TopServer> startServer(const std::string& run_dir, const std::string& store = "") {
  TopServer::Config c;
  c.bind_addr = "127.0.0.1";
  c.advertise_host = "127.0.0.1";
  c.token = "tok";
  c.run_dir = run_dir;
  c.store_endpoint = store;
  auto s = TopServer::start(c);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::move(s).value() : nullptr;
}

TEST(TopServer, ServesTheNewestAttemptsBlackBoxesTrimmed) {
  TempDir dir;
  fs::create_directories(dir.file("run/attempt_0"));
  fs::create_directories(dir.file("run/attempt_1"));
  writeBox(dir.file("run/attempt_0/h.1.bbox"), 0, 1, 3);
  writeBox(dir.file("run/attempt_1/h.2.bbox"), 0, getpid(), 5);
  writeBox(dir.file("run/attempt_1/h.3.bbox"), 1, getpid(), 5);
  std::ofstream(dir.file("run/attempt_1/junk.bbox")) << "not one";
  auto server = startServer(dir.file("run"));
  ASSERT_NE(server, nullptr);
  Client c(server->port());
  ASSERT_TRUE(c.connected());
  auto r = c.ask("tok", 2);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->error(), "");
  EXPECT_EQ(r->dir(), dir.file("run/attempt_1"));
  EXPECT_EQ(r->run_id(), "run");
  EXPECT_EQ(r->host(), base::hostName());
  EXPECT_GT(r->now_ns(), 0);
  ASSERT_EQ(r->ranks_size(), 2);
  EXPECT_EQ(r->ranks(0).source(), dir.file("run/attempt_1/h.2.bbox"));
  EXPECT_FALSE(r->ranks(0).process_gone());  // this test's own pid
  const auto& d = r->ranks(0).data();
  ASSERT_EQ(d.events_size(), 2);
  EXPECT_EQ(d.events(1).op_seq(), 5u);
  EXPECT_EQ(d.events_total(), 5u);
  EXPECT_EQ(d.stacks_size(), 1);
  ASSERT_EQ(r->warnings_size(), 1);
  EXPECT_NE(r->warnings(0).find("junk.bbox"), std::string::npos);
  EXPECT_EQ(r->peers_size(), 0);
  // The same connection serves more requests; within the cache period the files are not read
  // again.
  ASSERT_TRUE(c.ask("tok", 2));
  EXPECT_EQ(server->stats().reads, 1u);
  EXPECT_EQ(server->stats().requests, 2u);
}

TEST(TopServer, ASnapshotRequestIsPassedToTheRanksOfTheNewestAttempt) {
  TempDir dir;
  fs::create_directories(dir.file("run/attempt_0"));
  writeBox(dir.file("run/attempt_0/h.2.bbox"), 0, getpid(), 5);
  auto server = startServer(dir.file("run"));
  ASSERT_NE(server, nullptr);
  Client c(server->port());
  ASSERT_TRUE(c.connected());
  // A plain request asks nothing.
  auto plain = c.ask("tok", 2);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->snapshot_asked(), "");
  const std::string request =
      dir.file("run/attempt_0/" + std::string(format::kSnapshotRequestFileName));
  EXPECT_FALSE(fs::exists(request));
  auto asked = c.ask("tok", 2, /*ask_snapshot=*/true);
  ASSERT_TRUE(asked);
  EXPECT_EQ(asked->snapshot_asked(),
            "asked the ranks of " + dir.file("run/attempt_0") + " for a thread snapshot");
  ASSERT_EQ(asked->ranks_size(), 1);  // the reply itself is as before
  std::ifstream in(request);
  std::stringstream text;
  text << in.rdbuf();
  const format::TriggerFile written = format::TriggerFile::parse(text.str());
  EXPECT_EQ(written.reason, format::kSnapshotReason);
  EXPECT_EQ(written.run_id, "run");
  EXPECT_EQ(written.pid, getpid());
  // Never the trigger file: the agent itself would take it for a hang.
  EXPECT_FALSE(fs::exists(dir.file("run/attempt_0/" + std::string(format::kTriggerFileName))));
}

TEST(TopServer, AWrongTokenIsRefusedAndTheConnectionClosed) {
  TempDir dir;
  auto server = startServer(dir.path());
  Client c(server->port());
  auto r = c.ask("guess");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->error(), "wrong job token");
  EXPECT_EQ(r->ranks_size(), 0);
  EXPECT_TRUE(c.closedByServer());
  EXPECT_EQ(server->stats().refused, 1u);
  // Others are served meanwhile.
  Client good(server->port());
  EXPECT_EQ(good.ask("tok")->error(), "");
}

TEST(TopServer, AnOversizeOrUndecodableRequestIsDropped) {
  TempDir dir;
  auto server = startServer(dir.path());
  Client big(server->port());
  big.sendRaw(std::string("\xff\xff\xff\x7f", 4));
  EXPECT_TRUE(big.closedByServer());
  Client garbage(server->port());
  garbage.sendFrame("\xff\xff\xff");
  auto r = garbage.reply();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->error(), "request does not decode");
  EXPECT_EQ(server->stats().refused, 2u);
}

TEST(TopServer, TellsWhichProcessesAreGone) {
  TempDir dir;
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  writeBox(dir.file("h.1.bbox"), 0, child, 1);
  auto server = startServer(dir.path());
  Client c(server->port());
  auto r = c.ask("tok");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->ranks_size(), 1);
  EXPECT_TRUE(r->ranks(0).process_gone());
}

TEST(TopServer, AgentsFindEachOtherThroughTheStore) {
  TempDir a, b;
  auto store = StoreServer::start("127.0.0.1", 0, "tok");
  ASSERT_TRUE(store.ok()) << store.status().message();
  const std::string endpoint = "127.0.0.1:" + std::to_string((*store)->port());
  auto sa = startServer(a.path(), endpoint);
  auto sb = startServer(b.path(), endpoint);
  Client cb(sb->port());
  ASSERT_TRUE(cb.ask("tok"));  // b registers
  Client ca(sa->port());
  auto r = ca.ask("tok");  // a registers and lists b, not itself
  ASSERT_TRUE(r);
  ASSERT_EQ(r->peers_size(), 1);
  EXPECT_EQ(r->peers(0), sb->endpoint());
}

TEST(TopServer, StartTopServerWritesTheEndpointFileAndItsTokenWorks) {
  TempDir dir;
  Options o;
  JobFacts f;
  f.token = "job-token";
  unsetenv("CXXRUN_TOP_PORT");
  auto server = startTopServer(o, f, dir.file("run"), "myhost");
  ASSERT_NE(server, nullptr);
  const std::string file = dir.file("run/top.myhost.endpoint");
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "endpoint=127.0.0.1:" + std::to_string(server->port()) + "\ntoken=job-token\n");
  EXPECT_EQ(fs::status(file).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  Client c(server->port());
  EXPECT_EQ(c.ask("job-token")->error(), "");

  server.reset();
  EXPECT_FALSE(fs::exists(file));  // names a live server only

  setenv("CXXRUN_TOP_PORT", "nope", 1);
  EXPECT_EQ(startTopServer(o, f, dir.file("run"), "myhost"), nullptr);
  unsetenv("CXXRUN_TOP_PORT");
}

}  // namespace
}  // namespace ncclrec::launcher
