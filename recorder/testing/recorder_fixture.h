// Test fixture for the recorder, a per-process singleton: each test body runs in a forked child
// (which also exercises the atfork path), configured through NCCLREC_* before its first call.
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "format/params_table.h"
#include "format/reader.h"
#include "format/testing/temp_dir.h"
#include "recorder/recorder.h"

namespace ncclrec::recorder::testing {

class RecorderTest : public ::testing::Test {
 protected:
  // Runs `body` in a child with the NCCLREC_* environment of `env` (plus the test's directory and
  // the dump library); returns the child's wait status. Child assertion failures exit 1.
  int inChild(const std::map<std::string, std::string>& env, const std::function<void()>& body,
              bool use_exit = false) {
    const pid_t pid = fork();
    if (pid == 0) {
      for (const auto& p : format::allParams()) unsetenv(std::string(p.name).c_str());
      unsetenv("RANK");
      setenv("NCCLREC_DIR", dir_.path().c_str(), 1);
      setenv("NCCLREC_DUMP_LIBRARY", NCCLREC_TEST_DUMP_LIBRARY, 1);
      setenv("NCCLREC_COMPLETION", "host", 1);
      // No ncclrec-watch from the build tree in the tests' stalls (watch_spawn_test.cc: yes).
      setenv("NCCLREC_WATCHER", "off", 1);
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      body();
      const int code = ::testing::Test::HasFailure() ? 1 : 0;
      if (use_exit) exit(code);
      _exit(code);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
  }

  void runInChild(const std::map<std::string, std::string>& env,
                  const std::function<void()>& body) {
    const int status = inChild(env, body);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "child failed (status " << status << ")";
  }

  std::vector<std::string> filesEndingWith(const std::string& suffix) const {
    std::vector<std::string> out;
    if (DIR* d = opendir(dir_.path().c_str())) {
      while (dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        if (name.size() >= suffix.size() &&
            name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
          out.push_back(dir_.path() + "/" + name);
      }
      closedir(d);
    }
    return out;
  }

  // Waits up to `seconds` for a file ending with `suffix`; "" when none came.
  std::string waitForFile(const std::string& suffix, double seconds) const {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(int(seconds * 1000));
    while (std::chrono::steady_clock::now() < deadline) {
      auto files = filesEndingWith(suffix);
      if (!files.empty()) return files.front();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return "";
  }

  format::RankData loadOnly(const std::string& suffix) {
    auto files = filesEndingWith(suffix);
    EXPECT_EQ(files.size(), 1u) << "files ending with " << suffix;
    if (files.empty()) return {};
    auto loaded = format::loadFile(files.front());
    EXPECT_TRUE(loaded.ok()) << loaded.status().message();
    return loaded.ok() ? std::move(loaded).value() : format::RankData{};
  }

  format::testing::TempDir dir_;
};

// A communicator known to the recorder without any NCCL library.
inline void registerComm(Recorder* r, const void* handle, uint64_t id, int rank, int nranks) {
  OpArgs a;
  a.op = format::OpType::kCommInitRank;
  a.comm_id = id;
  a.rank = rank;
  a.nranks = nranks;
  DeviceIdentity device;
  device.device = rank;
  device.source = format::kDeviceFromComm;
  CallHandle none;
  r->commCreated(handle, a, none, CreationArgs{}, 0, device, format::kNoComm);
}

inline CallHandle beginOp(Recorder* r, format::OpType op, const void* comm, uint64_t count,
                          const void* stream = nullptr, int peer = -1) {
  OpArgs a;
  a.op = op;
  a.comm = comm;
  a.count = count;
  a.dtype = 7;
  a.redop = format::isCollective(op) ? 0 : -1;
  a.peer = peer;
  a.stream = stream;
  return r->begin(a, 0);
}

}  // namespace ncclrec::recorder::testing
