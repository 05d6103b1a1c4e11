#include "launcher/worker_env.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "format/testing/temp_dir.h"

namespace ncclrec::launcher {
namespace {

TEST(WorkerEnv, TorchrunContractPlusCxxrunAndNcclrec) {
  Options o;
  o.nproc_per_node = 4;
  o.max_restarts = 3;
  JobFacts f;
  f.run_id = "r7";
  f.attempt = 2;
  f.store_endpoint = "127.0.0.1:5000";
  f.token = "tok";
  f.worker_master_port = 6000;
  f.dump_dir = "/d/r7/attempt_2";
  f.nccl.use_host = true;
  f.nccl.host_dir = "/b/hostnccl";
  auto env = workerEnv(o, f, 3, "/usr/lib");
  EXPECT_EQ(env["RANK"], "3");
  EXPECT_EQ(env["LOCAL_RANK"], "3");
  EXPECT_EQ(env["WORLD_SIZE"], "4");
  EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "4");
  EXPECT_EQ(env["GROUP_RANK"], "0");
  EXPECT_EQ(env["GROUP_WORLD_SIZE"], "1");
  EXPECT_EQ(env["ROLE_RANK"], "3");
  EXPECT_EQ(env["ROLE_WORLD_SIZE"], "4");
  EXPECT_EQ(env["MASTER_ADDR"], "127.0.0.1");
  EXPECT_EQ(env["MASTER_PORT"], "6000");
  EXPECT_EQ(env["TORCHELASTIC_RESTART_COUNT"], "2");
  EXPECT_EQ(env["TORCHELASTIC_MAX_RESTARTS"], "3");
  EXPECT_EQ(env["TORCHELASTIC_RUN_ID"], "r7");
  EXPECT_EQ(env["CXXRUN_STORE"], "127.0.0.1:5000");
  EXPECT_EQ(env["CXXRUN_TOKEN"], "tok");
  EXPECT_EQ(env["NCCLREC_DIR"], "/d/r7/attempt_2");
  EXPECT_EQ(env["NCCLREC_RUN_ID"], "r7");
  EXPECT_EQ(env["NCCLREC_WATCHER"], "off");  // cxxrun supervises: no ncclrec-watch
  EXPECT_EQ(env["LD_LIBRARY_PATH"], "/b/hostnccl:/usr/lib");
  f.nccl.use_host = false;
  EXPECT_FALSE(workerEnv(o, f, 0, "/usr/lib").contains("LD_LIBRARY_PATH"));
}

TEST(WorkerEnv, GpusAreCountedFromDeviceNodes) {
  format::testing::TempDir dir;
  for (const char* name : {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "null"})
    std::ofstream(dir.file(name)) << "";
  EXPECT_EQ(visibleGpus(dir.path()), 2);
  EXPECT_EQ(visibleGpus(dir.file("missing")), 0);
}

TEST(WorkerEnv, NcclSelection) {
  auto host = selectNccl(NcclChoice::kAuto, 0, "/b/hostnccl");
  EXPECT_TRUE(host.ok);
  EXPECT_TRUE(host.use_host);
  EXPECT_NE(host.message.find("no GPU visible"), std::string::npos);
  auto system = selectNccl(NcclChoice::kAuto, 2, "/b/hostnccl");
  EXPECT_FALSE(system.use_host);
  EXPECT_NE(system.message.find("2 GPU(s) visible"), std::string::npos);
  EXPECT_FALSE(selectNccl(NcclChoice::kSystem, 0, "/b/hostnccl").use_host);
  EXPECT_TRUE(selectNccl(NcclChoice::kHost, 4, "/b/hostnccl").use_host);
  auto missing = selectNccl(NcclChoice::kHost, 0, "");
  EXPECT_FALSE(missing.ok);
  EXPECT_NE(missing.message.find("--nccl=system"), std::string::npos);
}

TEST(WorkerEnv, HostNcclIsFoundBesideTheBinary) {
  format::testing::TempDir dir;
  mkdir(dir.file("bin").c_str(), 0700);
  mkdir(dir.file("hostnccl").c_str(), 0700);
  std::ofstream(dir.file("bin/cxxrun")) << "";
  EXPECT_EQ(findHostNcclDir(dir.file("bin/cxxrun")), "");
  std::ofstream(dir.file("hostnccl/libnccl.so.2")) << "";
  EXPECT_EQ(findHostNcclDir(dir.file("bin/cxxrun")), dir.file("hostnccl"));
}

TEST(WorkerEnv, HostNcclIsFoundInTheInstalledTree) {
  format::testing::TempDir dir;
  for (const char* d : {"bin", "lib", "lib/ncclrec", "lib/ncclrec/hostnccl"})
    mkdir(dir.file(d).c_str(), 0700);
  std::ofstream(dir.file("bin/cxxrun")) << "";
  EXPECT_EQ(findHostNcclDir(dir.file("bin/cxxrun")), "");
  std::ofstream(dir.file("lib/ncclrec/hostnccl/libnccl.so.2")) << "";
  EXPECT_EQ(findHostNcclDir(dir.file("bin/cxxrun")), dir.file("lib/ncclrec/hostnccl"));
}

}  // namespace
}  // namespace ncclrec::launcher
