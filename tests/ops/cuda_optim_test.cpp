// A captured AdamW step (ops/cuda/optim.cu) replayed with the step number advanced on the device
// equals eager steps on the CPU. One step of each update against the CPU, on every layout, is in
// the parity table (tests/ops/cuda_parity_test.cpp).
#include <gtest/gtest.h>

#include "core/device_graph.h"
#include "ops/inplace.h"
#include "ops/optim.h"
#include "tests/ops/cuda_test_util.h"
#include "tests/ops/optim_lists_cases.h"

namespace grove::ops::testing {
namespace {

// Both kernels evaluate the same expression (ops/optim_math.h); nvcc may contract a * b + c into
// an FMA where g++ does not, a rounding apart per operation over a few steps.
constexpr ParityTolerances kTolerances{1e-5, 1e-7, 1e-13, 1e-15};

// Three replays of a captured (add_(step, 1); adamw_) equal three eager steps on the CPU: the
// kernel reads the step from device memory at replay time.
TEST(CudaOptimCaptureTest, CapturedAdamwReadsTheStepAtReplay) {
  SKIP_WITHOUT_GPU();
  const AdamwHyperparameters options{0.1, 0.9, 0.999, 1e-8, 0.01};
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

// One kernel over 70 parameters (two launches of up to 64; one empty, one strided in half the
// cases, which takes one kernel per parameter) equals one call per parameter bit for bit.
TEST(CudaOptimLists, OneCallEqualsOneCallPerParameterBitForBit) {
  SKIP_WITHOUT_GPU();
  expect_lists_equal_one_call_per_parameter(kGpu, 70);
}

// A captured update of every parameter in one kernel follows its lr tensor and step on every
// replay, like the same steps run eagerly on the CPU.
TEST(CudaOptimLists, CapturedListsFollowTheLrAndStepOnReplay) {
  SKIP_WITHOUT_GPU();
  const std::vector<DimVector> shapes = list_shapes(9);
  const AdamwHyperparameters options{0.1, 0.9, 0.999, 1e-8, 0.01};
  const std::vector<Tensor> start = list_of(shapes, DType::Float32, kCPU, 3, true, false);
  const std::vector<Tensor> grads = list_of(shapes, DType::Float32, kCPU, 30, true, false);
  std::vector<Tensor> cpu_params = clones(start);
  std::vector<Tensor> cpu_m = list_of(shapes, DType::Float32, kCPU, 0, false, false);
  std::vector<Tensor> cpu_v = clones(cpu_m);
  std::vector<Tensor> params, gpu_grads, m, v;
  for (std::size_t i = 0; i < start.size(); ++i) {
    params.push_back(start[i].to(kGpu));
    gpu_grads.push_back(grads[i].to(kGpu));
    m.push_back(zeros(shapes[i], TensorOptions().device(kGpu)));
    v.push_back(zeros(shapes[i], TensorOptions().device(kGpu)));
  }
  const Tensor step = zeros({}, TensorOptions(DType::Int64).device(kGpu));
  const Tensor one = ones({}, TensorOptions(DType::Int64).device(kGpu));
  const Tensor lr = full({}, 0.1, TensorOptions().device(kGpu));
  const Tensor cpu_step = zeros({}, TensorOptions(DType::Int64));
  const Tensor cpu_lr = full({}, 0.1);
  synchronize(current_stream(kGpu));
  DeviceGraph graph(kGpu);
  graph.begin_capture(current_stream(kGpu));
  add_(step, one);
  adamw_(params, gpu_grads, m, v, step, lr, options);
  graph.end_capture();
  for (int i = 0; i < 3; ++i) {
    const double rate = 0.1 / (i + 1);
    lr.fill_(rate);
    cpu_lr.fill_(rate);
    graph.replay();
    cpu_step.fill_(i + 1);
    adamw_(cpu_params, grads, cpu_m, cpu_v, cpu_step, cpu_lr, options);
  }
  EXPECT_EQ(step.item<std::int64_t>(), 3);
  for (std::size_t i = 0; i < params.size(); ++i) {
    expect_device_parity(cpu_params[i], params[i], "param after three replays", kTolerances);
    expect_device_parity(cpu_m[i], m[i], "exp_avg after three replays", kTolerances);
  }
}

}  // namespace
}  // namespace grove::ops::testing
