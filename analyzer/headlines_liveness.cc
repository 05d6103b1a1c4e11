#include "analyzer/headlines_liveness.h"

#include "analyzer/phrases.h"

namespace ncclrec::analyzer {
namespace {

// "ranks 0-2 wait", "rank 1 waits".
std::string waitVerb(const std::vector<int>& ranks) {
  return ranksWord(ranks) + (ranks.size() == 1 ? " waits" : " wait");
}

// "ncclAllReduce #6".
std::string opAndSeq(const Verdict& v) {
  return std::string(format::opName(v.op)) + " #" + std::to_string(v.seq);
}

// What the stalled connections have in common: "the network path a -> b", "the network between
// a and b" (both directions stalled), "the path between the two processes on host a", or the
// hosts involved when the connections span several pairs.
std::string suspectPath(const std::set<std::pair<std::string, std::string>>& paths) {
  const auto& [a, b] = *paths.begin();
  if (paths.size() == 1) {
    if (a.empty() || b.empty()) return "the path between them (their hosts are not recorded)";
    if (a == b) return "the path between the two processes on host " + a;
    return "the network path " + a + " -> " + b;
  }
  if (paths.size() == 2 && paths.count({b, a}) != 0 && a != b) {
    return "the network between " + a + " and " + b + " (both directions stalled)";
  }
  std::set<std::string> hosts;
  for (const auto& [x, y] : paths) {
    hosts.insert(x);
    hosts.insert(y);
  }
  std::string list;
  for (const std::string& h : hosts) list += (list.empty() ? "" : ", ") + h;
  return "the network of hosts " + list;
}

// "the GPU of rank 3 (host vm, bus 0000:3b:00.0)".
std::string gpuPhrase(const Gpu& g) {
  std::string where = g.rank.host.empty() ? "" : "host " + g.rank.host;
  where += g.bus_id.empty() ? std::string(where.empty() ? "" : "; ") + "its bus id is not recorded"
                            : (where.empty() ? "" : ", ") + std::string("bus ") + g.bus_id;
  return "the GPU of rank " + std::to_string(g.rank.rank) + " (" + where + ")";
}

// "device 0 (bus 0000:1a:00.0)", "one GPU (bus ...; device 0-1 in their own numbering, ...)".
std::string sharedGpuPhrase(const SharedGpu& g) {
  if (g.ordinals.size() == 1 && *g.ordinals.begin() >= 0) {
    return "device " + std::to_string(*g.ordinals.begin()) +
           (g.id.empty() ? "" : " (" + g.id + ")");
  }
  const std::vector<int> numbers(g.ordinals.begin(), g.ordinals.end());
  return "one GPU (" + g.id + "; device " + formatRanks(numbers) +
         " in their own numbering, through CUDA_VISIBLE_DEVICES)";
}

}  // namespace

bool NotRunning::said() const {
  const bool stopped = process_state == 'T' || process_state == 't' || process_state == 'D';
  return stopped || thread != 0 || silent_ns >= 0;
}

std::string notRunningPhrase(const NotRunning& n) {
  std::string why;
  switch (n.process_state) {
    case 'T':
      why = "its process is stopped (SIGSTOP, a debugger or a job-control stop)";
      break;
    case 't':
      why = "its process is stopped by a debugger (traced)";
      break;
    case 'D':
      why = "its process is in uninterruptible sleep" +
            (n.wchan.empty() ? std::string(" in the kernel") : " in " + n.wchan) +
            " (a device, a driver or a filesystem that does not answer)";
      break;
    default:
      if (n.thread != 0) {
        why = "its thread that calls NCCL (" + std::to_string(n.thread) +
              ") was in uninterruptible sleep" + (n.wchan.empty() ? "" : " in " + n.wchan) +
              " when it dumped";
      }
  }
  if (n.silent_ns >= 0) {
    why += (why.empty() ? "" : ", ") + std::string("no heartbeat for ") + seconds(n.silent_ns) +
           " and no dump";
    if (n.process_state == 0) why += " (frozen or killed: no launcher saw its process)";
  }
  return why;
}

std::string stoppedInsideHeadline(const Verdict& v, const NotRunning& why) {
  return ranksWord(v.ranks) + " stopped running inside " + opAndSeq(v) + " on comm " +
         shortCommId(v.comm_id) + " from " + describeCallSite(v.site) +
         ", which every rank issued with the same arguments: " + notRunningPhrase(why) + "; " +
         waitVerb(v.waiting) + " for it in #" + std::to_string(v.seq);
}

std::string rankHostPhrase(const RankHost& r) {
  return "rank " + std::to_string(r.rank) + (r.host.empty() ? "" : " (host " + r.host + ")");
}

std::string transportStalledHeadline(const Verdict& v, const TransportStall& s) {
  const std::string from = "rank " + std::to_string(s.from.rank);
  const std::string to = "rank " + std::to_string(s.to.rank);
  std::string h = "data stopped moving between " + rankHostPhrase(s.from) + " and " +
                  rankHostPhrase(s.to) + " inside " + opAndSeq(v) + " on comm " +
                  shortCommId(v.comm_id) + " from " + describeCallSite(v.site) +
                  (!s.straddle ? ", which every rank issued with the same arguments: "
                               : " (the ranks that got all their data are in the next one): ") +
                  from + " sent " + std::to_string(s.lost) + (s.lost == 1 ? " step" : " steps") +
                  " on channel " + std::to_string(s.channel) + " that " + to +
                  " never received (its last send at " + clockTime(s.last_sent_ns) + "); " + to;
  if (s.op_steps > 0) {
    h += " has " + std::to_string(s.op_received) + " of the " + std::to_string(s.op_steps) +
         " steps of #" + std::to_string(v.seq) + " and";
  }
  h += " received nothing for " + seconds(s.quiet_ns);
  if (s.more > 0) {
    h += "; " + std::to_string(s.more) + " more connection" + (s.more > 1 ? "s" : "") +
         " stalled so";
  }
  if (!v.waiting.empty()) h += "; " + waitVerb(v.waiting) + " behind it";
  return h + "; suspect " + suspectPath(s.paths);
}

std::string deviceStalledHeadline(const Verdict& v, const DeviceStall& s) {
  std::string gpus;
  for (const Gpu& g : s.gpus) gpus += (gpus.empty() ? "" : " and ") + gpuPhrase(g);
  const bool one = s.gpus.size() == 1;
  const std::string kernel = "the kernel of " + opAndSeq(v) + " on comm " + shortCommId(v.comm_id) +
                             " from " + describeCallSite(v.site);
  const std::string suspect =
      "; suspect " + std::string(one ? "that GPU or its" : "those GPUs or their") +
      " stream: a kernel queued before it that does not end, or a GPU that stopped "
      "(Xid errors in the kernel log)";
  switch (s.how) {
    case DeviceStall::How::kQueuedBehind:
      return gpus + " never started " + kernel + ", issued " + seconds(s.ago_ns) +
             " ago: " + (one ? "it runs" : "they run") +
             " no kernel channel of the communicator while " + std::to_string(s.queued) +
             " launched channels wait (ops launched behind it), and the GPUs of " +
             ranksWord(v.waiting) + " run theirs; " + waitVerb(v.waiting) + " for " +
             (one ? "it" : "them") + suspect;
    case DeviceStall::How::kNeverStarted:
      return gpus + " never started " + kernel + ", launched " + seconds(s.ago_ns) +
             " ago, while the GPUs of " + ranksWord(v.waiting) + " run theirs; " +
             waitVerb(v.waiting) + " for " + (one ? "it" : "them") + " in #" +
             std::to_string(v.seq) + suspect;
    case DeviceStall::How::kNeverFinished:
      break;
  }
  return gpus + " started " + kernel + " at " + clockTime(s.started_ns) +
         " and it never finished, though every step sent to " + (one ? "it" : "them") +
         " arrived, while " + ranksWord(v.waiting) + " finished theirs and " +
         (v.waiting.size() == 1 ? "waits" : "wait") + " in the next one; suspect " +
         (one ? "that GPU" : "those GPUs");
}

std::string deviceCollisionHeadline(const Verdict& v, const std::vector<SharedGpu>& groups) {
  std::string h;
  for (const SharedGpu& g : groups) {
    h += (h.empty() ? "" : "; ") + ranksWord(g.ranks) + " on host " + g.host +
         (g.ranks.size() == 2 ? " both use " : " all use ") + sharedGpuPhrase(g);
  }
  return h + ": " + std::string(format::opName(v.op)) + " on comm " + shortCommId(v.comm_id) +
         " from " + describeCallSite(v.site) +
         " was refused as invalid usage (NCCL: \"Duplicate GPU detected\"); set the device "
         "from LOCAL_RANK before creating the communicator";
}

std::string nodeUnreachableHeadline(const Verdict& v, const Unreachable& u) {
  std::string nodes;
  for (const SilentNodeRanks& n : u.nodes) {
    nodes += std::string(nodes.empty() ? "" : ", ") + "node " + std::to_string(n.node) + " (host " +
             n.host + ", " + ranksWord(n.ranks) + ") not heard from for " +
             spacedSeconds(n.silent_s);
  }
  std::string through;
  if (!u.ahead.empty()) {
    through = " (" + ranksWord(u.ahead) + " got through it and " +
              (u.ahead.size() == 1 ? "waits" : "wait") + " in #" + std::to_string(v.seq + 1) + ")";
  }
  const bool one = u.nodes.size() == 1;
  std::string h = nodes + "; " + waitVerb(v.waiting) +
                  (one && v.ranks.size() == 1 ? " for it" : " for them") + " in " + opAndSeq(v) +
                  " on comm " + shortCommId(v.comm_id) + through +
                  " and agree on every op before it: the network between " +
                  (one ? "node " + std::to_string(u.nodes.front().node) : "those nodes") +
                  " and node 0 stopped, or " + (one ? "that node" : "those nodes") + " did";
  if (!u.no_data.empty()) h += "; no data for " + ranksWord(u.no_data);
  return h;
}

std::string nodeUnreachableMissing(const Verdict& v, const Unreachable& u) {
  const bool one = u.nodes.size() == 1;
  return "node 0 could neither hear nor read " + std::string(one ? "that node" : "those nodes") +
         ": the black boxes there (NCCLREC_DIR on " + (one ? "that host" : "each host") +
         ") show whether " + ranksWord(v.ranks) + " still ran; if they did, the network between " +
         "the nodes stopped (the hosts' kernel logs and NCCL_DEBUG=INFO say more)";
}

}  // namespace ncclrec::analyzer
