#include "hostnccl/device.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace ncclrec::hostnccl {
namespace {

class DeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"HOSTNCCL_DEVICE", "LOCAL_RANK", "HOSTNCCL_HOSTID", "GROUP_RANK"})
      unsetenv(name);
  }
  void TearDown() override { SetUp(); }
};

TEST_F(DeviceTest, NothingSetMeansDeviceZeroNotKnown) {
  const Placement p = currentPlacement();
  EXPECT_EQ(p.device, 0);
  EXPECT_FALSE(p.known);
}

TEST_F(DeviceTest, LocalRankThenHostncclDevice) {
  setenv("LOCAL_RANK", "3", 1);
  EXPECT_EQ(currentPlacement().device, 3);
  EXPECT_TRUE(currentPlacement().known);
  setenv("HOSTNCCL_DEVICE", "0", 1);  // as if the program called cudaSetDevice(0)
  EXPECT_EQ(currentPlacement().device, 0);
  EXPECT_TRUE(currentPlacement().known);
}

TEST_F(DeviceTest, ValuesThatAreNotDevicesAreIgnored) {
  setenv("LOCAL_RANK", "2", 1);
  for (const char* bad : {"", "-1", "abc", "1x", "99999999999"}) {
    setenv("HOSTNCCL_DEVICE", bad, 1);
    EXPECT_EQ(currentPlacement().device, 2) << "'" << bad << "'";
  }
}

TEST_F(DeviceTest, HostIsTheHostNameThenTheLaunchersNodeOrHostncclHostid) {
  char name[256] = {};
  ASSERT_EQ(gethostname(name, sizeof(name) - 1), 0);
  EXPECT_EQ(hostIdentity(), name);
  setenv("GROUP_RANK", "1", 1);
  EXPECT_EQ(hostIdentity(), std::string(name) + "/node 1");
  setenv("HOSTNCCL_HOSTID", "rack7", 1);
  EXPECT_EQ(hostIdentity(), "rack7");
  EXPECT_EQ(currentPlacement().host, "rack7");
}

TEST_F(DeviceTest, PlacementRoundTripsThroughItsEncoding) {
  const Placement p{"node-a", 5, true};
  Placement back;
  ASSERT_TRUE(decodePlacement(encodePlacement(p), &back));
  EXPECT_EQ(back, p);
  const Placement unknown{std::string(400, 'h'), 0, false};  // host cut to fit
  ASSERT_TRUE(decodePlacement(encodePlacement(unknown), &back));
  EXPECT_FALSE(back.known);
  EXPECT_EQ(back.host, std::string(255, 'h'));
  EXPECT_FALSE(decodePlacement(std::vector<char>(3, 'x'), &back));
}

TEST_F(DeviceTest, DuplicateIsSameHostSameKnownDevice) {
  const std::vector<Placement> all = {
      {"a", 0, true}, {"a", 1, true}, {"a", 0, true}, {"b", 0, true}, {"a", 1, false}};
  EXPECT_EQ(duplicateOf(all, 0), 2);
  EXPECT_EQ(duplicateOf(all, 2), 0);
  EXPECT_EQ(duplicateOf(all, 1), -1);  // rank 4 is on device 1 too, but its device is unknown
  EXPECT_EQ(duplicateOf(all, 3), -1);  // another host
  EXPECT_EQ(duplicateOf(all, 4), -1);
  EXPECT_EQ(duplicateOf(all, 7), -1);
  EXPECT_EQ(duplicateOf(all, -1), -1);
}

}  // namespace
}  // namespace ncclrec::hostnccl
