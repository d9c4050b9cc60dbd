// The CUDA reductions (ops/cuda/reduce.cu) where the parity table (tests/ops/cuda_parity_test.cpp,
// which holds the layouts, dims, keepdim and empty tensors) cannot say enough: sums that do not
// add exactly, and max and argmax on ties and NaN, which must agree on the exact position. Every
// test skips without a CUDA device (CTest label `gpu`).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/tensor.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "tests/ops/cuda_test_util.h"

namespace grove::ops {
namespace {

using testing::elements;
using testing::expect_close;
using testing::kGpu;
using testing::kNaN;
using testing::Layout;

// Tolerances: both devices accumulate floating-point sums in double and round once, so float32
// results differ by at most an ulp or so (1e-5 relative is a few ulps, 1e-6 absolute near zero).
// float64 sums are added in a different order (threads, then a tree): 1e-12 relative, with an
// absolute floor for var's near-zero results. Integers, bools and indices must be exact.
void expect_parity(const Tensor& cpu_result, const Tensor& gpu_result, const std::string& what) {
  testing::expect_device_parity(cpu_result, gpu_result, what, {1e-5, 1e-6, 1e-12, 1e-14});
}

Tensor random_input(IntArrayRef sizes, DType dtype, unsigned seed, int nan_every = 0) {
  return testing::random_quarters(sizes, dtype, seed, nan_every);
}

std::vector<Layout> layouts() {
  auto same = [](const Tensor& t) { return t; };
  auto transposed = [](const Tensor& t) { return t.transpose(0, 1); };
  auto strided = [](const Tensor& t) { return t.slice(1, 1, t.sizes()[1], 2); };
  auto permuted = [](const Tensor& t) { return t.transpose(0, 2); };
  return {
      {"contiguous", {37, 53}, same},
      {"transposed", {53, 37}, transposed},
      {"strided", {37, 106}, strided},
      {"3-d", {5, 7, 9}, same},
      {"3-d permuted", {9, 7, 5}, permuted},
      {"long rows", {3, 3001}, same},
      {"long columns", {3001, 3}, same},
      {"0-d", {}, same},
      {"empty", {0, 4}, same},
  };
}

std::string label(const std::string& op, DType dtype, const std::string& layout,
                  const DimVector& dims, bool keepdim) {
  std::string text = op + " " + std::string(dtype_name(dtype)) + " " + layout + " dims {";
  for (const std::int64_t d : dims) text += std::to_string(d) + ",";
  return text + "}" + (keepdim ? " keepdim" : "");
}

// Sums of values that do not add exactly: within 1e-5 (float32: a few ulps of the inputs'
// magnitude) or 1e-13 (float64) of the sum of |x|, which bounds the rounding of any order.
TEST(CudaReduceTest, InexactSumsAreCloseRelativeToTheSumOfMagnitudes) {
  SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor x = testing::random_tensor({64, 4099}, dtype, -1.0, 3.0, 7);
    const Tensor y = x.to(kGpu);
    const double tolerance = dtype == DType::Float32 ? 1e-5 : 1e-13;
    for (const DimVector& dims : std::vector<DimVector>{{}, {0}, {1}}) {
      const std::vector<double> expected = elements(sum(x, dims));
      const std::vector<double> got = elements(sum(y, dims).to(kCPU));
      const std::vector<double> magnitude = elements(sum(abs(x), dims));
      ASSERT_EQ(got.size(), expected.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_LE(std::abs(got[i] - expected[i]), tolerance * magnitude[i])
            << dtype_name(dtype) << " element " << i;
      }
      expect_parity(var(x, dims), var(y, dims), label("var", dtype, "random", dims, false));
    }
  }
}

// Note [Splitting a sum over blocks]: few outputs over many elements (a convolution's bias
// gradient: a sum over batch and image per channel, and the whole-tensor sum) are cut into runs
// summed by separate blocks. The sums must stay as close to the CPU's as one block's, NaN and
// infinities must propagate through the partials, and the result must not change between runs.
TEST(CudaReduceTest, SplitSumsOfFewOutputsMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::Float32, DType::Float64}) {
    Tensor x = testing::random_tensor({16, 8, 30, 30}, dtype, -1.0, 3.0, 31);
    const double inf = std::numeric_limits<double>::infinity();
    x.select(1, 2).select(0, 9).select(0, 4).fill_(kNaN);  // channel 2: NaN
    x.select(1, 5).select(0, 3).select(0, 1).fill_(inf);   // channel 5: +inf
    x.select(1, 6).select(0, 0).select(0, 0).fill_(inf);   // channel 6: +inf - inf = NaN
    x.select(1, 6).select(0, 15).select(0, 29).fill_(-inf);
    const Tensor y = x.to(kGpu);
    const DimVector bias_dims = {0, 2, 3};
    expect_parity(sum(x, bias_dims), sum(y, bias_dims),
                  label("sum", dtype, "conv bias gradient", bias_dims, false));
    expect_parity(mean(x, bias_dims, true), mean(y, bias_dims, true),
                  label("mean", dtype, "conv bias gradient", bias_dims, true));
    const Tensor finite = testing::random_tensor({16, 8, 30, 30}, dtype, -1.0, 3.0, 32).to(kGpu);
    const std::vector<double> first = elements(sum(finite, bias_dims).to(kCPU));
    EXPECT_EQ(first, elements(sum(finite, bias_dims).to(kCPU))) << "a second run differs";
    const std::vector<double> expected = elements(sum(finite.to(kCPU)));
    const std::vector<double> whole = elements(sum(finite).to(kCPU));
    const double magnitude = elements(sum(abs(finite.to(kCPU))))[0];
    EXPECT_LE(std::abs(whole[0] - expected[0]),
              (dtype == DType::Float32 ? 1e-5 : 1e-13) * magnitude)
        << dtype_name(dtype) << " sum of all " << finite.numel() << " elements";
  }
}

