#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "launcher/agent_internal.h"
#include "launcher/gather.h"
#include "report/hang_report.h"

namespace ncclrec::launcher {

double Agent::silentFor(SilenceWatch* watch, int node) {
  auto beats = rdzv_->tryGet(heartbeatKey(node));
  if (beats.ok()) watch->observe(node, *beats, monoS());
  return watch->silentFor(node, monoS());
}

std::string Agent::nodeSilentLine(int node, double silent_s) const {
  char secs[32];
  snprintf(secs, sizeof(secs), "%.1f", silent_s);
  return "node " + std::to_string(node) + " (host " + node_hosts_[static_cast<size_t>(node)] +
         "): not heard from for " + secs + " s (its agent stopped counting at " +
         heartbeatKey(node) +
         " in the job's store: the network between it and node 0 stopped, or the node did); "
         "not waiting for its recordings";
}

bool Agent::sendRecordingsToNodeZero(const std::vector<report::WorkerInfo>& workers,
                                     double wait_s) {
  std::vector<std::string> paths;
  for (const Worker& w : workers_) {
    const std::string path = report::recordingToSend(facts_.dump_dir, w.pid, attempt_start_ns_);
    if (!path.empty()) paths.push_back(path);
  }
  const std::string prefix = jobKey("recordings/" + std::to_string(o_.node_rank) + "/");
  auto sent = sendRecordings(*rdzv_, prefix, o_.node_rank, host_, workers, paths, [this] {
    if (heartbeat_) heartbeat_->beat(monoS());
  });
  if (!sent.ok()) {
    say("cxxrun: could not send this node's recordings to node 0: " + sent.status().message() +
        "; writing this node's own report instead");
    return false;
  }
  say("cxxrun: sent " + std::to_string(paths.size()) + " recording(s) (" + std::to_string(*sent) +
      " bytes) of node " + std::to_string(o_.node_rank) + " to node 0 (host " +
      node_hosts_.front() + "), which prints the job's verdict");
  // Node 0 may still be waiting for its own ranks' dumps: this node's ranks stay until its report
  // is written, so that none of them fails a collective that node 0's ranks are stuck in.
  std::vector<int> missing;
  const std::string key = jobKey("report");
  if (waitForKeys({key}, wait_s + kSendMarginS + 5, &missing)) {
    auto where = rdzv_->tryGet(key);
    (void)rdzv_->set(jobKey("report_seen/" + std::to_string(o_.node_rank)), host_);
    if (where.ok() && where->has_value())
      say("cxxrun: the job's verdict is on node 0 (host " + node_hosts_.front() + "): " + **where);
  } else {
    say("cxxrun: node 0 (host " + node_hosts_.front() + ") did not confirm its report" +
        (node0_run_dir_.empty() ? std::string()
                                : "; look for " + node0_run_dir_ + "/attempt_" +
                                      std::to_string(attempt_) + "/report.json there"));
  }
  return true;
}

// Node 0: takes what the other nodes send until `deadline_s` (monoS), writes it under
// dump_dir/nodeN/ and adds their nodes, workers and warnings to the report's input. A node whose
// heartbeat stopped for kSilentNodeS is not waited for: node 0 can no longer hear it (counted from
// what live detection heard already: a node silent since before the hang is given up at once).
void Agent::receiveFromOtherNodes(report::HangReportInput* in, double deadline_s) {
  in->nodes.push_back({0, host_, facts_.dump_dir, 0, false});
  std::vector<int> pending, unheard;
  std::map<int, double> silent;  // the nodes given up for their silence, and for how long
  for (int r = 1; r < o_.nnodes; ++r) pending.push_back(r);
  if (!pending.empty()) {
    say("cxxrun: waiting up to " + std::to_string(static_cast<int>(deadline_s - monoS() + 0.5)) +
        " s for the recordings of the other " + std::to_string(pending.size()) +
        " node(s), less for one not heard from for " + std::to_string(int(kSilentNodeS)) + " s");
  }
  std::vector<NodeRecordings> got;
  while (!pending.empty()) {
    for (size_t i = 0; i < pending.size();) {
      const int r = pending[i];
      const std::string dir = facts_.dump_dir + "/node" + std::to_string(r);
      auto rec = receiveRecordings(*rdzv_, jobKey("recordings/" + std::to_string(r) + "/"), dir);
      if (!rec.ok()) {
        in->warnings.push_back("node " + std::to_string(r) + ": " + rec.status().message());
        if (rec.status().message().find("store ") == 0) store_lost_ = true;
        unheard.push_back(r);
      } else if (rec->has_value()) {
        NodeRecordings& n = **rec;
        n.node_rank = r;  // the key says which node; the manifest only describes it
        in->nodes.push_back({r, n.host, dir, n.files.size(), false});
        got.push_back(std::move(n));
      } else if (const double silent_s = silentFor(&silence_, r); silent_s >= kSilentNodeS) {
        // Said with the report's warnings, a moment later; the verdict may name the node.
        in->warnings.push_back(nodeSilentLine(r, silent_s));
        silent[r] = silent_s;
        unheard.push_back(r);
      } else {
        ++i;
        continue;
      }
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
    }
    if (pending.empty() || store_lost_ || stopping_ || monoS() >= deadline_s) break;
    pump(50);
  }
  unheard.insert(unheard.end(), pending.begin(), pending.end());
  for (int r : unheard) {
    const std::string& host = node_hosts_[static_cast<size_t>(r)];
    in->nodes.push_back({r, host, "", 0, true, silent.contains(r) ? silent[r] : 0});
    for (int lr = 0; lr < o_.nproc_per_node; ++lr) {
      report::WorkerInfo w;
      w.rank = r * o_.nproc_per_node + lr;
      w.local_rank = lr;
      w.node = r;
      w.host = host;
      w.no_data = true;
      in->workers.push_back(std::move(w));
    }
  }
  for (NodeRecordings& n : got) {
    for (report::WorkerInfo& w : n.workers) {
      w.node = n.node_rank;
      in->workers.push_back(std::move(w));
    }
    for (std::string& w : n.warnings) in->warnings.push_back(std::move(w));
  }
  std::sort(in->nodes.begin(), in->nodes.end(),
            [](const report::NodeInfo& a, const report::NodeInfo& b) { return a.node < b.node; });
  std::stable_sort(
      in->workers.begin(), in->workers.end(),
      [](const report::WorkerInfo& a, const report::WorkerInfo& b) { return a.rank < b.rank; });
}

void Agent::shareReport(const base::StatusOr<std::string>& path,
                        const std::vector<report::NodeInfo>& nodes) {
  (void)rdzv_->set(jobKey("report"), path.ok() ? *path : path.status().message());
  std::vector<std::string> seen;
  for (const report::NodeInfo& n : nodes)
    if (n.node != 0 && !n.no_data) seen.push_back(jobKey("report_seen/" + std::to_string(n.node)));
  std::vector<int> missing;
  (void)waitForKeys(seen, kSendMarginS, &missing);  // then the store may go away
}

}  // namespace ncclrec::launcher
