// matmul, bmm and linear on the GPU (ops/cuda/linalg.cpp, cuBLASLt and cuBLAS) where a table of
// values (the parity table, tests/ops/cuda_parity_test.cpp, which holds every rank combination,
// broadcast batches, the layouts and empty dims) cannot say enough: 0-d operands refused, the
// MLP's shapes with inexact values, the TF32 switch, and a capture replayed with new inputs. Each
// test skips without a device.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "core/device_graph.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "ops/linalg.h"
#include "ops/precision.h"
#include "tests/ops/cuda_test_util.h"

namespace grove::ops {
namespace {

using testing::elements;
using testing::expect_close;
using testing::kGpu;
using testing::Layout;

// Tolerances: inputs are multiples of 1/4 in [-3, 3] (random_quarters), so every product and
// every partial sum up to K = 1000 is exact in float32 and both devices should agree exactly
// whatever the summation order; 1e-4 relative (1e-5 absolute near zero) is the contract for
// float32 with TF32 off, and catches any wrong element. float64: exact too; 1e-12.
void expect_parity(const Tensor& cpu_result, const Tensor& gpu_result, const std::string& what) {
  testing::expect_device_parity(cpu_result, gpu_result, what, {1e-4, 1e-5, 1e-12, 1e-12});
}

// Sets one of ops/precision.h's process-wide switches for a test and restores it at the end.
template <bool (*kGet)(), void (*kSet)(bool)>
class SwitchGuard {
 public:
  explicit SwitchGuard(bool on) : saved_(kGet()) { kSet(on); }
  ~SwitchGuard() { kSet(saved_); }
  SwitchGuard(const SwitchGuard&) = delete;
  SwitchGuard& operator=(const SwitchGuard&) = delete;

