// cxxrun's command line: torchrun's flags (both --nproc-per-node and --nproc_per_node
// spellings), cxxrun's own, then PROGRAM ARGS.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace ncclrec::launcher {

// Exit codes of cxxrun, documented in docs/cxxrun.md and --help. Never renumber.
inline constexpr int kExitOk = 0;
inline constexpr int kExitWorkerFailed = 1;  // a worker exited non-zero or by a signal
inline constexpr int kExitUsage = 2;         // bad flag, port in use, store unreachable
inline constexpr int kExitHang = 3;          // a rank reported a hang; report.json written
// Ended by SIGINT/SIGTERM: 128 + the signal number, after the dump-and-report.

enum class NcclChoice { kAuto, kSystem, kHost };
enum class OnHang { kExit, kWait };

struct Options {
  int nproc_per_node = 1;
  int nnodes = 1;      // MAX of --nnodes MIN:MAX; the agent lowers it to the nodes that joined
  int min_nnodes = 1;  // MIN; equal to nnodes unless the job is elastic
  int node_rank = 0;   // -1: assigned at the rendezvous, in order of arrival (multi-node only)
  double join_timeout_s = 300;  // how long agents wait for every node (or MIN nodes) to join
  // Elastic only: the rendezvous closes once MIN nodes joined and none came for this long.
  double rdzv_last_call_s = 30;
  std::string rdzv_token_file;  // the job's shared secret, read from this file (multi-node)
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string run_id;  // empty: cxxrun makes one up
  bool standalone = false;
  int max_restarts = 0;
  double monitor_interval_s = 0.1;
  double grace_period_s = 5;
  std::string log_dir;
  std::vector<int> redirects;  // per local rank: 0 none, 1 stdout, 2 stderr, 3 both
  std::vector<int> tee;        // same encoding
  NcclChoice nccl = NcclChoice::kAuto;
  OnHang on_hang = OnHang::kExit;
  std::vector<std::string> program;  // the program and its arguments
};

// More than one node may take part: the agents meet through the store and need a shared secret.
inline bool isMultiNode(const Options& o) { return o.nnodes > 1; }
// --nnodes MIN:MAX with MIN < MAX: the rendezvous decides how many nodes run the job.
inline bool isElastic(const Options& o) { return o.min_nnodes < o.nnodes; }

struct ParsedCommandLine {
  std::optional<Options> options;  // set when the job should run
  int exit_code = kExitOk;         // when not: kExitOk after --help, else kExitUsage
  std::string message;             // help text, or one error line (no trailing newline)
};

// Never throws. `gpus` is the number of visible GPUs, used by --nproc-per-node auto. Under Slurm
// (SLURM_JOB_ID, SLURM_NNODES and SLURM_NODEID set in the environment) the number of nodes, the
// node rank, the master address (first host of SLURM_JOB_NODELIST) and the run id come from
// Slurm unless given as flags.
ParsedCommandLine parseCommandLine(int argc, const char* const* argv, int gpus);

// The first host of a Slurm host list: "node[03-05,09],gpu7" -> "node03".
std::string firstSlurmHost(const std::string& nodelist);

// Parses torchrun's --redirects/--tee value: "N" for every local rank or "r:N,r:N" per rank.
std::optional<std::vector<int>> parseStreamMap(const std::string& text, int nproc);

}  // namespace ncclrec::launcher