// Note [Summing columns]: sums over outer dims (a linear layer's bias gradient, (B, T, C) summed
// over B and T) read rows, 32 columns per block. Column counts and row counts that are not
// multiples of 32, NaN and infinities in some columns, mean, a second run, and a sum over
// rows too many for the strategy.
TEST(CudaReduceTest, SummedColumnsMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  const double inf = std::numeric_limits<double>::infinity();
  for (DType dtype : {DType::Float32, DType::Float64}) {
    Tensor x = testing::random_tensor({4, 37, 70}, dtype, -1.0, 3.0, 41);
    x.select(2, 3).select(0, 2).select(0, 5).fill_(kNaN);    // column 3: NaN
    x.select(2, 40).select(0, 1).select(0, 36).fill_(inf);   // column 40: +inf
    x.select(2, 69).select(0, 0).select(0, 0).fill_(inf);    // column 69: +inf - inf = NaN
    x.select(2, 69).select(0, 3).select(0, 30).fill_(-inf);
    const Tensor y = x.to(kGpu);
    const DimVector rows = {0, 1};
    expect_parity(sum(x, rows), sum(y, rows), label("sum", dtype, "bias gradient", rows, false));
    expect_parity(mean(x, rows, true), mean(y, rows, true),
                  label("mean", dtype, "bias gradient", rows, true));
    const DimVector first_dim = {0};
    expect_parity(sum(x, first_dim), sum(y, first_dim),
                  label("sum", dtype, "bias gradient", first_dim, false));
    const Tensor finite = testing::random_tensor({300, 45}, dtype, -1.0, 3.0, 42).to(kGpu);
    const std::vector<double> once = elements(sum(finite, first_dim).to(kCPU));
    EXPECT_EQ(once, elements(sum(finite, first_dim).to(kCPU))) << "a second run differs";
    const Tensor tall = testing::random_tensor({70000, 3}, dtype, -1.0, 3.0, 43);
    expect_parity(sum(tall, first_dim), sum(tall.to(kGpu), first_dim),
                  label("sum", dtype, "more rows than summed as columns", first_dim, false));
  }
}

TEST(CudaReduceTest, MaxAndArgmaxMatchTheCpuIncludingTiesAndNaN) {
  SKIP_WITHOUT_GPU();
  const std::vector<DType> dtypes = {DType::Float32, DType::Float64, DType::Int64, DType::Int32};
  unsigned seed = 100;
  for (const Layout& layout : layouts()) {
    for (DType dtype : dtypes) {
      for (int nan_every : {0, 23, 2}) {
        if (nan_every > 0 && !is_floating_point(dtype)) continue;
        const Tensor base = random_input(layout.base, dtype, seed++, nan_every);
        const Tensor x = layout.view(base);
        const Tensor y = layout.view(base.to(kGpu));
        const std::string what = layout.name + " nan_every " + std::to_string(nan_every);
        for (std::int64_t dim = -std::max<std::int64_t>(x.dim(), 1);
             dim < std::max<std::int64_t>(x.dim(), 1); ++dim) {
          if (x.dim() > 0 &&
              x.sizes()[static_cast<std::size_t>(dim < 0 ? dim + x.dim() : dim)] == 0)
            continue;  // the maximum of no elements is an error on both devices
          for (bool keepdim : {false, true}) {
            const MaxResult expected = max(x, dim, keepdim);
            const MaxResult got = max(y, dim, keepdim);
            expect_parity(expected.values, got.values, label("max", dtype, what, {dim}, keepdim));
            expect_parity(expected.indices, got.indices,
                          label("max indices", dtype, what, {dim}, keepdim));
            expect_parity(argmax(x, dim, keepdim), argmax(y, dim, keepdim),
                          label("argmax", dtype, what, {dim}, keepdim));
          }
        }
        if (x.numel() == 0) continue;
        expect_parity(max(x), max(y), label("max (full)", dtype, what, {}, false));
        expect_parity(argmax(x), argmax(y), label("argmax (full)", dtype, what, {}, false));
      }
    }
  }
}

// Ties across threads and warps: every element equal but a later run of maxima, so the first
// position must win even when it sits in another warp than most of its equals.
TEST(CudaReduceTest, ArgmaxReturnsTheFirstPositionOnTies) {
  SKIP_WITHOUT_GPU();
  std::vector<double> values(5000, 1.0);
  for (std::size_t i = 700; i < 5000; i += 3) values[i] = 2.0;
  const Tensor x = from_vector(values);
  EXPECT_EQ(argmax(x.to(kGpu)).to(kCPU).item<std::int64_t>(), 700);
  values[4321] = kNaN;
  values[4999] = kNaN;
  EXPECT_EQ(argmax(from_vector(values).to(kGpu)).to(kCPU).item<std::int64_t>(), 4321);
}

}  // namespace
}  // namespace grove::ops
