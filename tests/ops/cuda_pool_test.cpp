// The CUDA pooling kernels (ops/cuda/pool.cu) where a table of values (the parity table,
// tests/ops/cuda_parity_test.cpp, which holds kernels, strides, paddings, 3-d and 4-d inputs,
// the layouts and an empty batch) cannot say enough: max_pool2d's choice among infinities and
// NaNs, max_pool2d_backward with indices that repeat inside and across warps, and one capture
// and replay. Every test skips without a CUDA device (CTest label `gpu`).
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/device_graph.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "ops/pool.h"
#include "tests/ops/cuda_test_util.h"

namespace grove::ops {
namespace {

using testing::kGpu;
using testing::random_quarters;

// Exact: the GPU kernels make the CPU's comparisons, and its sums in the same precision and
// order (avg_pool2d in double row-major, the gradients in T in the CPU's order), so every
// result is the same bits; NaN matches NaN.
void expect_exact(const Tensor& cpu_result, const Tensor& gpu_result, const std::string& what) {
  testing::expect_device_parity(cpu_result, gpu_result, what, {0.0, 0.0, 0.0, 0.0});
}

struct PoolCase {
  std::string name;
  DimVector input;
  DimVector kernel, stride, padding;
};

// Windows of only -inf keep the first element's index; NaN wins over numbers and over -inf, and
// of several NaNs the last one's index is kept (every NaN replaces the best so far).
TEST(CudaPoolTest, InfinitiesAndNaNsPickTheCpuIndex) {
  SKIP_WITHOUT_GPU();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double nan = testing::kNaN;
  const std::vector<double> values = {-kInf, -kInf, 1.0,   nan,  //
                                      -kInf, -kInf, nan,   2.0,  //
                                      3.0,   3.0,   -kInf, nan,  //
                                      3.0,   nan,   nan,   -kInf};
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor input = from_vector(values).reshape({1, 1, 4, 4}).to(dtype);
    for (const DimVector& padding : {DimVector{0, 0}, DimVector{1, 1}}) {
      const auto [cpu_values, cpu_indices] =
          max_pool2d_with_indices(input, {2, 2}, {1, 1}, padding);
      const auto [gpu_values, gpu_indices] =
          max_pool2d_with_indices(input.to(kGpu), {2, 2}, {1, 1}, padding);
      const std::string what =
          std::string(dtype_name(dtype)) + " padding " + std::to_string(padding[0]);
      expect_exact(cpu_values, gpu_values, "values " + what);
      expect_exact(cpu_indices, gpu_indices, "indices " + what);
    }
  }
}

// Indices need not come from a forward: random ones repeat within a warp's 32 and across warps,
// and all-zero ones pile every gradient onto one element; sums keep the CPU's order.
TEST(CudaPoolTest, MaxPoolBackwardAddsRepeatedIndicesInOrder) {
  SKIP_WITHOUT_GPU();
  const DimVector input_sizes{3, 2, 9, 10};
  const DimVector grad_sizes{3, 2, 8, 9};
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor grad = testing::random_tensor(grad_sizes, dtype, -2.0, 2.0, 41);
    const Tensor random_indices = testing::random_integers(grad_sizes, 0, 90, 42);
    const Tensor zero_indices = zeros(grad_sizes, TensorOptions(DType::Int64));
    for (const Tensor& indices : {random_indices, zero_indices}) {
      expect_exact(max_pool2d_backward(grad, indices, input_sizes),
                   max_pool2d_backward(grad.to(kGpu), indices.to(kGpu), input_sizes),
                   "max_pool2d_backward " + std::string(dtype_name(dtype)));
    }
  }
}

TEST(CudaPoolTest, CapturedPoolingReplaysWithNewInputs) {
  SKIP_WITHOUT_GPU();
  const Stream stream = new_stream(kGpu);
  StreamGuard guard(stream);
  const DimVector sizes{4, 8, 12, 12};
  const Tensor input = random_quarters(sizes, DType::Float32, 71);
  const Tensor grad = testing::random_tensor({4, 8, 6, 6}, DType::Float32, -2.0, 2.0, 72);
  const Tensor gpu_input = input.to(kGpu), gpu_grad = grad.to(kGpu);
  synchronize(stream);
  auto step = [&](const Tensor& x, const Tensor& g) {
    const auto [values, indices] = max_pool2d_with_indices(x, {2, 2});
    return std::vector<Tensor>{values, max_pool2d_backward(g, indices, sizes),
                               avg_pool2d(x, {2, 2}), avg_pool2d_backward(g, sizes, {2, 2})};
  };
  DeviceGraph graph(kGpu);
  graph.begin_capture(stream);
  const std::vector<Tensor> outs = step(gpu_input, gpu_grad);
  graph.end_capture();
  EXPECT_GE(graph.num_nodes(), 4u);
  for (unsigned round = 0; round < 2; ++round) {
    const Tensor x = random_quarters(sizes, DType::Float32, 80 + round);
    gpu_input.copy_(x);
    graph.replay();
    const std::vector<Tensor> expected = step(x, grad);
    for (std::size_t i = 0; i < outs.size(); ++i) {
      expect_exact(expected[i], outs[i],
                   "replay " + std::to_string(round) + " output " + std::to_string(i));
    }
  }
}

}  // namespace
}  // namespace grove::ops
