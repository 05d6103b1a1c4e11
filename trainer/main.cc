// ncclrec-trainer: the reference data-parallel trainer. See docs/trainer.md.
#include <cstdio>
#include <exception>

#include "trainer/nccl_setup.h"
#include "trainer/options.h"
#include "trainer/train.h"

int main(int argc, char** argv) {
  using namespace ncclrec::trainer;
  try {
    const auto env = distEnvFromEnvironment();
    if (!env.ok()) {
      std::fprintf(stderr, "ncclrec-trainer: %s\n", env.status().message().c_str());
      return kExitUsage;
    }
    const ParsedOptions parsed = parseOptions(argc, argv, env->world);
    if (!parsed.options) {
      std::fprintf(parsed.exit_code == kExitOk ? stdout : stderr, "%s\n", parsed.message.c_str());
      return parsed.exit_code;
    }
    return runTrainer(*parsed.options, *env);
  } catch (const std::exception& e) {  // out of memory and the like: one line, never a trace
    std::fprintf(stderr, "ncclrec-trainer: internal error: %s\n", e.what());
    return kExitFailed;
  }
}
