// The recorder's configuration, read once from the NCCLREC_* environment at the first NCCL call
// (declared in format/params_table.h, the single table of knobs).
#pragma once

#include <string>
#include <vector>

namespace ncclrec::recorder {

enum class UnwindChoice { kAuto, kLibunwind, kFramePointer };
enum class CompletionChoice { kAuto, kHost, kCuda, kCudaFull, kProfiler };  // the table's order

struct Params {
  std::string dir;
  std::string run_id;  // NCCLREC_RUN_ID, else launcherRunId()
  bool disable = false;
  uint32_t ring_capacity = 0;  // NCCLREC_BUFFER rounded up to a power of two
  int stack_depth = 16;
  int python_depth = 32;
  UnwindChoice unwind = UnwindChoice::kAuto;
  uint32_t max_comms = 4096;
  uint32_t max_stacks = 4096;
  uint32_t max_links = 1024;  // 0: no link table
  double timeout_s = 60;
  int poll_ms = 200;
  int dump_signal = 0;      // 0 = none
  int snapshot_signal = 0;  // 0 = no thread snapshots
  int snapshot_ms = 100;
  uint32_t snapshot_threads = 256;
  bool dump_on_exit = true;
  bool fatal_signals = true;
  CompletionChoice completion = CompletionChoice::kAuto;
  std::string cuda_library;
  std::string dump_library;
  bool symbolize = true;
  int log_level = 1;
  uint32_t log_subsys = 0xffffffffu;
  std::string watcher = "auto";  // NCCLREC_WATCHER: auto, off, or a program (watch_spawn.h)
};

// The job id of the launcher that started this process, for a run id when NCCLREC_RUN_ID is
// empty: TORCHELASTIC_RUN_ID (torchrun), SLURM_JOB_ID.SLURM_STEP_ID (srun; the job id alone
// without a step), OMPI_MCA_ess_base_jobid or PMIX_NAMESPACE (OpenMPI's mpirun); "" when none
// is set. Every rank of one launch gets the same id, and the next launch another.
std::string launcherRunId();

// Reads every knob; a malformed value keeps the default and adds one message to `problems`
// ("NCCLREC_BUFFER='abc' is not an integer; using 20000").
Params readParams(std::vector<std::string>* problems);

// Signal by name ("SIGUSR2", "USR2", "SIGRTMIN+2", "RTMAX-3") or number ("12"); 0 for "0"; -1
// when not a signal.
int parseSignal(const std::string& text);

}  // namespace ncclrec::recorder
