// ncclrec_faultgen: a random correct NCCL program with one injected fault, from a seed.
//   ncclrec_faultgen --seed S [--world W] [--fault KIND] --describe   the program as JSON
//   ncclrec_faultgen --seed S [--world W] [--fault KIND]              run it (RANK, WORLD_SIZE)
// Exit codes: 0 done; 1 an NCCL call failed (or the id could not be shared); 2 bad usage.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "samples/common/unique_id_file.h"
#include "tests/faultgen/describe.h"
#include "tests/faultgen/run.h"

int main(int argc, char** argv) {
  using namespace ncclrec::faultgen;
  CLI::App app{"ncclrec_faultgen: a random NCCL program with one injected fault"};
  uint64_t seed = 0;
  int world = 0;
  std::string fault;
  bool describe_only = false;
  app.add_option("--seed", seed, "the program's seed")->required();
  app.add_option("--world", world, "ranks (default: the seed picks 2 to 8)")
      ->check(CLI::Range(2, 8));
  app.add_option("--fault", fault, "the fault kind instead of the seed's (none: healthy)");
  app.add_flag("--describe", describe_only, "print the program and its fault as JSON");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  FaultKind kind = FaultKind::kNone;
  if (!fault.empty() && !parseFault(fault, &kind)) {
    std::fprintf(stderr, "ncclrec_faultgen: unknown --fault '%s'\n", fault.c_str());
    return 2;
  }
  const Program p = generate(seed, world, kind, !fault.empty() && kind == FaultKind::kNone);
  if (describe_only) {
    std::printf("%s\n", describe(p).dump().c_str());
    return 0;
  }
  const int rank = samples::envInt("RANK", -1);
  const int size = samples::envInt("WORLD_SIZE", -1);
  if (rank < 0 || size != p.world || rank >= size) {
    std::fprintf(stderr,
                 "ncclrec_faultgen: seed %llu makes a program of %d ranks; run it with "
                 "WORLD_SIZE=%d and RANK set (got RANK=%d WORLD_SIZE=%d)\n",
                 static_cast<unsigned long long>(seed), p.world, p.world, rank, size);
    return 2;
  }
  const char* file = std::getenv("NCCLREC_SAMPLE_ID_FILE");
  const std::string key = file != nullptr && *file != '\0'
                              ? file
                              : "/tmp/ncclrec-faultgen-" + std::to_string(seed) + ".id";
  return runRank(p, rank, key);
}
