// CUDA fused optimizer updates (ops/cuda/optim.cu) against the CPU kernels: several SGD and AdamW
// steps from the same start, contiguous and strided, float32 and float64; and a captured AdamW
// step replayed with the step number advanced on the device.
#include <gtest/gtest.h>

#include "core/device_graph.h"
#include "ops/inplace.h"
#include "ops/optim.h"
#include "tests/ops/cuda_test_util.h"

namespace grove::ops::testing {
namespace {

// Both kernels evaluate the same expression (ops/optim_math.h); nvcc may contract a * b + c into
// an FMA where g++ does not, a rounding apart per operation over a few steps.
constexpr ParityTolerances kTolerances{1e-5, 1e-7, 1e-13, 1e-15};

// The tensor on `device`, strided when asked (a view of a wider buffer).
Tensor place(const Tensor& t, Device device, bool strided) {
  const Tensor moved = t.to(device);
  if (!strided) return moved;
  Tensor wide = zeros({t.size(0), t.size(1) * 2}, TensorOptions(t.dtype()).device(device));
  Tensor view = wide.slice(1, 0, t.size(1) * 2, 2);
  view.copy_(moved);
  return view;
}

class CudaOptimTest : public ::testing::TestWithParam<std::tuple<DType, bool>> {};

TEST_P(CudaOptimTest, SgdMatchesCpu) {
  SKIP_WITHOUT_GPU();
  const auto& [dtype, strided] = GetParam();
  const SgdOptions options{0.05, 0.9, 0.01, true};
  const Tensor start = random_tensor({33, 17}, dtype, -1, 1, 1);
  Tensor params[2], velocities[2];
  const Device devices[2] = {kCPU, kGpu};
  for (int d = 0; d < 2; ++d) {
    params[d] = place(start, devices[d], strided);
    velocities[d] = place(zeros({33, 17}, TensorOptions(dtype)), devices[d], strided);
  }
  for (unsigned step = 0; step < 4; ++step) {
    const Tensor grad = random_tensor({33, 17}, dtype, -1, 1, 10 + step);
    for (int d = 0; d < 2; ++d) {
      sgd_(params[d], place(grad, devices[d], strided), velocities[d], options);
    }
  }
  expect_device_parity(params[0], params[1], "param", kTolerances);
  expect_device_parity(velocities[0], velocities[1], "velocity", kTolerances);
}

TEST_P(CudaOptimTest, AdamwMatchesCpu) {
  SKIP_WITHOUT_GPU();
  const auto& [dtype, strided] = GetParam();
  const AdamwOptions options{0.01, 0.9, 0.99, 1e-8, 0.1};
  const Tensor start = random_tensor({33, 17}, dtype, -1, 1, 1);
  const Device devices[2] = {kCPU, kGpu};
  Tensor params[2], exp_avgs[2], exp_avg_sqs[2], steps[2], ones_[2];
  for (int d = 0; d < 2; ++d) {
    params[d] = place(start, devices[d], strided);
    exp_avgs[d] = place(zeros({33, 17}, TensorOptions(dtype)), devices[d], strided);
    exp_avg_sqs[d] = place(zeros({33, 17}, TensorOptions(dtype)), devices[d], strided);
    steps[d] = zeros({1}, TensorOptions(DType::Int64).device(devices[d]));
    ones_[d] = ones({1}, TensorOptions(DType::Int64).device(devices[d]));
  }
  for (unsigned step = 0; step < 5; ++step) {
    const Tensor grad = random_tensor({33, 17}, dtype, -1, 1, 20 + step);
    for (int d = 0; d < 2; ++d) {
      add_(steps[d], ones_[d]);
      adamw_(params[d], place(grad, devices[d], strided), exp_avgs[d], exp_avg_sqs[d], steps[d],
             options);
    }
  }
  expect_device_parity(params[0], params[1], "param", kTolerances);
  expect_device_parity(exp_avgs[0], exp_avgs[1], "exp_avg", kTolerances);
  expect_device_parity(exp_avg_sqs[0], exp_avg_sqs[1], "exp_avg_sq", kTolerances);
}

INSTANTIATE_TEST_SUITE_P(Layouts, CudaOptimTest,
                         ::testing::Combine(::testing::Values(DType::Float32, DType::Float64),
                                            ::testing::Bool()));

// Three replays of a captured (add_(step, 1); adamw_) equal three eager steps on the CPU: the
// kernel reads the step from device memory at replay time.
TEST(CudaOptimCaptureTest, CapturedAdamwReadsTheStepAtReplay) {
  SKIP_WITHOUT_GPU();
  const AdamwOptions options{0.1, 0.9, 0.999, 1e-8, 0.01};
  const Tensor grad = random_tensor({1000}, DType::Float32, -1, 1, 7);
  const Tensor start = random_tensor({1000}, DType::Float32, -1, 1, 8);
  Tensor cpu_param = start.clone();
  const Tensor cpu_m = zeros({1000}), cpu_v = zeros({1000}), cpu_step = zeros({1});
  const Tensor cpu_one = ones({1});
  const TensorOptions gpu = TensorOptions().device(kGpu);
  const Tensor param = start.to(kGpu), gpu_grad = grad.to(kGpu);
  const Tensor m = zeros({1000}, gpu), v = zeros({1000}, gpu), step = zeros({1}, gpu);
  const Tensor one = ones({1}, gpu);
  synchronize(current_stream(kGpu));
  DeviceGraph graph(kGpu);
  graph.begin_capture(current_stream(kGpu));
  add_(step, one);
  adamw_(param, gpu_grad, m, v, step, options);
  graph.end_capture();
  for (int i = 0; i < 3; ++i) {
    graph.replay();
    add_(cpu_step, cpu_one);
    adamw_(cpu_param, grad, cpu_m, cpu_v, cpu_step, options);
  }
  EXPECT_EQ(step.item<float>(), 3.0f);
  expect_device_parity(cpu_param, param, "param after three replays", kTolerances);
}

}  // namespace
}  // namespace grove::ops::testing
