// Parity of the CUDA layer_norm and layer_norm_backward kernels (ops/cuda/layer_norm.cu) with the
// CPU kernels (ops/cpu/layer_norm.cpp), the reference: the same values and layouts on both
// devices, with and without weight and bias, over one and several normalised dims, transposed
// and strided inputs and parameters, rows longer than a warp's share (block rows), the GPT shape
// (2048 rows of 128), empty batches and empty rows. Every test skips without a CUDA device (CTest
// label `gpu`).
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

using testing::strided_on_gpu;

// Tolerances: both devices sum in double and round once, in different orders, so float32
// results agree to an ulp or two (1e-5 relative). Outputs near zero come from differences
// (x - mean, and gw - mean(gw) - xhat mean(gw xhat) in the gradient) computed in double from the
// same float inputs: their absolute error is a few double ulps of the terms, far below the 1e-6
// floor for float32 and the 1e-13 floor for float64 (1e-12 relative).
void expect_parity(const Tensor& cpu_result, const Tensor& gpu_result, const std::string& what) {
  testing::expect_device_parity(cpu_result, gpu_result, what, {1e-5, 1e-6, 1e-12, 1e-13});
}

struct NormCase {
  std::string name;
  DimVector base;                             // x's base tensor
  std::function<Tensor(const Tensor&)> view;  // x = view(base)
  DimVector normalized_shape;
};

std::vector<NormCase> cases() {
  auto same = [](const Tensor& t) { return t; };
  return {
      {"gpt", {2048, 128}, same, {128}},
      {"mlp", {128, 10}, same, {10}},
      {"two normalised dims", {7, 5, 12}, same, {5, 12}},
      {"transposed", {33, 20}, [](const Tensor& t) { return t.transpose(0, 1); }, {33}},
      {"strided", {9, 70}, [](const Tensor& t) { return t.slice(1, 0, 70, 2); }, {35}},
      {"block rows", {3, 3001}, same, {3001}},
      {"all dims", {4, 6}, same, {4, 6}},
      {"empty batch", {0, 16}, same, {16}},
      {"empty rows", {4, 0}, same, {0}},
  };
}

TEST(CudaLayerNormTest, ForwardAndBackwardMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  unsigned seed = 1;
  for (const NormCase& c : cases()) {
    for (DType dtype : {DType::Float32, DType::Float64}) {
      const Tensor base = testing::random_tensor(c.base, dtype, -3.0, 5.0, seed++);
      const Tensor x = c.view(base);
      const Tensor gpu_x = c.view(base.to(kGpu));
      const Tensor grad = testing::random_tensor(x.sizes(), dtype, -2.0, 2.0, seed++);
      // Parameters: contiguous weight, bias read through a stride-2 view.
      const Tensor weight = testing::random_tensor(c.normalized_shape, dtype, 0.5, 1.5, seed++);
      const Tensor bias = testing::non_contiguous(
          testing::random_tensor(c.normalized_shape, dtype, -1.0, 1.0, seed++));
      for (int parameters = 0; parameters < 3; ++parameters) {
        const Tensor w = parameters >= 1 ? weight : Tensor();
        const Tensor b = parameters >= 2 ? bias : Tensor();
        const Tensor gpu_w = w.defined() ? w.to(kGpu) : Tensor();
        const Tensor gpu_b = b.defined() ? strided_on_gpu(b) : Tensor();
        const std::string what = c.name + " " + std::string(dtype_name(dtype)) +
                                 (parameters == 0   ? ", no weight or bias"
                                  : parameters == 1 ? ", weight"
                                                    : ", weight and bias");
        const LayerNormResult cpu = layer_norm_with_stats(x, c.normalized_shape, w, b, 1e-5);
        const LayerNormResult gpu =
            layer_norm_with_stats(gpu_x, c.normalized_shape, gpu_w, gpu_b, 1e-5);
        expect_parity(cpu.output, gpu.output, "y " + what);
        expect_parity(cpu.mean, gpu.mean, "mean " + what);
        expect_parity(cpu.rstd, gpu.rstd, "rstd " + what);
        // The backward on the same saved statistics on both devices (the CPU's).
        const LayerNormGrads cpu_grads =
            layer_norm_backward(grad, x, cpu.mean, cpu.rstd, c.normalized_shape, w);
        const LayerNormGrads gpu_grads =
            layer_norm_backward(strided_on_gpu(grad), gpu_x, cpu.mean.to(kGpu), cpu.rstd.to(kGpu),
                                c.normalized_shape, gpu_w);
        expect_parity(cpu_grads.grad_input, gpu_grads.grad_input, "grad_input " + what);
        expect_parity(cpu_grads.grad_weight, gpu_grads.grad_weight, "grad_weight " + what);
        expect_parity(cpu_grads.grad_bias, gpu_grads.grad_bias, "grad_bias " + what);
      }
    }
  }
}

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
