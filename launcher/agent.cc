#include "launcher/agent.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <utility>

#include "launcher/agent_internal.h"
#include "launcher/local_address.h"
#include "launcher/store_server.h"
#include "launcher/token.h"
#include "launcher/top_server.h"
#include "launcher/worker_env.h"
#include "metrics/node_metrics.h"

namespace ncclrec::launcher {

int Agent::run() {
  if (const int rc = start(); rc != kExitOk) return rc;
  // ncclrec-top --connect: this node's black boxes, served until run() returns (top_server.h).
  const auto top_server = startTopServer(o_, facts_, run_dir_, host_);
  shareTopEndpoint(top_server != nullptr ? top_server->port() : 0);
  // Prometheus metrics of this node's ranks, when NCCLREC_METRICS_* ask for them
  // (metrics/node_metrics.h): served until run() returns, a little longer after a hang or a
  // failure so that a scrape sees how the job ended.
  const auto metrics = metrics::NodeMetrics::start("cxxrun", run_dir_, facts_.run_id);
  const int rc = runAttempts();
  if (metrics != nullptr && (rc == kExitHang || rc == kExitWorkerFailed)) metrics->linger(sigfd_);
  return rc;
}

int Agent::start() {
  if (const int rc = openSignals(); rc != kExitOk) return rc;
  const int gpus = visibleGpus();
  facts_.nccl = selectNccl(o_.nccl, gpus, findHostNcclDir(exe_));
  say(facts_.nccl.message);
  if (!facts_.nccl.ok) return kExitUsage;

  facts_.run_id = o_.run_id;
  if (multi() && facts_.run_id.empty()) {
    say("cxxrun: a job of " + std::to_string(o_.nnodes) +
        " nodes needs the same --run-id (or --rdzv-id) on every node");
    return kExitUsage;
  }
  if (facts_.run_id.empty()) facts_.run_id = newRunId();
  auto token = jobToken(multi(), facts_.run_id, std::getenv("CXXRUN_TOKEN"), o_.rdzv_token_file);
  if (!token.ok()) {
    say(token.status().message());
    return kExitUsage;
  }
  facts_.token = *token;
  std::error_code ec;
  run_dir_ =
      std::filesystem::absolute(format::paramValue("NCCLREC_DIR"), ec).lexically_normal().string() +
      "/" + facts_.run_id;

  bool hosting = false;
  if (const int rc = startStore(&hosting); rc != kExitOk) return rc;
  const std::string addr = o_.master_addr == "localhost" ? "127.0.0.1" : o_.master_addr;
  facts_.store_endpoint = addr + ":" + std::to_string(hosting ? store_->port() : o_.master_port);
  return multi() ? rendezvous(hosting) : kExitOk;
}

int Agent::openSignals() {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGCHLD);
  // Blocked before the store's thread exists, so that every thread inherits the mask and the
  // signals reach only the signalfd.
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  signal(SIGPIPE, SIG_IGN);
  sigfd_ = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd_ < 0) {
    say(std::string("cxxrun: signalfd: ") + strerror(errno));
    return kExitUsage;
  }
  return kExitOk;
}

// "cxxrun-YYYYmmdd-HHMMSS-PID" when no --run-id was given.
std::string Agent::newRunId() const {
  char buf[64];
  const time_t t = time(nullptr);
  tm tm{};
  localtime_r(&t, &tm);
  strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
  return std::string("cxxrun-") + buf + "-" + std::to_string(getpid());
}

// The store lives with node rank 0; an agent without a node rank on the master address's machine
// hosts it if it can bind the port, else joins whoever does. *hosting: this agent serves it.
int Agent::startStore(bool* hosting) {
  *hosting = !multi() || o_.node_rank == 0 || (o_.node_rank < 0 && isLocalAddress(o_.master_addr));
  if (!*hosting) return kExitOk;
  bool in_use = false;
  auto store = StoreServer::start(isLoopback(o_.master_addr) ? "127.0.0.1" : "0.0.0.0",
                                  o_.master_port, facts_.token, &in_use);
  if (store.ok()) {
    store_ = std::move(store).value();
  } else if (in_use && multi() && o_.node_rank < 0) {
    *hosting = false;
  } else if (in_use) {
    say("cxxrun: port " + std::to_string(o_.master_port) +
        " is in use (another job?): use --master-port 0 or another port");
    return kExitUsage;
  } else {
    say("cxxrun: " + store.status().message());
    return kExitUsage;
  }
  return kExitOk;
}

int runAgent(const Options& options, const std::string& exe_path) {
  Agent agent(options, exe_path);
  return agent.run();
}

}  // namespace ncclrec::launcher
