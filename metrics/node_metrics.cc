#include "metrics/node_metrics.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "base/text.h"

namespace ncclrec::metrics {
namespace {

void say(const std::string& line) {
  const std::string text = line + "\n";
  (void)!::write(STDERR_FILENO, text.data(), text.size());
}

}  // namespace

std::string endpointUrl(const Listen& listen, int port) {
  const bool any = listen.addr == "0.0.0.0" || listen.addr == "[::]";
  return "http://" + (any ? base::hostName() : listen.addr) + ":" + std::to_string(port) +
         "/metrics";
}

std::unique_ptr<NodeMetrics> NodeMetrics::start(const std::string& tool, const std::string& dir,
                                                const std::string& run_id) {
  auto config = configFromEnvironment(textfileName(run_id));
  if (!config.ok()) {
    say(tool + ": " + config.status().message() + "; no metrics");
    return nullptr;
  }
  if (!config->enabled()) return nullptr;
  config->tool = tool;
  std::string problem;
  ExporterOptions options;
  options.dir = dir;
  options.job_id = run_id;
  options.params = live::DetectorParams::fromEnvironment(&problem);  // said by the supervisor
  auto server = Server::start(*config, std::make_shared<Exporter>(options));
  if (!server.ok()) {
    say(tool + ": " + server.status().message() + "; the job runs without metrics");
    return nullptr;
  }
  std::string where;
  if (config->listen) where = endpointUrl(*config->listen, (*server)->port());
  if (!config->textfile.empty()) where += (where.empty() ? "" : " and ") + config->textfile;
  say(tool + ": metrics of this node's ranks on " + where + " (docs/metrics.md)");
  return std::unique_ptr<NodeMetrics>(new NodeMetrics(*config, std::move(server).value()));
}

void NodeMetrics::linger(int signal_fd) const {
  if (!(config_.linger_s > 0)) return;
  say(config_.tool + ": serving the job's last metrics for " +
      std::to_string(static_cast<int>(std::ceil(config_.linger_s))) +
      " s more (NCCLREC_METRICS_LINGER; Ctrl-C ends it)");
  pollfd p{signal_fd, POLLIN, 0};
  (void)::poll(&p, signal_fd >= 0 ? 1 : 0,
               static_cast<int>(std::min(config_.linger_s, 86400.0) * 1000));
}

}  // namespace ncclrec::metrics
