#include "recorder/net_env.h"

#include <gtest/gtest.h>

#include <string>

namespace ncclrec::recorder {
namespace {

TEST(NetEnvTest, KeepsOnlyNetworkSettingsInOrder) {
  char a[] = "PATH=/usr/bin";
  char b[] = "NCCL_SOCKET_IFNAME=eth1";
  char c[] = "NCCL_DEBUG=INFO";
  char d[] = "NCCL_IB_HCA=mlx5_0";
  char e[] = "HOSTNCCL_SOCKET_IFNAME=lo";
  char f[] = "NCCL_NET=Socket";
  char g[] = "NCCL_NETWORK=x";  // not NCCL_NET nor NCCL_NET_*
  char* env[] = {a, b, c, d, e, f, g, nullptr};
  char out[256];
  captureNetEnv(env, out, sizeof(out));
  EXPECT_EQ(std::string(out),
            "NCCL_SOCKET_IFNAME=eth1 NCCL_IB_HCA=mlx5_0 HOSTNCCL_SOCKET_IFNAME=lo NCCL_NET=Socket");
}

TEST(NetEnvTest, LeavesOutAPairThatDoesNotFitWhole) {
  char a[] = "NCCL_SOCKET_IFNAME=eth1";
  char b[] = "NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2";
  char c[] = "NCCL_COMM_ID=10.0.0.1:1";
  char* env[] = {a, b, c, nullptr};
  char out[48];
  captureNetEnv(env, out, sizeof(out));
  EXPECT_EQ(std::string(out), "NCCL_SOCKET_IFNAME=eth1 NCCL_COMM_ID=10.0.0.1:1");
}

TEST(NetEnvTest, EmptyWhenNoneIsSet) {
  char a[] = "HOME=/root";
  char* env[] = {a, nullptr};
  char out[16] = "junk";
  captureNetEnv(env, out, sizeof(out));
  EXPECT_EQ(std::string(out), "");
  captureNetEnv(nullptr, out, sizeof(out));
  EXPECT_EQ(std::string(out), "");
  EXPECT_FALSE(isNetSetting("NCCL_SOCKET_"));  // a prefix alone is no setting
  EXPECT_TRUE(isNetSetting("NCCL_BOOTSTRAP_UDS=1"));
}

}  // namespace
}  // namespace ncclrec::recorder
