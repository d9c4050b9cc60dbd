// The CUDA convolutions (ops/cuda/conv.cpp, cuDNN) where a table of values (the parity table,
// tests/ops/cuda_parity_test.cpp, which holds strides, paddings, dilations, groups, bias on and
// off, 1x1 kernels and the CNN's layers) cannot say enough: that float32 really is computed
// without TF32 while the switch is off, benchmark mode, and one capture and replay of all three
// ops. Every test skips without a CUDA device (CTest label `gpu`).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/device_graph.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "ops/conv.h"
#include "ops/precision.h"
#include "tests/ops/cuda_test_util.h"
#include "tests/sanitizer_scale.h"

namespace grove::ops {
namespace {

using testing::kGpu;
using testing::random_quarters;

// Tolerances. Inputs are multiples of 1/4 in [-3, 3], so every product is a multiple of 1/16 and
// every partial sum here (below 2^13 in magnitude) is exact in float32: cuDNN's GEMM-style
// algorithms and the CPU's GEMM agree exactly whatever their order. FFT and Winograd algorithms,
// which the heuristics may pick, round their transforms: their error scales with the sum of the
// terms' magnitudes (up to ~2000 for the CNN layer 2 weight gradient, 784 products of mean
// magnitude ~2.3), about 1e-6 of it; measured on an H200: 1.4e-3 absolute on a result of -4.44.
// Hence 1e-4 relative with a 1e-2 absolute floor (a wrong index or TF32 rounding, which the
// test below isolates, would still show). float64: the same argument with 2^-52, 1e-12 / 1e-10.
void expect_parity(const Tensor& cpu_result, const Tensor& gpu_result, const std::string& what) {
  testing::expect_device_parity(cpu_result, gpu_result, what, {1e-4, 1e-2, 1e-12, 1e-10});
}

struct ConvCase {
  std::string name;
  DimVector input;   // (N, C, H, W)
  DimVector weight;  // (O, C / G, kH, kW)
  DimVector stride, padding, dilation;
  std::int64_t groups;
  bool bias;
};

std::vector<ConvCase> conv_cases() {
  return {
      {"plain 3x3", {2, 3, 7, 9}, {4, 3, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, true},
      {"padded and strided", {3, 4, 11, 8}, {6, 4, 3, 2}, {2, 3}, {1, 2}, {1, 1}, 1, true},
      {"dilated", {2, 3, 10, 12}, {5, 3, 3, 3}, {1, 1}, {2, 1}, {2, 3}, 1, false},
      {"groups", {2, 6, 9, 9}, {9, 2, 3, 3}, {1, 2}, {1, 1}, {1, 1}, 3, true},
      {"depthwise", {1, 4, 8, 5}, {8, 1, 3, 1}, {1, 1}, {1, 0}, {1, 1}, 4, false},
      {"1x1", {3, 5, 6, 7}, {4, 5, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true},
      // Stride 3 leaves input rows no window reaches: their gradient is 0.
      {"batch 1, odd", {1, 1, 13, 17}, {2, 1, 5, 3}, {3, 2}, {2, 1}, {1, 2}, 1, true},
      {"kernel over the padding", {2, 2, 2, 3}, {3, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},
      {"CNN layer 1", {4, 1, 28, 28}, {32, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},
      {"CNN layer 2", {4, 32, 14, 14}, {64, 32, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},
      // Empty dims: no images, no output channels, no input channels.
      {"empty batch", {0, 3, 5, 5}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},
      {"no output channels", {2, 3, 5, 5}, {0, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},
      {"no input channels", {2, 0, 5, 5}, {4, 0, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},
  };
}

// The output's sizes for a case, from the CPU forward.
DimVector output_sizes(const ConvCase& c, const Tensor& input, const Tensor& weight) {
  return DimVector(conv2d(input, weight, {}, c.stride, c.padding, c.dilation, c.groups).sizes());
}

// All three ops on both devices; `view` makes the layout of every operand on each device.
void check_case(const ConvCase& c, DType dtype, unsigned seed,
                const std::function<Tensor(const Tensor&)>& view, const std::string& layout) {
  const std::string what = c.name + " " + std::string(dtype_name(dtype)) + " " + layout;
  const Tensor input = random_quarters(c.input, dtype, seed);
  const Tensor weight = random_quarters(c.weight, dtype, seed + 1);
  const Tensor bias = c.bias ? random_quarters({c.weight[0]}, dtype, seed + 2) : Tensor();
  const Tensor grad = random_quarters(output_sizes(c, input, weight), dtype, seed + 3);
  const Tensor gpu_input = view(input.to(kGpu)), gpu_weight = view(weight.to(kGpu));
  const Tensor gpu_grad = view(grad.to(kGpu));
  const Tensor gpu_bias = c.bias ? bias.to(kGpu) : Tensor();
  expect_parity(conv2d(input, weight, bias, c.stride, c.padding, c.dilation, c.groups),
                conv2d(gpu_input, gpu_weight, gpu_bias, c.stride, c.padding, c.dilation, c.groups),
                "conv2d " + what);
  expect_parity(
      conv2d_backward_input(grad, weight, c.input, c.stride, c.padding, c.dilation, c.groups),
      conv2d_backward_input(gpu_grad, gpu_weight, c.input, c.stride, c.padding, c.dilation,
                            c.groups),
      "conv2d_backward_input " + what);
  expect_parity(
      conv2d_backward_weight(grad, input, c.weight, c.stride, c.padding, c.dilation, c.groups),
      conv2d_backward_weight(gpu_grad, gpu_input, c.weight, c.stride, c.padding, c.dilation,
                             c.groups),
      "conv2d_backward_weight " + what);
}

// Restores the TF32 switch when the test ends.
struct Tf32Guard {
  bool saved = allow_tf32();
  ~Tf32Guard() { set_allow_tf32(saved); }
};

// 1 + 2^-12 is exact in float32 but rounds to 1 in TF32 (10 mantissa bits): with TF32 the sums
// below would lose 2.4e-4 of their value. With the switch off all three ops must be exact (the
// sums, at most 144 (1 + 2^-12), need 20 significant bits). With it on they must still be
// within TF32's rounding (3e-4), whether or not cuDNN picks tensor-core kernels.
void expect_no_tf32_while_the_switch_is_off() {
  const Tf32Guard restore;
  const double value = 1.0 + std::ldexp(1.0, -12);
  const TensorOptions gpu_float = TensorOptions(DType::Float32).device(kGpu);
  const Tensor input = full({2, 16, 6, 6}, value, gpu_float);
  const Tensor weight = full({8, 16, 3, 3}, 1.0, gpu_float);
  const Tensor grad = full({2, 8, 4, 4}, value, gpu_float);
  for (bool tf32 : {false, true}) {
    set_allow_tf32(tf32);
    const double rtol = tf32 ? 3e-4 : 0.0;
    const std::string mode = tf32 ? " (TF32 allowed)" : " (TF32 off)";
    // Every output sums C kH kW = 144 products value * 1.
    testing::expect_close(conv2d(input, weight).to(kCPU),
                          std::vector<double>(2 * 8 * 4 * 4, 144 * value), rtol, 0.0,
                          "conv2d" + mode);
    // The input's gradient at (y, x) sums O times the windows covering it: 8 * value at a corner.
    const Tensor grad_input = conv2d_backward_input(grad, weight, {2, 16, 6, 6}).to(kCPU);
    EXPECT_NEAR(testing::element(grad_input, 0), 8 * value, rtol * 8 * value) << mode;
    // The weight's gradient, for an input of ones, sums N Ho Wo = 32 products value * 1.
    const Tensor ones = full({2, 16, 6, 6}, 1.0, gpu_float);
    testing::expect_close(conv2d_backward_weight(grad, ones, {8, 16, 3, 3}).to(kCPU),
                          std::vector<double>(8 * 16 * 9, 32 * value), rtol, 0.0,
                          "conv2d_backward_weight" + mode);
  }
}

TEST(CudaConvTest, Float32UsesNoTf32WhileTheSwitchIsOff) {
  SKIP_WITHOUT_GPU();
  expect_no_tf32_while_the_switch_is_off();
}

// Restores the benchmark switch when the test ends.
struct ConvBenchmarkGuard {
  bool saved = conv_benchmark();
  explicit ConvBenchmarkGuard(bool on) { set_conv_benchmark(on); }
  ~ConvBenchmarkGuard() { set_conv_benchmark(saved); }
};

// Benchmark mode measures cuDNN's algorithms on the first call of each shape (new shapes here:
// other batch sizes than the tests above) and may pick others than the heuristics: the results
// must still match the CPU, be the same bits on every call, and use no TF32 while it is off.
TEST(CudaConvTest, BenchmarkModeMatchesTheCpuIsDeterministicAndKeepsTf32Off) {
  SKIP_WITHOUT_GPU();
  const ConvBenchmarkGuard benchmark(true);
  unsigned seed = 100;
  // Under compute-sanitizer, where cuDNN's search over every algorithm is slowest, float32 and
  // every third case (Note [GPU tests under compute-sanitizer]).
  const bool reduced = grove::testing::under_compute_sanitizer();
  std::vector<DType> dtypes{DType::Float32};
  if (!reduced) dtypes.push_back(DType::Float64);
  const std::vector<ConvCase> cases = conv_cases();
  for (std::size_t i = 0; i < cases.size(); i += reduced ? 3 : 1) {
    ConvCase c = cases[i];
    c.input[0] += 1;  // shapes no earlier test made a plan for
    for (DType dtype : dtypes) {
      check_case(
          c, dtype, seed, [](const Tensor& t) { return t; }, "contiguous, benchmark mode");
      seed += 4;
    }
  }
  // Deterministic: the measured plans must not add with atomics in a varying order.
  // A batch of 8 under compute-sanitizer (Note [GPU tests under compute-sanitizer]).
  const std::int64_t batch = grove::testing::sanitizer_scaled(128, 8);
  const Tensor input = random_quarters({batch, 32, 14, 14}, DType::Float32, 1).to(kGpu);
  const Tensor weight = random_quarters({64, 32, 3, 3}, DType::Float32, 2).to(kGpu);
  const Tensor grad = random_quarters({batch, 64, 14, 14}, DType::Float32, 3).to(kGpu);
  const DimVector one{1, 1};
  const Tensor grad_input = conv2d_backward_input(grad, weight, input.sizes(), one, one).to(kCPU);
  const Tensor grad_weight = conv2d_backward_weight(grad, input, weight.sizes(), one, one).to(kCPU);
  for (int repeat = 0; repeat < 3; ++repeat) {
    EXPECT_EQ(
        testing::elements(conv2d_backward_input(grad, weight, input.sizes(), one, one).to(kCPU)),
        testing::elements(grad_input));
    EXPECT_EQ(
        testing::elements(conv2d_backward_weight(grad, input, weight.sizes(), one, one).to(kCPU)),
        testing::elements(grad_weight));
  }
  expect_no_tf32_while_the_switch_is_off();
}

// In benchmark mode, a shape measured eagerly is captured with its measured plan, and a shape
// first seen inside the capture gets the heuristic plan there (measuring would synchronise and
// break the capture); both replay correctly.
TEST(CudaConvTest, BenchmarkModeCapturesMeasuredAndUnmeasuredShapes) {
  SKIP_WITHOUT_GPU();
  const ConvBenchmarkGuard benchmark(true);
  const Stream stream = new_stream(kGpu);
  StreamGuard guard(stream);
  const Tensor input = random_quarters({5, 3, 9, 9}, DType::Float32, 11);
  const Tensor weight = random_quarters({4, 3, 3, 3}, DType::Float32, 12);
  const Tensor input2 = random_quarters({3, 2, 7, 8}, DType::Float32, 13);
  const Tensor weight2 = random_quarters({6, 2, 3, 3}, DType::Float32, 14);
  const Tensor gpu_input = input.to(kGpu), gpu_weight = weight.to(kGpu);
  const Tensor gpu_input2 = input2.to(kGpu), gpu_weight2 = weight2.to(kGpu);
  (void)conv2d(gpu_input, gpu_weight, {}, {1, 1}, {1, 1});  // measured eagerly
  synchronize(stream);
  DeviceGraph graph(kGpu);
  graph.begin_capture(stream);
  const Tensor measured = conv2d(gpu_input, gpu_weight, {}, {1, 1}, {1, 1});
  const Tensor unmeasured = conv2d(gpu_input2, gpu_weight2, {}, {1, 1}, {1, 1});
  graph.end_capture();
  graph.replay();
  expect_parity(conv2d(input, weight, {}, {1, 1}, {1, 1}), measured, "measured shape, replay");
  expect_parity(conv2d(input2, weight2, {}, {1, 1}, {1, 1}), unmeasured,
                "unmeasured shape, replay");
}

// Plans for a new shape are made while the graph captures (heuristics only, nothing is timed);
// the replays run the captured cuDNN kernels on new input values.
TEST(CudaConvTest, CapturedForwardAndBackwardReplayWithNewInputs) {
  SKIP_WITHOUT_GPU();
  const Stream stream = new_stream(kGpu);
  StreamGuard guard(stream);
  const ConvCase c{"captured", {6, 3, 10, 11}, {5, 3, 3, 3}, {1, 2}, {1, 1}, {1, 1}, 1, true};
  // Eager warm-up on another shape: the thread's cuDNN handle exists before the capture.
  const Tensor warm = random_quarters({1, 3, 5, 5}, DType::Float32, 1).to(kGpu);
  (void)conv2d(warm, random_quarters({2, 3, 3, 3}, DType::Float32, 2).to(kGpu));
  synchronize(stream);

  const Tensor input = random_quarters(c.input, DType::Float32, 3);
  const Tensor weight = random_quarters(c.weight, DType::Float32, 4);
  const Tensor bias = random_quarters({5}, DType::Float32, 5);
  const Tensor grad = random_quarters(output_sizes(c, input, weight), DType::Float32, 6);
  const Tensor gpu_input = input.to(kGpu), gpu_weight = weight.to(kGpu), gpu_bias = bias.to(kGpu);
  const Tensor gpu_grad = grad.to(kGpu);
  synchronize(stream);
  auto forward = [&](const Tensor& x, const Tensor& w, const Tensor& b) {
    return conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
  };
  auto backward_input = [&](const Tensor& g, const Tensor& w) {
    return conv2d_backward_input(g, w, c.input, c.stride, c.padding, c.dilation, c.groups);
  };
  auto backward_weight = [&](const Tensor& g, const Tensor& x) {
    return conv2d_backward_weight(g, x, c.weight, c.stride, c.padding, c.dilation, c.groups);
  };

  DeviceGraph graph(kGpu);
  graph.begin_capture(stream);
  const Tensor out = forward(gpu_input, gpu_weight, gpu_bias);
  const Tensor grad_input = backward_input(gpu_grad, gpu_weight);
  const Tensor grad_weight = backward_weight(gpu_grad, gpu_input);
  graph.end_capture();
  EXPECT_GE(graph.num_nodes(), 3u);

  graph.replay();
  expect_parity(forward(input, weight, bias), out, "conv2d, first replay");
  expect_parity(backward_input(grad, weight), grad_input, "conv2d_backward_input, first replay");
  expect_parity(backward_weight(grad, input), grad_weight, "conv2d_backward_weight, first replay");
  const Tensor input2 = random_quarters(c.input, DType::Float32, 7);
  const Tensor grad2 = random_quarters(grad.sizes(), DType::Float32, 8);
  gpu_input.copy_(input2);  // new values in the captured inputs' memory
  gpu_grad.copy_(grad2);
  graph.replay();
  expect_parity(forward(input2, weight, bias), out, "conv2d, second replay");
  expect_parity(backward_input(grad2, weight), grad_input, "conv2d_backward_input, second replay");
  expect_parity(backward_weight(grad2, input2), grad_weight,
                "conv2d_backward_weight, second replay");
}

}  // namespace
}  // namespace grove::ops
