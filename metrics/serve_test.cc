#include "metrics/serve.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "format/params_table.h"
#include "format/testing/temp_dir.h"
#include "metrics/node_metrics.h"

namespace ncclrec::metrics {
namespace {

using format::testing::TempDir;

class ServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& p : format::allParams()) unsetenv(std::string(p.name).c_str());
  }
  void TearDown() override { SetUp(); }
};

// The whole answer to "GET `path`" on 127.0.0.1:`port`, "" when it cannot connect.
std::string httpGet(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return "";
  }
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  (void)!::write(fd, req.data(), req.size());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) out.append(buf, size_t(n));
  ::close(fd);
  return out;
}

std::shared_ptr<Exporter> emptyDirExporter(const std::string& dir) {
  ExporterOptions o;
  o.dir = dir;
  o.job_id = "job9";
  return std::make_shared<Exporter>(o);
}

TEST_F(ServeTest, ParsesOffPortAndAddressPort) {
  EXPECT_FALSE(parseListen("off")->has_value());
  EXPECT_FALSE(parseListen("")->has_value());
  auto l = parseListen("9464");
  ASSERT_TRUE(l.ok() && l->has_value());
  EXPECT_EQ((*l)->text(), "0.0.0.0:9464");
  l = parseListen("127.0.0.1:0");
  ASSERT_TRUE(l.ok() && l->has_value());
  EXPECT_EQ((*l)->addr, "127.0.0.1");
  EXPECT_EQ((*l)->port, 0);
  l = parseListen("[::1]:9464");
  ASSERT_TRUE(l.ok() && l->has_value());
  EXPECT_EQ((*l)->addr, "[::1]");
  for (const char* bad : {"on", "70000", ":9464", "host:", "12ab", "-1", "123456"}) {
    const auto r = parseListen(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message(), "NCCLREC_METRICS_PORT='" + std::string(bad) +
                                        "' is not off, PORT or ADDR:PORT (PORT 0-65535)");
  }
}

TEST_F(ServeTest, TheKnobsComeFromTheEnvironment) {
  auto c = configFromEnvironment("ncclrec_r.prom");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->enabled());  // off by default
  EXPECT_EQ(c->interval_s, 15);
  EXPECT_EQ(c->linger_s, 30);
  setenv("NCCLREC_METRICS_PORT", "127.0.0.1:9999", 1);
  setenv("NCCLREC_METRICS_TEXTFILE", "/var/lib/node_exporter", 1);
  setenv("NCCLREC_METRICS_LINGER", "0", 1);
  c = configFromEnvironment("ncclrec_r.prom");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->listen->port, 9999);
  EXPECT_EQ(c->textfile, "/var/lib/node_exporter/ncclrec_r.prom");
  EXPECT_EQ(c->linger_s, 0);
  setenv("NCCLREC_METRICS_TEXTFILE", "/tmp/x/job.prom", 1);
  EXPECT_EQ(configFromEnvironment("ncclrec_r.prom")->textfile, "/tmp/x/job.prom");
  setenv("NCCLREC_METRICS_INTERVAL", "0", 1);
  c = configFromEnvironment("ncclrec_r.prom");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "NCCLREC_METRICS_INTERVAL='0' is not a number of seconds > 0");
  EXPECT_EQ(textfileName("slurm-12.0/x y"), "ncclrec_slurm-12.0_x_y.prom");
}

TEST_F(ServeTest, ServesGetMetricsOnAFreePort) {
  TempDir dir;
  ServeConfig c;
  c.listen = Listen{"127.0.0.1", 0};
  auto server = Server::start(c, emptyDirExporter(dir.path()));
  ASSERT_TRUE(server.ok()) << server.status().message();
  const int port = (*server)->port();
  ASSERT_GT(port, 0);
  const std::string answer = httpGet(port, "/metrics");
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  EXPECT_NE(answer.find("ncclrec_job_hang_state{job_id=\"job9\",state=\"none\"} 1"),
            std::string::npos)
      << answer;
  EXPECT_EQ(httpGet(port, "/other").rfind("HTTP/1.1 404", 0), 0u);
  server->reset();
  EXPECT_EQ(httpGet(port, "/metrics"), "");  // stopped
}

TEST_F(ServeTest, APortInUseIsOneLine) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  TempDir dir;
  ServeConfig c;
  c.listen = Listen{"127.0.0.1", port};
  auto server = Server::start(c, emptyDirExporter(dir.path()));
  ::close(fd);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().message().rfind(
                "metrics endpoint 127.0.0.1:" + std::to_string(port) + ": cannot listen there", 0),
            0u)
      << server.status().message();
}

TEST_F(ServeTest, TheTextFileIsReplacedWholeAndRemovedWhenServingStops) {
  TempDir dir;
  ServeConfig c;
  c.textfile = dir.path() + "/ncclrec_job9.prom";
  c.interval_s = 3600;
  auto server = Server::start(c, emptyDirExporter(dir.path()));
  ASSERT_TRUE(server.ok()) << server.status().message();
  // The writer thread writes it at once; a second write replaces it.
  struct stat st {};
  for (int i = 0; i < 500 && ::stat(c.textfile.c_str(), &st) != 0; ++i) ::usleep(10'000);
  std::string error;
  ASSERT_TRUE((*server)->writeTextfile(&error)) << error;
  std::ifstream in(c.textfile);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("ncclrec_job_hang_state{job_id=\"job9\",state=\"none\"} 1"),
            std::string::npos);
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    files += e.is_regular_file();
  EXPECT_EQ(files, 1u);  // no temporary left behind
  server->reset();
  EXPECT_NE(::stat(c.textfile.c_str(), &st), 0);
}

TEST_F(ServeTest, ATextFileInADirectoryThatIsNotThereIsOneLine) {
  TempDir dir;
  ServeConfig c;
  c.textfile = dir.path() + "/missing/ncclrec_job9.prom";
  auto server = Server::start(c, emptyDirExporter(dir.path()));
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().message(),
            "NCCLREC_METRICS_TEXTFILE: " + dir.path() + "/missing/: not a directory");
}

TEST_F(ServeTest, NodeMetricsAreOffUnlessAsked) {
  TempDir dir;
  EXPECT_EQ(NodeMetrics::start("cxxrun", dir.path(), "r1"), nullptr);
  setenv("NCCLREC_METRICS_PORT", "127.0.0.1:0", 1);
  setenv("NCCLREC_METRICS_LINGER", "0.2", 1);
  auto m = NodeMetrics::start("cxxrun", dir.path(), "r1");
  ASSERT_NE(m, nullptr);
  EXPECT_NE(httpGet(m->port(), "/metrics").find("job_id=\"r1\""), std::string::npos);
  // The linger ends at its time, or at once when the signal descriptor is readable.
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  (void)!::write(p[1], "x", 1);
  m->linger(p[0]);
  ::close(p[0]);
  ::close(p[1]);
  setenv("NCCLREC_METRICS_PORT", "nonsense", 1);
  EXPECT_EQ(NodeMetrics::start("cxxrun", dir.path(), "r1"), nullptr);
}

TEST_F(ServeTest, EndpointUrlNamesThisHostForEveryInterface) {
  EXPECT_EQ(endpointUrl(Listen{"127.0.0.1", 9}, 9464), "http://127.0.0.1:9464/metrics");
  EXPECT_NE(endpointUrl(Listen{"0.0.0.0", 0}, 9464).find(":9464/metrics"), std::string::npos);
}

}  // namespace
}  // namespace ncclrec::metrics
