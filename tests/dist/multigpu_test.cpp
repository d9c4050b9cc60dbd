// Data parallelism over several GPUs of one host through NCCL: every collective and dtype on all
// GPUs, one process each (dist_worker collectives cuda). Label multigpu; skips with fewer than
// two GPUs or without NCCL in the build.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/device.h"
#include "dist/launch.h"
#include "dist/process_group.h"

namespace grove::dist {
namespace {

TEST(MultiGpu, EveryCollectiveAndDtypeOverNccl) {
  if (cuda_device_count() < 2) GTEST_SKIP() << "needs 2 GPUs, found " << cuda_device_count();
  if (!has_nccl()) GTEST_SKIP() << "this build has no NCCL";
  LaunchOptions options;
  options.nproc = cuda_device_count();
  options.argv = {GROVE_DIST_WORKER, "collectives", "cuda"};
  options.timeout = std::chrono::seconds(120);
  EXPECT_EQ(launch_local(options), 0);
}

}  // namespace
}  // namespace grove::dist
