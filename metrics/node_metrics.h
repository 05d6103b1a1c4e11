// A launcher's metrics of its node (cxxrun's agent): an Exporter over the job's directory, served
// as the NCCLREC_METRICS_* knobs say (serve.h), for as long as the object lives. After a job that
// hung or failed it can stay a little longer (linger), so that a scrape every 15 s still sees how
// the job ended.
#pragma once

#include <memory>
#include <string>

#include "metrics/serve.h"

namespace ncclrec::metrics {

class NodeMetrics {
 public:
  // `dir`: the job's black boxes (cxxrun: NCCLREC_DIR/<run id>, whose newest attempt is read);
  // `run_id`: the job id before any rank recorded, and the text file's name. nullptr when the
  // knobs turn metrics off; nullptr after one line on stderr ("<tool>: ...") when a knob is wrong
  // or the endpoint cannot start: the job runs on without metrics. Says where it serves.
  static std::unique_ptr<NodeMetrics> start(const std::string& tool, const std::string& dir,
                                            const std::string& run_id);

  // Keeps serving for NCCLREC_METRICS_LINGER seconds, or until `signal_fd` (the launcher's
  // signalfd) becomes readable; says so first. Nothing when the linger is 0.
  void linger(int signal_fd) const;

  int port() const { return server_->port(); }

 private:
  NodeMetrics(ServeConfig config, std::unique_ptr<Server> server)
      : config_(std::move(config)), server_(std::move(server)) {}
  ServeConfig config_;
  std::unique_ptr<Server> server_;
};

// "http://HOST:PORT/metrics" of an endpoint listening on `listen` and bound to `port`: this
// host's name when it listens on every interface.
std::string endpointUrl(const Listen& listen, int port);

}  // namespace ncclrec::metrics
