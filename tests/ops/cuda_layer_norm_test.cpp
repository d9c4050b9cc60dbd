// The CUDA layer_norm_backward kernel's determinism (ops/cuda/layer_norm.cu): its parameter
// gradients are the same bits on every run. Values against the CPU are in the parity table
// (tests/ops/cuda_parity_test.cpp). Every test skips without a CUDA device (CTest label `gpu`).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/tensor.h"
#include "ops/layer_norm.h"
#include "tests/ops/cuda_test_util.h"

namespace grove::ops {
namespace {

using testing::kGpu;

// The column sums of grad_weight and grad_bias are deterministic: two runs agree bit for bit.
TEST(CudaLayerNormTest, ParameterGradientsAreDeterministic) {
  SKIP_WITHOUT_GPU();
  const Tensor x = testing::random_tensor({4099, 96}, DType::Float32, -3.0, 3.0, 7).to(kGpu);
  const Tensor grad = testing::random_tensor({4099, 96}, DType::Float32, -1.0, 1.0, 8).to(kGpu);
  const Tensor weight = testing::random_tensor({96}, DType::Float32, 0.5, 1.5, 9).to(kGpu);
  const LayerNormResult forward = layer_norm_with_stats(x, {96}, weight, Tensor(), 1e-5);
  const LayerNormGrads first =
      layer_norm_backward(grad, x, forward.mean, forward.rstd, {96}, weight);
  const LayerNormGrads second =
      layer_norm_backward(grad, x, forward.mean, forward.rstd, {96}, weight);
  testing::expect_close(second.grad_weight.to(kCPU), testing::elements(first.grad_weight.to(kCPU)),
                        0.0, 0.0, "grad_weight, second run");
  testing::expect_close(second.grad_bias.to(kCPU), testing::elements(first.grad_bias.to(kCPU)), 0.0,
                        0.0, "grad_bias, second run");
}

}  // namespace
}  // namespace grove::ops
