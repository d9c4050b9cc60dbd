// GPU parity tests for matmul, bmm and linear (ops/cuda/linalg.cpp, cuBLASLt and cuBLAS) against
// the CPU kernels (ops/cpu/linalg.cpp): every rank combination of matmul, broadcast batches,
// transposed, sliced, misaligned and expanded operands, empty dims, 0-d operands, linear with and
// without a bias, float64, the TF32 switch, and a capture replayed with new inputs. Each test skips
// without a device.
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

Tensor same(const Tensor& t) {
  return t;
}

// Restores the TF32 switch when a test ends, whatever it set.
class Tf32Guard {
 public:
  explicit Tf32Guard(bool allow) : saved_(allow_tf32()) { set_allow_tf32(allow); }
  ~Tf32Guard() { set_allow_tf32(saved_); }
  Tf32Guard(const Tf32Guard&) = delete;
  Tf32Guard& operator=(const Tf32Guard&) = delete;

 private:
  bool saved_;
};

using BinaryOp = std::function<Tensor(const Tensor&, const Tensor&)>;

// The base tensors are made on the CPU, copied to the GPU, and the same view is taken on each.
void check_binary(const std::string& name, const BinaryOp& op, const Layout& a_layout,
                  const Layout& b_layout, DType dtype) {
  const Tensor a_base = testing::random_quarters(a_layout.base, dtype, 3);
  const Tensor b_base = testing::random_quarters(b_layout.base, dtype, 4);
  const Tensor cpu_result = op(a_layout.view(a_base), b_layout.view(b_base));
  const Tensor gpu_result = op(a_layout.view(a_base.to(kGpu)), b_layout.view(b_base.to(kGpu)));
  expect_parity(cpu_result, gpu_result,
                name + " " + a_layout.name + " x " + b_layout.name + " " + str(dtype));
}

const std::vector<DType> kFloatTypes = {DType::Float32, DType::Float64};

TEST(CudaLinalgTest, MatmulEveryRankCombination) {
  SKIP_WITHOUT_GPU();
  // (a sizes, b sizes): see matmul() in ops/linalg.h for the result of each.
  const std::vector<std::pair<DimVector, DimVector>> shapes = {
      {{7}, {7}},                    // dot product
      {{5, 7}, {7, 3}},              // matrix product
      {{7}, {7, 3}},                 // vector-matrix
      {{5, 7}, {7}},                 // matrix-vector
      {{7}, {4, 7, 3}},              // vector, batched matrix
      {{4, 5, 7}, {7}},              // batched matrix, vector
      {{4, 5, 7}, {7, 3}},           // b shared: the batch folds into M
      {{5, 7}, {4, 7, 3}},           // a broadcast over b's batch (stride 0)
      {{4, 5, 7}, {4, 7, 3}},        // one strided batch
      {{2, 1, 5, 7}, {3, 7, 3}},     // broadcast on both sides: a loop of batches
      {{1, 5, 7}, {3, 7, 3}},        // a size-1 batch dim
      {{2, 3, 5, 7}, {2, 3, 7, 3}},  // two batch dims coalesced into one
      {{2, 3, 1, 7}, {3, 7, 1}},     // 1 x 1 results
      {{1, 1}, {1, 1}},              // the smallest product
      {{33, 130}, {130, 65}},        // odd sizes past one tile
  };
  for (DType dtype : kFloatTypes) {
    for (const auto& [a_sizes, b_sizes] : shapes) {
      check_binary(
          "matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b); },
          {str(a_sizes), a_sizes, same}, {str(b_sizes), b_sizes, same}, dtype);
    }
  }
}

