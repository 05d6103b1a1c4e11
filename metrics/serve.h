// Serving an Exporter's metrics: the HTTP endpoint Prometheus scrapes (prometheus-cpp's Exposer:
// GET /metrics on its own threads, civetweb underneath) and the text file node_exporter's textfile
// collector reads (rewritten every interval on a thread of its own, through a temporary file and
// a rename, so a reader never sees half of it; removed when serving stops). Nothing here runs in
// the recorded processes: the ranks never wait for a scrape.
//
// The knobs (format/params_table.h, docs/metrics.md):
//   NCCLREC_METRICS_PORT      off | PORT | ADDR:PORT (PORT alone: every interface; 0: a free port)
//   NCCLREC_METRICS_TEXTFILE  "" | a directory (the file is named by the caller) | a *.prom path
//   NCCLREC_METRICS_INTERVAL  seconds between two writes of the text file
//   NCCLREC_METRICS_LINGER    seconds cxxrun keeps serving after a job that hung or failed
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "base/status.h"
#include "metrics/exporter.h"

namespace prometheus {
class Exposer;
}

namespace ncclrec::metrics {

struct Listen {
  std::string addr = "0.0.0.0";
  int port = 0;
  std::string text() const { return addr + ":" + std::to_string(port); }
};

// NCCLREC_METRICS_PORT's value: nullopt for "off" (or empty); an error naming the variable for
// anything that is not PORT or ADDR:PORT with PORT in 0-65535.
base::StatusOr<std::optional<Listen>> parseListen(std::string_view text);

struct ServeConfig {
  std::optional<Listen> listen;  // none: no HTTP endpoint
  std::string textfile;          // the file's path; "" = none
  double interval_s = 15;
  double linger_s = 30;
  std::string tool = "ncclrec";  // what its lines on stderr start with
  bool enabled() const { return listen.has_value() || !textfile.empty(); }
};

// The knobs from the environment. `file_name` names the text file when NCCLREC_METRICS_TEXTFILE
// is a directory ("ncclrec_<run id>.prom": characters other than [A-Za-z0-9_.-] become '_').
base::StatusOr<ServeConfig> configFromEnvironment(const std::string& file_name);
// "ncclrec_" + `id` made safe for a file name + ".prom".
std::string textfileName(const std::string& id);
// The text file a NCCLREC_METRICS_TEXTFILE value names: itself when it ends in ".prom", else
// `file_name` in that directory; "" for "".
std::string textfilePath(const std::string& value, const std::string& file_name);

class Server {
 public:
  // Starts the endpoint and the text file's writer. Fails, in one line, when the address cannot
  // be listened on or the text file's directory does not exist.
  static base::StatusOr<std::unique_ptr<Server>> start(const ServeConfig& config,
                                                       std::shared_ptr<Exporter> exporter);
  ~Server();  // stops both; removes the text file
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The port the endpoint listens on (the free one picked for port 0); 0 without an endpoint.
  int port() const { return port_; }
  // Writes the text file now (also done every interval). False, with *error, when it cannot.
  bool writeTextfile(std::string* error);

 private:
  Server(ServeConfig config, std::shared_ptr<Exporter> exporter);
  void writerLoop();

  ServeConfig config_;
  std::shared_ptr<Exporter> exporter_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
  std::mutex write_mu_;  // one write of the text file at a time (the writer thread, a caller)
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;  // guarded by mu_
  bool said_write_error_ = false;
  std::thread writer_;
};

}  // namespace ncclrec::metrics
