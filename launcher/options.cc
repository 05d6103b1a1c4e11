#include "launcher/options.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "base/cli_parse.h"
#include "format/version.h"

namespace ncclrec::launcher {
namespace {

constexpr const char* kFooter = R"(Usage: cxxrun [OPTIONS] PROGRAM [ARGS...]

Workers get torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_RUN_ID) plus CXXRUN_STORE,
CXXRUN_TOKEN, NCCLREC_DIR (one per run and attempt) and NCCLREC_RUN_ID.

Exit codes:
  0  every worker exited 0
  1  a worker exited non-zero or was killed by a signal (summary on stderr)
  2  bad usage, the master port is in use, no shared secret for several nodes, or the
     nodes did not join (or the rendezvous was already closed)
  3  a rank reported a hang: dumps, per-rank table and report.json in NCCLREC_DIR
  128+N  stopped by signal N (SIGINT, SIGTERM), after every rank dumped
)";

std::optional<int> parseInt(const std::string& s) {
  int v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// Flags of cxxrun that take a value (dashed spelling): the first other word that is not such a
// value is the program, and nothing from there on is cxxrun's.
bool takesValue(const std::string& flag) {
  static const char* const kWithValue[] = {"--nproc-per-node",
                                           "--nnodes",
                                           "--node-rank",
                                           "--master-addr",
                                           "--master-port",
                                           "--rdzv-endpoint",
                                           "--rdzv-id",
                                           "--rdzv-backend",
                                           "--max-restarts",
                                           "--monitor-interval",
                                           "--log-dir",
                                           "--redirects",
                                           "-r",
                                           "--tee",
                                           "-t",
                                           "--run-id",
                                           "--nccl",
                                           "--on-hang",
                                           "--grace-period",
                                           "--join-timeout",
                                           "--rdzv-last-call",
                                           "--rdzv-token-file"};
  for (const char* f : kWithValue)
    if (flag == f) return true;
  return false;
}

// torchrun accepts --nproc_per_node as well as --nproc-per-node: CLI11 is given the dashed
// names, so underscores in cxxrun's flag names (before any '=') become dashes. The program and its
// arguments are left as they are, behind a "--" so that CLI11 never reads them.
// An unknown flag before the program is an error, named in *unknown.
std::vector<std::string> normalize(int argc, const char* const* argv, std::string* unknown) {
  std::vector<std::string> args;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") break;
    if (a.empty() || a[0] != '-') break;  // the program
    if (a.rfind("--", 0) == 0) {
      const size_t end = std::min(a.find('='), a.size());
      for (size_t k = 2; k < end; ++k)
        if (a[k] == '_') a[k] = '-';
    }
    const std::string name = a.substr(0, a.find('='));
    if (!takesValue(name) && name != "--standalone" && name != "--help" && name != "-h" &&
        name != "--version" && unknown->empty())
      *unknown = name;
    const bool value_follows = a.find('=') == std::string::npos && takesValue(a);
    args.push_back(std::move(a));
    if (value_follows && i + 1 < argc) args.emplace_back(argv[++i]);
  }
  if (i < argc) {
    args.emplace_back("--");
    if (std::string(argv[i]) == "--") ++i;
    for (; i < argc; ++i) args.emplace_back(argv[i]);
  }
  return args;
}

}  // namespace

std::optional<std::vector<int>> parseStreamMap(const std::string& text, int nproc) {
  std::vector<int> out(static_cast<size_t>(nproc), 0);
  if (auto v = parseInt(text)) {
    if (*v < 0 || *v > 3) return std::nullopt;
    std::fill(out.begin(), out.end(), *v);
    return out;
  }
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    const size_t colon = item.find(':');
    if (colon == std::string::npos) return std::nullopt;
    const auto r = parseInt(item.substr(0, colon));
    const auto v = parseInt(item.substr(colon + 1));
    if (!r || !v || *r < 0 || *r >= nproc || *v < 0 || *v > 3) return std::nullopt;
    out[static_cast<size_t>(*r)] = *v;
    pos = comma + 1;
  }
  return out;
}

std::string firstSlurmHost(const std::string& nodelist) {
  const size_t bracket = nodelist.find('[');
  const size_t comma = nodelist.find(',');
  if (bracket == std::string::npos || (comma != std::string::npos && comma < bracket))
    return nodelist.substr(0, comma);
  const size_t end = nodelist.find_first_of(",-]", bracket + 1);
  if (end == std::string::npos) return nodelist.substr(0, bracket);
  return nodelist.substr(0, bracket) + nodelist.substr(bracket + 1, end - bracket - 1);
}