TEST(CudaLinalgTest, MatmulStridedOperands) {
  SKIP_WITHOUT_GPU();
  auto t = [](const Tensor& x) { return x.transpose(-1, -2); };
  // Rows 0, 2, 4, ...: row-major with a leading dimension of twice the row length.
  auto every_other_row = [](const Tensor& x) { return x.slice(-2, 0, x.size(-2), 2); };
  // Columns 0, 2, 4, ...: no unit-stride dim, so the operand is copied first.
  auto every_other_column = [](const Tensor& x) { return x.slice(-1, 0, x.size(-1), 2); };
  // Drops the first column: the data starts 4 or 8 bytes past an aligned address.
  auto misaligned = [](const Tensor& x) { return x.slice(-1, 1, x.size(-1)); };
  auto expanded = [](const Tensor& x) { return x.expand({4, x.size(0), x.size(1)}); };
  auto batch_inside = [](const Tensor& x) { return x.permute({1, 0, 2}); };  // (5,4,7) -> (4,5,7)
  // (a layout, b layout) pairs; each a is (.., 5, 7) and each b (.., 7, 3) after its view.
  const std::vector<std::pair<Layout, Layout>> cases = {
      {{"transposed", {7, 5}, t}, {"contiguous", {7, 3}, same}},
      {{"contiguous", {5, 7}, same}, {"transposed", {3, 7}, t}},
      {{"transposed", {7, 5}, t}, {"transposed", {3, 7}, t}},
      {{"every other row", {10, 7}, every_other_row},
       {"every other row", {14, 3}, every_other_row}},
      {{"every other column", {5, 14}, every_other_column}, {"contiguous", {7, 3}, same}},
      {{"contiguous", {5, 7}, same}, {"every other column", {7, 6}, every_other_column}},
      {{"misaligned", {5, 8}, misaligned}, {"misaligned", {7, 4}, misaligned}},
      {{"batched misaligned", {4, 5, 8}, misaligned}, {"contiguous", {7, 3}, same}},
      {{"batched misaligned", {4, 5, 8}, misaligned}, {"batched", {4, 7, 3}, same}},
      {{"batched transposed", {4, 7, 5}, t}, {"batched transposed", {4, 3, 7}, t}},
      {{"batched", {4, 5, 7}, same}, {"expanded", {7, 3}, expanded}},
      {{"batch dim inside", {5, 4, 7}, batch_inside}, {"contiguous", {7, 3}, same}},
      {{"batch dim inside", {5, 4, 7}, batch_inside}, {"batched", {4, 7, 3}, same}},
  };
  for (DType dtype : kFloatTypes) {
    for (const auto& [a_layout, b_layout] : cases) {
      check_binary(
          "matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b); }, a_layout,
          b_layout, dtype);
    }
    auto strided_vector = [](const Tensor& x) { return x.slice(0, 0, x.size(0), 2); };
    check_binary(
        "matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b); },
        {"strided vector", {14}, strided_vector}, {"transposed", {3, 7}, t}, dtype);
    check_binary(
        "matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b); },
        {"transposed", {7, 5}, t}, {"strided vector", {14}, strided_vector}, dtype);
  }
}

TEST(CudaLinalgTest, Bmm) {
  SKIP_WITHOUT_GPU();
  auto t = [](const Tensor& x) { return x.transpose(1, 2); };
  auto bmm_op = [](const Tensor& a, const Tensor& b) { return bmm(a, b); };
  for (DType dtype : kFloatTypes) {
    check_binary("bmm", bmm_op, {"contiguous", {6, 5, 7}, same}, {"contiguous", {6, 7, 3}, same},
                 dtype);
    check_binary("bmm", bmm_op, {"transposed", {6, 7, 5}, t}, {"contiguous", {6, 7, 3}, same},
                 dtype);
    check_binary("bmm", bmm_op, {"contiguous", {6, 5, 7}, same}, {"transposed", {6, 3, 7}, t},
                 dtype);
    // Attention-like: 128 products of 64x32 @ 32x64.
    check_binary("bmm", bmm_op, {"contiguous", {128, 64, 32}, same},
                 {"contiguous", {128, 32, 64}, same}, dtype);
  }
}

TEST(CudaLinalgTest, EmptyDims) {
  SKIP_WITHOUT_GPU();
  auto mm = [](const Tensor& a, const Tensor& b) { return matmul(a, b); };
  for (DType dtype : kFloatTypes) {
    // K = 0: the empty sum, zeros (the output memory is fresh, so this checks it is written).
    check_binary("matmul", mm, {"k=0", {5, 0}, same}, {"k=0", {0, 3}, same}, dtype);
    check_binary("matmul", mm, {"k=0", {4, 5, 0}, same}, {"k=0", {0, 3}, same}, dtype);
    check_binary("matmul", mm, {"k=0", {0}, same}, {"k=0", {0}, same}, dtype);
    check_binary("matmul", mm, {"m=0", {0, 7}, same}, {"n=3", {7, 3}, same}, dtype);
    check_binary("matmul", mm, {"m=5", {5, 7}, same}, {"n=0", {7, 0}, same}, dtype);
    check_binary("matmul", mm, {"batch=0", {0, 5, 7}, same}, {"n=3", {7, 3}, same}, dtype);
    // linear with in_features = 0: the bias on every row.
    const Tensor x = testing::random_quarters({4, 0}, dtype, 5);
    const Tensor weight = testing::random_quarters({3, 0}, dtype, 6);
    const Tensor bias = testing::random_quarters({3}, dtype, 7);
    expect_parity(linear(x, weight, bias), linear(x.to(kGpu), weight.to(kGpu), bias.to(kGpu)),
                  "linear k=0 with bias");
    expect_parity(linear(x, weight), linear(x.to(kGpu), weight.to(kGpu)), "linear k=0");
  }
}

