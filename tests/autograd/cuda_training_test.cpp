// End to end on a CUDA device: the small MLP of training_test.cpp, trained on cuda(0) from the
// same data and initial parameters (made on the CPU, then copied), must give the CPU run's loss
// at every step within 1e-4, and learn the problem as well.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tests/autograd/mlp_training.h"

namespace grove::autograd {
namespace {

using testing::train;

TEST(CudaTraining, MlpLossesMatchTheCpuRun) {
  if (!cuda_is_available()) GTEST_SKIP() << "no CUDA device";
  constexpr int kSteps = 100;
  const std::vector<float> cpu = train(kSteps, kCPU);
  const std::vector<float> gpu = train(kSteps, cuda(0));
  ASSERT_EQ(gpu.size(), cpu.size());
  // The GPU's float32 kernels add in other orders than the CPU's (cuBLAS, parallel reductions),
  // so each step's loss differs by rounding (~1e-7 relative), and the parameters drift apart by
  // as much per step; over 100 steps of this well-conditioned problem that stays far below 1e-4.
  float worst = 0.0f;
  for (int step = 0; step < kSteps; ++step) {
    const auto u = static_cast<std::size_t>(step);
    worst = std::max(worst, std::abs(gpu[u] - cpu[u]));
    EXPECT_NEAR(gpu[u], cpu[u], 1e-4) << "step " << step;
  }
  std::printf(
      "first loss %.6f (cpu) %.6f (gpu), last loss %.6f (cpu) %.6f (gpu), largest "
      "difference %.3g, accuracy %.3f (cpu) %.3f (gpu)\n",
      cpu.front(), gpu.front(), cpu[kSteps - 1], gpu[kSteps - 1], worst, cpu.back(), gpu.back());
  EXPECT_LT(gpu[kSteps - 1], 0.3f);
  EXPECT_GT(gpu.back(), 0.9f);
}

}  // namespace
}  // namespace grove::autograd
