#include "metrics/serve.h"

#include <prometheus/exposer.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

#include "format/params_table.h"

namespace ncclrec::metrics {
namespace {

// A client that sends its request slowly holds one of the endpoint's threads this long at most.
constexpr const char* kRequestTimeoutMs = "5000";
constexpr const char* kThreads = "2";

bool parsePort(std::string_view text, int* port) {
  if (text.empty() || text.size() > 5) return false;
  int v = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v > 65535) return false;
  *port = v;
  return true;
}

base::StatusOr<double> seconds(const char* name, bool zero_ok) {
  const std::string v = format::paramValue(name);
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(d) || d < 0 || (!zero_ok && d == 0)) {
    return base::Status::error(std::string(name) + "='" + v + "' is not a number of seconds" +
                               (zero_ok ? " >= 0" : " > 0"));
  }
  return d;
}

void say(const std::string& line) {
  const std::string text = line + "\n";
  (void)!::write(STDERR_FILENO, text.data(), text.size());
}

}  // namespace

base::StatusOr<std::optional<Listen>> parseListen(std::string_view text) {
  if (text.empty() || text == "off") return std::optional<Listen>();
  Listen l;
  const size_t colon = text.rfind(':');
  std::string_view port = text;
  if (colon != std::string_view::npos) {
    l.addr = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
  }
  // IPv6 addresses in brackets ("[::1]:9464") are passed to the server as they are.
  if (!parsePort(port, &l.port) || (colon != std::string_view::npos && l.addr.empty())) {
    return base::Status::error("NCCLREC_METRICS_PORT='" + std::string(text) +
                               "' is not off, PORT or ADDR:PORT (PORT 0-65535)");
  }
  return std::optional<Listen>(l);
}

std::string textfileName(const std::string& id) {
  std::string safe = id;
  for (char& c : safe) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok) c = '_';
  }
  return "ncclrec_" + safe + ".prom";
}

std::string textfilePath(const std::string& value, const std::string& file_name) {
  if (value.empty() || (value.size() > 5 && value.ends_with(".prom"))) return value;
  return value + "/" + file_name;
}

base::StatusOr<ServeConfig> configFromEnvironment(const std::string& file_name) {
  ServeConfig c;
  NCCLREC_ASSIGN_OR_RETURN(c.listen, parseListen(format::paramValue("NCCLREC_METRICS_PORT")));
  c.textfile = textfilePath(format::paramValue("NCCLREC_METRICS_TEXTFILE"), file_name);
  NCCLREC_ASSIGN_OR_RETURN(c.interval_s, seconds("NCCLREC_METRICS_INTERVAL", false));
  NCCLREC_ASSIGN_OR_RETURN(c.linger_s, seconds("NCCLREC_METRICS_LINGER", true));
  return c;
}

Server::Server(ServeConfig config, std::shared_ptr<Exporter> exporter)
    : config_(std::move(config)), exporter_(std::move(exporter)) {}

base::StatusOr<std::unique_ptr<Server>> Server::start(const ServeConfig& config,
                                                      std::shared_ptr<Exporter> exporter) {
  std::unique_ptr<Server> s(new Server(config, std::move(exporter)));
  if (!config.textfile.empty()) {
    const size_t slash = config.textfile.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : config.textfile.substr(0, slash + 1);
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return base::Status::error("NCCLREC_METRICS_TEXTFILE: " + dir + ": not a directory");
    }
  }
  if (config.listen) {
    try {
      s->exposer_ = std::make_unique<prometheus::Exposer>(
          std::vector<std::string>{"listening_ports", config.listen->text(), "num_threads",
                                   kThreads, "request_timeout_ms", kRequestTimeoutMs});
      s->exposer_->RegisterCollectable(s->exporter_);
      const std::vector<int> ports = s->exposer_->GetListeningPorts();
      s->port_ = ports.empty() ? config.listen->port : ports.front();
    } catch (const std::exception& e) {
      return base::Status::error("metrics endpoint " + config.listen->text() +
                                 ": cannot listen there (in use, or not an address of this "
                                 "host): " +
                                 e.what());
    }
  }
  if (!config.textfile.empty()) s->writer_ = std::thread([p = s.get()] { p->writerLoop(); });
  return s;
}

Server::~Server() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (writer_.joinable()) writer_.join();
  exposer_.reset();  // joins the endpoint's threads
  // The file says what is true now: once nobody keeps it current it would lie.
  if (!config_.textfile.empty()) ::unlink(config_.textfile.c_str());
}

bool Server::writeTextfile(std::string* error) {
  std::lock_guard<std::mutex> lock(write_mu_);
  const std::string text = toText(exporter_->Collect());
  const std::string& path = config_.textfile;
  // node_exporter reads *.prom only: the temporary name is never read half-written.
  const size_t slash = path.rfind('/');
  const std::string tmp = (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) +
                          "." + path.substr(slash + 1) + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    *error = tmp + ": " + std::strerror(errno);
    return false;
  }
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

void Server::writerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    std::string error;
    if (!writeTextfile(&error) && !said_write_error_) {
      said_write_error_ = true;
      say(config_.tool + ": metrics text file: " + error + " (said once)");
    }
    lock.lock();
    wake_.wait_for(lock, std::chrono::duration<double>(config_.interval_s), [&] { return stop_; });
  }
}

}  // namespace ncclrec::metrics