 private:
  bool saved_;
};
using Tf32Guard = SwitchGuard<allow_tf32, set_allow_tf32>;
using MatmulBenchmarkGuard = SwitchGuard<matmul_benchmark, set_matmul_benchmark>;

using BinaryOp = std::function<Tensor(const Tensor&, const Tensor&)>;

const std::vector<DType> kFloatTypes = {DType::Float32, DType::Float64};

// 0-d operands are refused by the argument checks before any kernel, as on the CPU.
TEST(CudaLinalgTest, ZeroDimOperandsAreRefused) {
  SKIP_WITHOUT_GPU();
  const Tensor scalar = full(IntArrayRef(), 2.0f, TensorOptions(kGpu));
  const Tensor vector = ones({3}, TensorOptions(kGpu));
  EXPECT_THROW(matmul(scalar, vector), Error);
  EXPECT_THROW(matmul(vector, scalar), Error);
  EXPECT_THROW(linear(scalar, ones({1, 1}, TensorOptions(kGpu))), Error);
}

// Uniform values in [-1, 1): unlike quarters, these need all 24 bits of a float32 mantissa, so
// rounding (TF32's 10 bits, summation order) shows.
Tensor uniform(IntArrayRef sizes, unsigned seed) {
  return testing::random_tensor(sizes, DType::Float32, -1.0, 1.0, seed);
}

TEST(CudaLinalgTest, MlpShapesWithRealValues) {
  SKIP_WITHOUT_GPU();
  Tf32Guard tf32(false);
  const Tensor x = uniform({128, 784}, 11);
  const Tensor weight = uniform({256, 784}, 12);
  const Tensor bias = uniform({256}, 13);
  // Tolerance: a sum of 784 products of values in [-1, 1) is about 8 in size; float32
  // summation in two different orders differs by about sqrt(784) * 2^-24 * 8 ~ 1e-5 absolute;
  // 1e-4 relative with a 1e-4 floor leaves room.
  testing::expect_device_parity(linear(x, weight, bias),
                                linear(x.to(kGpu), weight.to(kGpu), bias.to(kGpu)),
                                "linear 128x784 @ 784x256", {1e-4, 1e-4, 0, 0});
  const Tensor grad = uniform({128, 256}, 14);
  testing::expect_device_parity(matmul(grad.t(), x), matmul(grad.to(kGpu).t(), x.to(kGpu)),
                                "weight gradient 256x128 @ 128x784", {1e-4, 1e-4, 0, 0});
  testing::expect_device_parity(matmul(grad, weight), matmul(grad.to(kGpu), weight.to(kGpu)),
                                "input gradient 128x256 @ 256x784", {1e-4, 1e-4, 0, 0});
}

// Note [Packing batches for one strided call]: attention's heads, (B, H, T, D) views of
// (B, T, 3C) rows, have batch dims that do not merge; the kernel packs them into one strided
// batch. The products of every layout the GPT's forward and backward make (q @ k^T, att @ v,
// and their gradients' transposed operands) must equal the CPU's; so must a product whose
// operand broadcasts over one of two such dims, which is left as a loop.
TEST(CudaLinalgTest, AttentionHeadsAsPackedBatches) {
  SKIP_WITHOUT_GPU();
  // A batch of 5: a loop of 5 calls, enough to be packed (kPackFromCalls).
  const std::int64_t batch = 5, length = 5, heads = 4, width = 6;
  for (const DType dtype : kFloatTypes) {
    const Tensor qkv = testing::random_quarters({batch, length, 3 * heads * width}, dtype, 21);
    auto split_heads = [&](const Tensor& rows, std::int64_t part) {
      return rows.slice(2, part * heads * width, (part + 1) * heads * width)
          .view({batch, length, heads, width})
          .transpose(1, 2);  // (B, H, T, D), not contiguous
    };
    auto both = [&](const std::function<Tensor(const Tensor&)>& product, const std::string& what) {
      expect_parity(product(qkv), product(qkv.to(kGpu)), what);
    };
    both(
        [&](const Tensor& x) {
          return matmul(split_heads(x, 0), split_heads(x, 1).transpose(-2, -1));
        },
        "q @ k^T");
    both(
        [&](const Tensor& x) {
          return matmul(split_heads(x, 0).transpose(-2, -1), split_heads(x, 2));
        },
        "q^T @ v (a weight-gradient layout)");
    both(
        [&](const Tensor& x) {
          const Tensor att = matmul(split_heads(x, 0), split_heads(x, 1).transpose(-2, -1));
          return matmul(att, split_heads(x, 2));
        },
        "att @ v");
    both(
        [&](const Tensor& x) {
          const Tensor shared = split_heads(x, 1).slice(0, 0, 1);  // (1, H, T, D): broadcast over B
          return matmul(split_heads(x, 0), shared.transpose(-2, -1));
        },
        "q @ k^T with k broadcast over the batch");
    both(
        [&](const Tensor& x) {  // (B, 1, H, T, D): a size-1 dim between the two batch dims
          return matmul(split_heads(x, 0).unsqueeze(1),
                        split_heads(x, 1).unsqueeze(1).transpose(-2, -1));
        },
        "q @ k^T with a size-1 batch dim");
  }
}

TEST(CudaLinalgTest, Tf32IsCloseButNotEqual) {
  SKIP_WITHOUT_GPU();
  const Tensor a = uniform({64, 1024}, 15);
  const Tensor b = uniform({1024, 64}, 16);
  const Tensor gpu_a = a.to(kGpu);
  const Tensor gpu_b = b.to(kGpu);
  const Tensor expected = matmul(a, b);
  Tensor exact, tf32;
  {
    Tf32Guard guard(false);
    exact = matmul(gpu_a, gpu_b).to(kCPU);
  }
  {
    Tf32Guard guard(true);
    tf32 = matmul(gpu_a, gpu_b).to(kCPU);
  }
  // TF32 off: float32 accumulation in another order, about 1e-6 of the sums' size (~20).
  expect_close(exact, elements(expected), 1e-4, 1e-3, "tf32 off");
  // TF32 on: inputs rounded to 10 mantissa bits (2^-11 relative); the 1024 product errors add
  // up like a random walk to about 32 * 3e-4 ~ 0.01 absolute, so 1e-2 relative with a floor of
  // 0.2 (sums near 0) holds with a wide margin.
  expect_close(tf32, elements(expected), 1e-2, 0.2, "tf32 on");
  // ...and it really is another computation: with 4096 results of 1024 rounded products, some
  // differ from the float32 ones.
  EXPECT_NE(elements(exact), elements(tf32)) << "TF32 on gave bit-equal results to TF32 off";
}

TEST(CudaLinalgTest, CapturedMatmulReplaysWithNewInputs) {
  SKIP_WITHOUT_GPU();
  // A fresh stream: its first GEMM (and its cuBLAS workspace) happens inside the capture.
  const Stream stream = new_stream(kGpu);
  StreamGuard guard(stream);
  for (DType dtype : kFloatTypes) {
    const Tensor a = testing::random_quarters({3, 33, 65}, dtype, 17);
    const Tensor w = testing::random_quarters({17, 65}, dtype, 18);
    const Tensor bias = testing::random_quarters({17}, dtype, 19);
    const Tensor b = testing::random_quarters({3, 17, 9}, dtype, 20);
    const Tensor gpu_a = a.to(kGpu);
    const Tensor gpu_w = w.to(kGpu);
    const Tensor gpu_bias = bias.to(kGpu);
    const Tensor gpu_b = b.to(kGpu);
    // linear (bias epilogue or copy + beta = 1), then a batched product with a transposed view.
    auto step = [](const Tensor& x, const Tensor& weight, const Tensor& bias_, const Tensor& y) {
      return matmul(linear(x, weight, bias_), y);
    };
    DeviceGraph graph(kGpu);
    graph.begin_capture(stream);
    const Tensor out = step(gpu_a, gpu_w, gpu_bias, gpu_b);
    graph.end_capture();
    EXPECT_GE(graph.num_nodes(), 2u);

    graph.replay();
    expect_parity(step(a, w, bias, b), out, "first replay " + str(dtype));
    const Tensor a2 = testing::random_quarters({3, 33, 65}, dtype, 21);
    const Tensor b2 = testing::random_quarters({3, 17, 9}, dtype, 22);
    gpu_a.copy_(a2);  // new values in the captured inputs' memory
    gpu_b.copy_(b2);
    graph.replay();
    expect_parity(step(a2, w, bias, b2), out, "replay with new inputs " + str(dtype));
  }
}

// Note [Timing matmul kernels]: benchmark mode times cuBLASLt's candidates on the first call of
// each shape and may keep another kernel than the heuristic's. The products of the models' shapes
// (shapes no earlier test made a plan for: batch 96) must still equal the CPU's, the same bits
// on every later call; TF32 stays off (quarters make every product exact, so any TF32 rounding
// of the uniform values below would show as a difference over 1e-4).
TEST(CudaLinalgTest, BenchmarkModeMatchesTheCpuAndRepeatsItsBits) {
  SKIP_WITHOUT_GPU();
  const MatmulBenchmarkGuard benchmark(true);
  Tf32Guard tf32(false);
  const Tensor x = uniform({96, 784}, 31);
  const Tensor weight = uniform({256, 784}, 32);
  const Tensor bias = uniform({256}, 33);
  const Tensor grad = uniform({96, 256}, 34);
  const Tensor gx = x.to(kGpu), gw = weight.to(kGpu), gb = bias.to(kGpu), gg = grad.to(kGpu);
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&, const Tensor&,
                                                                const Tensor&, const Tensor&)>>>
      products = {
          {"linear with bias", [](auto& x_, auto& w, auto& b, auto&) { return linear(x_, w, b); }},
          {"weight gradient", [](auto& x_, auto&, auto&, auto& g) { return matmul(g.t(), x_); }},
          {"input gradient", [](auto&, auto& w, auto&, auto& g) { return matmul(g, w); }},
          {"batched", [](auto& x_, auto&, auto&, auto&) {
             return bmm(x_.view({12, 8, 784}), x_.view({12, 8, 784}).transpose(1, 2));
           }},
      };
  for (const auto& [name, product] : products) {
    const Tensor first = product(gx, gw, gb, gg);  // timed, then computed by the pick
    testing::expect_device_parity(product(x, weight, bias, grad), first, name,
                                  {1e-4, 1e-4, 0, 0});
    const std::vector<double> bits = elements(first.to(kCPU));
    for (int repeat = 0; repeat < 2; ++repeat) {
      EXPECT_EQ(elements(product(gx, gw, gb, gg).to(kCPU)), bits) << name << ", call " << repeat;
    }
  }
}

// In benchmark mode a shape measured eagerly is captured with its measured kernel, and a shape
// first seen inside the capture gets the heuristic's (timing would synchronise and break the
// capture); both replay correctly, and the replays equal eager calls of the same kernels.
TEST(CudaLinalgTest, BenchmarkModeCapturesMeasuredAndUnmeasuredShapes) {
  SKIP_WITHOUT_GPU();
  const MatmulBenchmarkGuard benchmark(true);
  const Stream stream = new_stream(kGpu);
  StreamGuard guard(stream);
  const Tensor a = testing::random_quarters({40, 70}, DType::Float32, 41);
  const Tensor w = testing::random_quarters({30, 70}, DType::Float32, 42);
  const Tensor bias = testing::random_quarters({30}, DType::Float32, 43);
  const Tensor a2 = testing::random_quarters({24, 52}, DType::Float32, 44);
  const Tensor b2 = testing::random_quarters({52, 36}, DType::Float32, 45);
  const Tensor ga = a.to(kGpu), gw = w.to(kGpu), gbias = bias.to(kGpu);
  const Tensor ga2 = a2.to(kGpu), gb2 = b2.to(kGpu);
  (void)linear(ga, gw, gbias);  // measured eagerly
  synchronize(stream);
  DeviceGraph graph(kGpu);
  graph.begin_capture(stream);
  const Tensor measured = linear(ga, gw, gbias);
  const Tensor unmeasured = matmul(ga2, gb2);
  graph.end_capture();
  graph.replay();
  expect_parity(linear(a, w, bias), measured, "measured shape, replay");
  expect_parity(matmul(a2, b2), unmeasured, "unmeasured shape, replay");
}

}  // namespace
}  // namespace grove::ops
