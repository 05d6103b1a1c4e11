// A worker for cxxrun's tests. argv[1] picks what it does:
//   env                 print the environment contract on one line and exit 0
//   linger SECONDS      the same, then stay that long before exiting 0
//   exit CODE RANK      rank RANK exits with CODE; the others wait to be stopped
//   signal SIG RANK     rank RANK kills itself with signal SIG; the others wait to be stopped
//   flaky               rank 0 of attempt 0 exits 1; everything else exits 0
//   flaky_on RANK       in attempt 0 rank RANK exits 1 and the others wait to be stopped (as in a
//                       collective); in later attempts every rank exits 0
//   share               share 64 bytes from rank 0 through the store (storeBroadcast), print them
//   sleep               print "ready", then wait to be stopped
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "format/store_client.h"

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "<unset>";
}

int envInt(const char* name) { return std::atoi(env(name).c_str()); }

[[noreturn]] void waitForever() {
  for (;;) pause();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "env";
  const int rank = envInt("RANK");
  if (mode == "env" || (mode == "linger" && argc > 2)) {
    std::printf(
        "RANK=%s LOCAL_RANK=%s WORLD_SIZE=%s LOCAL_WORLD_SIZE=%s GROUP_RANK=%s GROUP_WORLD_SIZE=%s "
        "ROLE_RANK=%s ROLE_WORLD_SIZE=%s MASTER_ADDR=%s MASTER_PORT=%s "
        "TORCHELASTIC_RESTART_COUNT=%s TORCHELASTIC_MAX_RESTARTS=%s TORCHELASTIC_RUN_ID=%s "
        "CXXRUN_STORE=%s NCCLREC_DIR=%s NCCLREC_RUN_ID=%s LD_LIBRARY_PATH=%s\n",
        env("RANK").c_str(), env("LOCAL_RANK").c_str(), env("WORLD_SIZE").c_str(),
        env("LOCAL_WORLD_SIZE").c_str(), env("GROUP_RANK").c_str(), env("GROUP_WORLD_SIZE").c_str(),
        env("ROLE_RANK").c_str(), env("ROLE_WORLD_SIZE").c_str(), env("MASTER_ADDR").c_str(),
        env("MASTER_PORT").c_str(), env("TORCHELASTIC_RESTART_COUNT").c_str(),
        env("TORCHELASTIC_MAX_RESTARTS").c_str(), env("TORCHELASTIC_RUN_ID").c_str(),
        env("CXXRUN_STORE").c_str(), env("NCCLREC_DIR").c_str(), env("NCCLREC_RUN_ID").c_str(),
        env("LD_LIBRARY_PATH").c_str());
    std::fprintf(stderr, "rank %d to stderr\n", rank);
    if (mode == "linger") {
      std::fflush(stdout);
      usleep(static_cast<useconds_t>(std::atof(argv[2]) * 1e6));
    }
    return 0;
  }
  if (mode == "exit" && argc > 3) {
    if (rank == std::atoi(argv[3])) {
      usleep(200000);  // let the others start
      std::printf("rank %d exits with %s\n", rank, argv[2]);
      return std::atoi(argv[2]);
    }
    waitForever();
  }
  if (mode == "signal" && argc > 3) {
    if (rank == std::atoi(argv[3])) {
      usleep(200000);
      std::fflush(stdout);
      kill(getpid(), std::atoi(argv[2]));
    }
    waitForever();
  }
  if (mode == "flaky") {
    const bool fail = rank == 0 && envInt("TORCHELASTIC_RESTART_COUNT") == 0;
    std::printf("rank %d attempt %s %s\n", rank, env("TORCHELASTIC_RESTART_COUNT").c_str(),
                fail ? "fails" : "succeeds");
    return fail ? 1 : 0;
  }
  if (mode == "flaky_on" && argc > 2) {
    const int attempt = envInt("TORCHELASTIC_RESTART_COUNT");
    if (attempt == 0 && rank != std::atoi(argv[2])) waitForever();
    if (attempt == 0) usleep(300000);  // let every node start
    std::printf("rank %d attempt %d %s in %s\n", rank, attempt, attempt == 0 ? "fails" : "succeeds",
                env("NCCLREC_DIR").c_str());
    return attempt == 0 ? 1 : 0;
  }
  if (mode == "share") {
    char bytes[64] = {};
    if (rank == 0)
      std::snprintf(bytes, sizeof(bytes), "secret-of-%s", env("NCCLREC_RUN_ID").c_str());
    const auto status = ncclrec::format::storeBroadcast("id", rank == 0, bytes, sizeof(bytes), 30);
    if (!status.ok()) {
      std::fprintf(stderr, "%s\n", status.message().c_str());
      return 1;
    }
    std::printf("rank %d got %s\n", rank, bytes);
    return 0;
  }
  if (mode == "sleep") {
    std::printf("rank %d ready\n", rank);
    std::fflush(stdout);
    waitForever();
  }
  std::fprintf(stderr, "test_worker: unknown mode %s\n", mode.c_str());
  return 2;
}
