#include "recorder/device_identity.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "format/bbox_layout.h"

#ifndef NCCLREC_TEST_FAKE_CUDA
#error "NCCLREC_TEST_FAKE_CUDA must name the fake libcuda.so.1"
#endif

namespace ncclrec::recorder {
namespace {

int hostncclOnDevice3(int* device) {
  *device = 3;
  return 0;
}

int hostncclFailing(int*) { return 4; }  // ncclInvalidArgument

std::string uuidHex(const DeviceIdentity& id) {
  std::string out;
  char buf[3];
  for (uint8_t b : id.uuid) {
    snprintf(buf, sizeof(buf), "%02x", b);
    out += buf;
  }
  return out;
}

// The fake driver, loaded and initialized as an application using CUDA would have it.
class DeviceIdentityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    handle_ = dlopen(NCCLREC_TEST_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    auto init = reinterpret_cast<int (*)(unsigned)>(dlsym(handle_, "cuInit"));
    reset_ = reinterpret_cast<void (*)()>(dlsym(handle_, "fakeCudaReset"));
    set_context_device_ =
        reinterpret_cast<void (*)(void*, int)>(dlsym(handle_, "fakeCudaSetContextDevice"));
    set_current_ = reinterpret_cast<void (*)(void*)>(dlsym(handle_, "fakeCudaSetCurrentContext"));
    default_context_ = reinterpret_cast<void* (*)()>(dlsym(handle_, "fakeCudaDefaultContext"));
    ASSERT_TRUE(init && reset_ && set_context_device_ && set_current_ && default_context_);
    ASSERT_EQ(init(0), 0);
    reset_();
  }
  void TearDown() override {
    if (reset_ != nullptr) reset_();
    if (handle_ != nullptr) dlclose(handle_);
  }

  void* handle_ = nullptr;
  void (*reset_)() = nullptr;
  void (*set_context_device_)(void*, int) = nullptr;
  void (*set_current_)(void*) = nullptr;
  void* (*default_context_)() = nullptr;
};

TEST_F(DeviceIdentityTest, CommDeviceGetsItsBusIdAndUuidFromTheDriver) {
  const DeviceIdentity id = identifyDevice(2, nullptr, NCCLREC_TEST_FAKE_CUDA);
  EXPECT_EQ(id.device, 2);
  EXPECT_EQ(id.source, format::kDeviceFromComm);
  EXPECT_STREQ(id.bus_id, "0000:1c:00.0");  // lower-cased from the driver's "0000:1C:00.0"
  EXPECT_EQ(uuidHex(id), "202122232425262728292a2b2c2d2e2f");
}

TEST_F(DeviceIdentityTest, FailedInitTakesTheCurrentContextsDevice) {
  set_context_device_(default_context_(), 1);
  const DeviceIdentity id = identifyDevice(-1, nullptr, NCCLREC_TEST_FAKE_CUDA);
  EXPECT_EQ(id.device, 1);
  EXPECT_EQ(id.source, format::kDeviceFromCudaContext);
  EXPECT_STREQ(id.bus_id, "0000:1b:00.0");
  EXPECT_EQ(uuidHex(id), "101112131415161718191a1b1c1d1e1f");
}

TEST_F(DeviceIdentityTest, NoCurrentContextLeavesTheDeviceUnknown) {
  set_current_(nullptr);
  const DeviceIdentity id = identifyDevice(-1, nullptr, NCCLREC_TEST_FAKE_CUDA);
  EXPECT_EQ(id.device, -1);
  EXPECT_EQ(id.source, format::kDeviceUnknown);
  EXPECT_STREQ(id.bus_id, "");
  EXPECT_EQ(uuidHex(id), std::string(32, '0'));
}

TEST_F(DeviceIdentityTest, OrdinalTheDriverDoesNotKnowKeepsTheOrdinalOnly) {
  const DeviceIdentity id = identifyDevice(9, nullptr, NCCLREC_TEST_FAKE_CUDA);
  EXPECT_EQ(id.device, 9);
  EXPECT_EQ(id.source, format::kDeviceFromComm);
  EXPECT_STREQ(id.bus_id, "");
}

TEST_F(DeviceIdentityTest, HostncclDevicesAreEmulatedAndNeverAskTheDriver) {
  // The driver is loaded and has a current context on device 1, yet hostnccl's answer stands
  // and no bus id of a real GPU is attached to an emulated device.
  set_context_device_(default_context_(), 1);
  DeviceIdentity id = identifyDevice(-1, hostncclOnDevice3, NCCLREC_TEST_FAKE_CUDA);
  EXPECT_EQ(id.device, 3);
  EXPECT_EQ(id.source, format::kDeviceFromHostnccl);
  EXPECT_STREQ(id.bus_id, "");
  // A comm's own answer wins over the process-wide current device.
  id = identifyDevice(0, hostncclOnDevice3, NCCLREC_TEST_FAKE_CUDA);
  EXPECT_EQ(id.device, 0);
  EXPECT_EQ(id.source, format::kDeviceFromComm);
  id = identifyDevice(-1, hostncclFailing, NCCLREC_TEST_FAKE_CUDA);
  EXPECT_EQ(id.device, -1);
  EXPECT_EQ(id.source, format::kDeviceUnknown);
}

TEST(DeviceIdentityNoDriverTest, ADriverNotLoadedIsNeitherLoadedNorAsked) {
  const char* kMissing = "/nonexistent/libcuda.so.1";
  const DeviceIdentity id = identifyDevice(1, nullptr, kMissing);
  EXPECT_EQ(id.device, 1);
  EXPECT_EQ(id.source, format::kDeviceFromComm);
  EXPECT_STREQ(id.bus_id, "");
#ifdef NCCLREC_TEST_CUDA_STUB
  // A real file that nothing loaded: identifyDevice must not load it (RTLD_NOLOAD).
  if (dlopen(NCCLREC_TEST_CUDA_STUB, RTLD_LAZY | RTLD_NOLOAD) != nullptr)
    GTEST_SKIP() << "the CUDA stub is already loaded in this process";
  identifyDevice(-1, nullptr, NCCLREC_TEST_CUDA_STUB);
  EXPECT_EQ(dlopen(NCCLREC_TEST_CUDA_STUB, RTLD_LAZY | RTLD_NOLOAD), nullptr);
#endif
}

TEST(DeviceIdentityNoDriverTest, TheRealDriverExportsTheEntryPointsAsked) {
#ifdef NCCLREC_TEST_CUDA_STUB
  void* stub = dlopen(NCCLREC_TEST_CUDA_STUB, RTLD_LAZY | RTLD_LOCAL);
  ASSERT_NE(stub, nullptr) << dlerror();
  for (const char* name :
       {"cuCtxGetDevice", "cuDeviceGet", "cuDeviceGetPCIBusId", "cuDeviceGetUuid_v2"}) {
    EXPECT_NE(dlsym(stub, name), nullptr) << name;
  }
  dlclose(stub);
#else
  GTEST_SKIP() << "no CUDA toolkit stub libcuda found at configure time";
#endif
}

}  // namespace
}  // namespace ncclrec::recorder
