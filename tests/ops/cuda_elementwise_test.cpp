// The CUDA elementwise and in-place kernels (ops/cuda/) where a table of values (the parity table,
// tests/ops/cuda_parity_test.cpp) cannot say enough: integer wrap-around at the limits, float32
// clamp next to bounds float32 cannot hold, an operand that overlaps the in-place target, and one
// capture and replay. Every test skips without a CUDA device (CTest label `gpu`).
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/device_graph.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "tests/ops/cuda_test_util.h"

namespace grove::ops {
namespace {

using testing::elements;
using testing::expect_close;
using testing::kGpu;
using testing::kNaN;
using testing::Layout;

// Tolerances: both devices compute each element with one formula, but CUDA's expf, tanhf, erff,
// powf differ from glibc's by an ulp or two (and nvcc may fuse a multiply-add): 1e-5 relative
// is a few float32 ulps, with 1e-6 absolute near zero. float64 library functions differ by at
// most a few float64 ulps: 1e-13. Integer and bool results must be exact.
void expect_parity(const Tensor& cpu_result, const Tensor& gpu_result, const std::string& what) {
  testing::expect_device_parity(cpu_result, gpu_result, what, {1e-5, 1e-6, 1e-13, 1e-15});
}

// Floats with a NaN every 23 elements (see random_quarters).
Tensor random_input(IntArrayRef sizes, DType dtype, unsigned seed) {
  return testing::random_quarters(sizes, dtype, seed, 23);
}

using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;
using ScalarFn = std::function<Tensor(const Tensor&, const Scalar&)>;

struct BinaryCase {
  const char* name;
  BinaryFn tensor_form;
  ScalarFn scalar_form;  // empty for maximum and minimum
  std::vector<DType> dtypes;
};

const std::vector<DType> kArithmetic = {DType::Float32, DType::Float64, DType::Int64, DType::Int32};
const std::vector<DType> kFloating = {DType::Float32, DType::Float64};
const std::vector<DType> kAll = {DType::Float32, DType::Float64, DType::Int64, DType::Int32,
                                 DType::Bool};

std::vector<BinaryCase> binary_cases() {
  auto t = [](Tensor (*f)(const Tensor&, const Tensor&)) { return BinaryFn(f); };
  auto s = [](Tensor (*f)(const Tensor&, const Scalar&)) { return ScalarFn(f); };
  return {
      {"add", t(add), s(add), kArithmetic},
      {"sub", t(sub), s(sub), kArithmetic},
      {"mul", t(mul), s(mul), kArithmetic},
      {"div", t(div), s(div), kFloating},
      {"maximum", t(maximum), {}, kArithmetic},
      {"minimum", t(minimum), {}, kArithmetic},
      {"eq", t(eq), s(eq), kAll},
      {"ne", t(ne), s(ne), kAll},
      {"lt", t(lt), s(lt), kAll},
      {"le", t(le), s(le), kAll},
      {"gt", t(gt), s(gt), kAll},
      {"ge", t(ge), s(ge), kAll},
  };
}

TEST(CudaElementwiseTest, IntegerArithmeticWrapsAroundAsOnTheCpu) {
  SKIP_WITHOUT_GPU();
  constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  const Tensor a = from_vector<std::int32_t>({kMax, kMin, kMax, -7, kMin + 1});
  const Tensor b = from_vector<std::int32_t>({1, -1, kMax, 3, kMin});
  for (const BinaryCase& op : binary_cases()) {
    if (op.dtypes != kArithmetic) continue;
    expect_parity(op.tensor_form(a, b), op.tensor_form(a.to(kGpu), b.to(kGpu)), op.name);
  }
  expect_parity(neg(a), neg(a.to(kGpu)), "neg");
  expect_parity(abs(a), abs(a.to(kGpu)), "abs");
  const Tensor big = from_vector<std::int64_t>({std::numeric_limits<std::int64_t>::max(), -5});
  expect_parity(mul(big, Scalar(std::int64_t{3})), mul(big.to(kGpu), Scalar(std::int64_t{3})),
                "mul int64");
}

// clamp on float32 must give the CPU's bits also for values right next to a bound that float32
// cannot hold, for bounds beyond float32's range, and for bounds too small for float32 (which
// round to a zero, so the sign of a zero result depends on comparing in double).
TEST(CudaElementwiseTest, Float32ClampMatchesTheCpuNextToInexactBounds) {
  SKIP_WITHOUT_GPU();
  const double inf = std::numeric_limits<double>::infinity();
  const double past_max = 3.4028235677973366e38;  // above FLT_MAX, rounds down to it
  const std::vector<std::array<double, 2>> bounds = {
      {0.1, 0.7}, {-0.3, 1.1}, {-1e39, 1e39}, {-past_max, past_max},
      {0.1, 0.1}, {-inf, 0.3}, {1e-47, 0.5},  {-0.5, -1e-47}};
  for (const auto& [low, high] : bounds) {
    std::vector<float> values = {0.0f,
                                 -0.0f,
                                 std::numeric_limits<float>::infinity(),
                                 -std::numeric_limits<float>::infinity(),
                                 std::numeric_limits<float>::quiet_NaN(),
                                 std::numeric_limits<float>::max(),
                                 -std::numeric_limits<float>::max()};
    for (double bound : {low, high}) {
      const float rounded = static_cast<float>(bound);
      for (float value : {rounded, std::nextafter(rounded, 0.0f), std::nextafter(rounded, 1e30f),
                          std::nextafter(rounded, -1e30f)}) {
        values.push_back(value);
      }
    }
    const Tensor x = from_vector(values);
    const Tensor on_cpu = clamp(x, low, high);
    const Tensor on_gpu = clamp(x.to(kGpu), low, high).to(kCPU);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const auto index = static_cast<std::int64_t>(i);
      EXPECT_EQ(std::bit_cast<std::uint32_t>(on_gpu.data<float>()[index]),
                std::bit_cast<std::uint32_t>(on_cpu.data<float>()[index]))
          << "clamp(" << values[i] << ", " << low << ", " << high << "): GPU "
          << on_gpu.data<float>()[index] << ", CPU " << on_cpu.data<float>()[index];
    }
  }
}

// --- in-place updates ---

struct InplaceCase {
  const char* name;
  // Applies the update to x with operands made from `operand` (x's dtype, broadcastable).
  std::function<void(const Tensor& x, const Tensor& operand)> fn;
  std::vector<DType> dtypes;
};

TEST(CudaInplaceTest, AnOperandOverlappingXIsReadBeforeTheUpdate) {
  SKIP_WITHOUT_GPU();
  const Tensor x = random_input({37, 53}, DType::Float32, 7);
  const Tensor gpu_x = x.to(kGpu);
  add_(x, x.select(0, 0));  // row 0 broadcast over every row, including row 0 itself
  add_(gpu_x, gpu_x.select(0, 0));
  expect_parity(x, gpu_x, "add_ with an overlapping operand");
  add_(x, x);  // element for element: no copy needed
  add_(gpu_x, gpu_x);
  expect_parity(x, gpu_x, "add_(x, x)");
}

// --- capture ---

TEST(CudaElementwiseTest, CapturedOpsReplayWithNewInputs) {
  SKIP_WITHOUT_GPU();
  const Stream stream = new_stream(kGpu);
  StreamGuard guard(stream);
  const Tensor a = random_input({64, 33}, DType::Float32, 11);
  const Tensor b = random_input({33}, DType::Float32, 12);
  const Tensor gpu_a = a.to(kGpu);
  const Tensor gpu_b = b.to(kGpu);
  auto step = [](const Tensor& x, const Tensor& y) {
    return where(gt(x, y), gelu(add(mul(x, y), 0.5), true), clamp(sub(x, y), -1.0, 1.0));
  };

  DeviceGraph graph(kGpu);
  graph.begin_capture(stream);
  const Tensor out = step(gpu_a, gpu_b);
  graph.end_capture();
  EXPECT_GE(graph.num_nodes(), 7u);

  graph.replay();
  expect_parity(step(a, b), out, "first replay");
  const Tensor a2 = random_input({64, 33}, DType::Float32, 13);
  gpu_a.copy_(a2);  // new values in the captured input's memory
  graph.replay();
  expect_parity(step(a2, b), out, "replay with new inputs");
}

}  // namespace
}  // namespace grove::ops