// 0-d operands are refused by the argument checks before any kernel, as on the CPU.
TEST(CudaLinalgTest, ZeroDimOperandsAreRefused) {
  SKIP_WITHOUT_GPU();
  const Tensor scalar = full(IntArrayRef(), 2.0f, TensorOptions(kGpu));
  const Tensor vector = ones({3}, TensorOptions(kGpu));
  EXPECT_THROW(matmul(scalar, vector), Error);
  EXPECT_THROW(matmul(vector, scalar), Error);
  EXPECT_THROW(linear(scalar, ones({1, 1}, TensorOptions(kGpu))), Error);
}

TEST(CudaLinalgTest, Linear) {
  SKIP_WITHOUT_GPU();
  auto t = [](const Tensor& x) { return x.transpose(-1, -2); };
  auto every_other = [](const Tensor& x) { return x.slice(0, 0, x.size(0), 2); };
  struct Case {
    Layout x;
    Layout weight;  // (3, 7) after the view
    Layout bias;    // (3) after the view; an empty base means no bias
  };
  const std::vector<Case> cases = {
      {{"2-d", {5, 7}, same}, {"contiguous", {3, 7}, same}, {"bias", {3}, same}},
      {{"2-d", {5, 7}, same}, {"contiguous", {3, 7}, same}, {"none", {}, same}},
      {{"3-d", {2, 5, 7}, same}, {"contiguous", {3, 7}, same}, {"bias", {3}, same}},
      {{"3-d", {2, 5, 7}, same}, {"contiguous", {3, 7}, same}, {"none", {}, same}},
      {{"1-d", {7}, same}, {"contiguous", {3, 7}, same}, {"bias", {3}, same}},
      {{"3-d transposed", {2, 7, 5}, t}, {"contiguous", {3, 7}, same}, {"bias", {3}, same}},
      {{"3-d transposed", {2, 7, 5}, t}, {"contiguous", {3, 7}, same}, {"none", {}, same}},
      {{"2-d", {5, 7}, same}, {"transposed", {7, 3}, t}, {"strided bias", {6}, every_other}},
      {{"2-d transposed", {7, 5}, t}, {"transposed", {7, 3}, t}, {"bias", {3}, same}},
      {{"misaligned", {5, 8}, [](const Tensor& x) { return x.slice(1, 1, 8); }},
       {"contiguous", {3, 7}, same},
       {"misaligned bias", {4}, [](const Tensor& x) { return x.slice(0, 1, 4); }}},
  };
  for (DType dtype : kFloatTypes) {
    for (const Case& c : cases) {
      const Tensor x = testing::random_quarters(c.x.base, dtype, 8);
      const Tensor weight = testing::random_quarters(c.weight.base, dtype, 9);
      const std::string what =
          "linear " + c.x.name + " x " + c.weight.name + " + " + c.bias.name + " " + str(dtype);
      if (c.bias.base.empty()) {
        expect_parity(linear(c.x.view(x), c.weight.view(weight)),
                      linear(c.x.view(x.to(kGpu)), c.weight.view(weight.to(kGpu))), what);
        continue;
      }
      const Tensor bias = testing::random_quarters(c.bias.base, dtype, 10);
      expect_parity(
          linear(c.x.view(x), c.weight.view(weight), c.bias.view(bias)),
          linear(c.x.view(x.to(kGpu)), c.weight.view(weight.to(kGpu)), c.bias.view(bias.to(kGpu))),
          what);
    }
  }
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

}  // namespace
}  // namespace grove::ops