ParsedCommandLine parseCommandLine(int argc, const char* const* argv, int gpus) {
  ParsedCommandLine result;
  Options o;
  CLI::App app("cxxrun: start an NCCL job's workers like torchrun, and turn a hang into a report",
               "cxxrun");
  app.footer(kFooter);
  app.prefix_command(true);
  std::string nproc = "1", nnodes = "1", rdzv_endpoint, rdzv_id, redirects = "0", tee = "0";
  std::string nccl = "auto", on_hang = "exit";
  int node_rank = -1, master_port = -1;
  std::string master_addr;
  app.add_option("--nproc-per-node", nproc,
                 "Workers on this node: a number, or auto (GPUs, else CPUs)");
  app.add_option("--nnodes", nnodes,
                 "Number of nodes, N or MIN:MAX (elastic: the job runs on the nodes that joined)");
  app.add_option("--node-rank", node_rank,
                 "This node's rank (default: 0 on one node, else in order of arrival)");
  app.add_option(
      "--join-timeout", o.join_timeout_s,
      "Seconds agents wait for every node (MIN nodes when elastic) to join (default 300)");
  app.add_option("--rdzv-last-call", o.rdzv_last_call_s,
                 "Elastic: close the rendezvous when MIN nodes joined and no other came for this "
                 "many seconds (default 30, as torchrun's last_call_timeout)");
  app.add_option("--rdzv-token-file", o.rdzv_token_file,
                 "File holding the job's shared secret (else CXXRUN_TOKEN); needed for more than "
                 "one node");
  app.add_option("--master-addr", master_addr,
                 "Address of the node-rank-0 agent (default 127.0.0.1)");
  app.add_option("--master-port", master_port,
                 "Port of the job's store (default 29500; 0: a free port)");
  app.add_option("--rdzv-endpoint", rdzv_endpoint,
                 "HOST[:PORT]: the same as --master-addr/--master-port");
  app.add_option("--rdzv-id", rdzv_id, "Same as --run-id");
  app.add_option("--rdzv-backend", "Accepted for compatibility; cxxrun always uses its own store");
  app.add_flag("--standalone", o.standalone, "Single node, store on 127.0.0.1 with a free port");
  app.add_option("--max-restarts", o.max_restarts, "Restarts of the worker group after a failure");
  app.add_option("--monitor-interval", o.monitor_interval_s,
                 "Seconds between worker checks (default 0.1)");
  app.add_option("--log-dir", o.log_dir,
                 "Write LOG_DIR/RUN_ID/attempt_N/LOCAL_RANK/{stdout,stderr}.log");
  app.add_option(
      "--redirects,-r", redirects,
      "Send worker output to log files only: 0 none, 1 stdout, 2 stderr, 3 both; or r:N,r:N");
  app.add_option("--tee,-t", tee,
                 "Also copy worker output to log files: same values as --redirects");
  app.add_option("--run-id", o.run_id,
                 "Run id: TORCHELASTIC_RUN_ID, NCCLREC_RUN_ID, dump directory name");
  app.add_option("--nccl", nccl,
                 "Which NCCL workers load: auto (system NCCL if a GPU is visible, else hostnccl), "
                 "system, host")
      ->check(CLI::IsMember({"auto", "system", "host"}));
  app.add_option("--on-hang", on_hang,
                 "exit: stop the job with exit code 3 after the report; wait: leave it running")
      ->check(CLI::IsMember({"exit", "wait"}));
  app.add_option("--grace-period", o.grace_period_s,
                 "Seconds between SIGTERM and SIGKILL when stopping workers (default 5)");
  app.set_version_flag("--version", std::string("cxxrun ") + ncclrec::format::versionString());
  std::string unknown;
  const base::CliOutcome parsed = base::parseCli(app, [&] {
    std::vector<std::string> args = normalize(argc, argv, &unknown);
    std::reverse(args.begin(), args.end());  // CLI11's parse(vector) takes them reversed
    if (unknown.empty()) app.parse(args);
  });
  if (!unknown.empty()) {
    result.exit_code = kExitUsage;
    result.message = "cxxrun: unknown flag " + unknown + " (cxxrun --help lists them)";
    return result;
  }
  if (parsed.done()) {
    if (parsed.failed()) result.exit_code = kExitUsage;
    result.message = parsed.failed() ? "cxxrun: " + parsed.text : parsed.text;
    return result;
  }
  auto fail = [&](const std::string& why) {
    result.exit_code = kExitUsage;
    result.message = "cxxrun: " + why;
    return result;
  };
  o.program = app.remaining();
  if (!o.program.empty() && o.program.front() == "--") o.program.erase(o.program.begin());
  if (o.program.empty()) return fail("no program given: cxxrun [OPTIONS] PROGRAM [ARGS...]");

  if (nproc == "auto") {
    o.nproc_per_node = gpus > 0 ? gpus : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  } else if (auto n = parseInt(nproc); n && *n > 0) {
    o.nproc_per_node = *n;
  } else {
    return fail("--nproc-per-node must be a positive number or auto, not '" + nproc + "'");
  }
  // Slurm: what the flags leave open comes from the allocation.
  const char* slurm_job = std::getenv("SLURM_JOB_ID");
  const char* slurm_nnodes = std::getenv("SLURM_NNODES");
  const char* slurm_nodeid = std::getenv("SLURM_NODEID");
  // Only when --nnodes is not given: `cxxrun --nnodes 1` inside an allocation is a local job.
  if (slurm_job != nullptr && slurm_nnodes != nullptr && slurm_nodeid != nullptr &&
      app.count("--nnodes") == 0) {
    nnodes = slurm_nnodes;
    if (app.count("--node-rank") == 0) {
      auto id = parseInt(slurm_nodeid);
      if (!id) return fail(std::string("SLURM_NODEID='") + slurm_nodeid + "' is not a number");
      node_rank = *id;
    }
    const char* list = std::getenv("SLURM_JOB_NODELIST");
    if (list == nullptr) list = std::getenv("SLURM_NODELIST");
    if (master_addr.empty() && rdzv_endpoint.empty() && list != nullptr)
      master_addr = firstSlurmHost(list);
    if (o.run_id.empty() && rdzv_id.empty()) o.run_id = std::string("slurm-") + slurm_job;
  }
  const size_t colon = nnodes.find(':');
  const auto nmin = parseInt(nnodes.substr(0, colon));
  const auto nmax = colon == std::string::npos ? nmin : parseInt(nnodes.substr(colon + 1));
  if (!nmin || !nmax || *nmin < 1 || *nmax < *nmin)
    return fail("--nnodes must be N or MIN:MAX with 1 <= MIN <= MAX, not '" + nnodes + "'");
  o.nnodes = *nmax;
  o.min_nnodes = *nmin;
  if (isElastic(o) && node_rank >= 0)
    return fail("--node-rank cannot be combined with --nnodes " + nnodes +
                ": node ranks follow the order in which the agents join");
  if (!(o.rdzv_last_call_s >= 0)) return fail("--rdzv-last-call must be 0 or more");
  if (node_rank >= o.nnodes)
    return fail("--node-rank " + std::to_string(node_rank) + " with " + std::to_string(o.nnodes) +
                " node(s)");
  if (node_rank < -1) return fail("--node-rank must be 0 or more");
  o.node_rank = o.nnodes == 1 ? 0 : node_rank;
  if (!(o.join_timeout_s > 0)) return fail("--join-timeout must be more than 0");
  if (!rdzv_endpoint.empty()) {
    const size_t c = rdzv_endpoint.rfind(':');
    master_addr = rdzv_endpoint.substr(0, c);
    if (c != std::string::npos) {
      auto p = parseInt(rdzv_endpoint.substr(c + 1));
      if (!p) return fail("--rdzv-endpoint must be HOST[:PORT], not '" + rdzv_endpoint + "'");
      master_port = *p;
    }
  }
  if (o.standalone) {
    o.master_addr = "127.0.0.1";
    o.master_port = master_port >= 0 ? master_port : 0;
  } else {
    if (!master_addr.empty()) o.master_addr = master_addr;
    if (master_port >= 0) o.master_port = master_port;
  }
  if (o.master_port < 0 || o.master_port > 65535)
    return fail("--master-port must be 0..65535, not " + std::to_string(o.master_port));
  if (o.run_id.empty()) o.run_id = rdzv_id;
  for (char c : o.run_id)
    if (c == '/' || c == '\0') return fail("--run-id must not contain '/'");
  if (o.run_id == "." || o.run_id == "..") return fail("--run-id must not be '.' or '..'");
  if (o.max_restarts < 0) return fail("--max-restarts must be 0 or more");
  if (o.nnodes > 1 && o.standalone) return fail("--standalone is for one node, not " + nnodes);
  if (!(o.monitor_interval_s > 0)) return fail("--monitor-interval must be more than 0");
  if (!(o.grace_period_s >= 0)) return fail("--grace-period must be 0 or more");
  auto r = parseStreamMap(redirects, o.nproc_per_node);
  if (!r) return fail("--redirects must be 0-3 or LOCAL_RANK:N,..., not '" + redirects + "'");
  auto t = parseStreamMap(tee, o.nproc_per_node);
  if (!t) return fail("--tee must be 0-3 or LOCAL_RANK:N,..., not '" + tee + "'");
  o.redirects = *r;
  o.tee = *t;
  if (o.log_dir.empty()) {
    for (size_t i = 0; i < o.redirects.size(); ++i)
      if (o.redirects[i] != 0 || o.tee[i] != 0) return fail("--redirects and --tee need --log-dir");
  }
  o.nccl = nccl == "system" ? NcclChoice::kSystem
           : nccl == "host" ? NcclChoice::kHost
                            : NcclChoice::kAuto;
  o.on_hang = on_hang == "wait" ? OnHang::kWait : OnHang::kExit;
  result.options = std::move(o);
  return result;
}

}  // namespace ncclrec::launcher
