// Parity of the CUDA elementwise and in-place kernels (ops/cuda/) with the CPU kernels
// (ops/cpu/), which are the reference: every op runs on the same values and the same layout on
// both devices. Layouts: contiguous (including lengths that leave a tail after the 16-byte
// packs, and a slice that is not 16-byte aligned), transposed, strided slices, broadcasting on
// either side, 0-d and size-0 tensors, scalar operands; plus one capture and replay.
// Every test skips without a CUDA device (CTest label `gpu`).
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

Tensor same(const Tensor& t) {
  return t;
}

// Pairs of layouts for binary ops (operands of one output shape, or broadcasting).
std::vector<std::pair<Layout, Layout>> binary_layouts() {
  auto transposed = [](const Tensor& t) { return t.transpose(0, 1); };
  auto strided = [](const Tensor& t) { return t.slice(1, 0, t.sizes()[1], 2); };
  auto unaligned = [](const Tensor& t) { return t.slice(0, 1, t.sizes()[0]); };
  return {
      {{"contiguous", {37, 53}, same}, {"contiguous", {37, 53}, same}},
      {{"long", {4099}, same}, {"long", {4099}, same}},
      {{"unaligned", {4100}, unaligned}, {"long", {4099}, same}},
      {{"transposed", {53, 37}, transposed}, {"contiguous", {37, 53}, same}},
      {{"contiguous", {37, 53}, same}, {"strided", {37, 106}, strided}},
      {{"column", {37, 1}, same}, {"row", {1, 53}, same}},
      {{"row", {53}, same}, {"transposed", {53, 37}, transposed}},
      {{"matrix", {37, 53}, same}, {"0-d", {}, same}},
      {{"0-d", {}, same}, {"0-d", {}, same}},
      {{"empty", {0, 3}, same}, {"row", {1, 3}, same}},
  };
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

std::string label(const char* op, DType dtype, const std::string& layout) {
  return std::string(op) + " " + std::string(dtype_name(dtype)) + " " + layout;
}

TEST(CudaElementwiseTest, BinaryOpsMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  for (const BinaryCase& op : binary_cases()) {
    for (DType dtype : op.dtypes) {
      unsigned seed = 1;
      for (const auto& [left, right] : binary_layouts()) {
        const Tensor a = random_input(left.base, dtype, seed++);
        const Tensor b = random_input(right.base, dtype, seed++);
        const std::string what = label(op.name, dtype, left.name + " x " + right.name);
        expect_parity(op.tensor_form(left.view(a), right.view(b)),
                      op.tensor_form(left.view(a.to(kGpu)), right.view(b.to(kGpu))), what);
        // The other order broadcasts the other side.
        expect_parity(op.tensor_form(right.view(b), left.view(a)),
                      op.tensor_form(right.view(b.to(kGpu)), left.view(a.to(kGpu))),
                      what + " (swapped)");
        if (op.scalar_form) {
          const Scalar value = dtype == DType::Bool       ? Scalar(true)
                               : is_floating_point(dtype) ? Scalar(0.75)
                                                          : Scalar(std::int64_t{2});
          expect_parity(op.scalar_form(left.view(a), value),
                        op.scalar_form(left.view(a.to(kGpu)), value), what + " (scalar)");
        }
      }
    }
  }
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

struct UnaryCase {
  std::string name;
  std::function<Tensor(const Tensor&)> fn;
  std::vector<DType> dtypes;
};

std::vector<UnaryCase> unary_cases() {
  const double inf = std::numeric_limits<double>::infinity();
  return {
      {"neg", [](const Tensor& x) { return neg(x); }, kArithmetic},
      {"abs", [](const Tensor& x) { return abs(x); }, kArithmetic},
      {"relu", [](const Tensor& x) { return relu(x); }, kArithmetic},
      {"clamp", [](const Tensor& x) { return clamp(x, -2.0, 1.0); }, kArithmetic},
      {"clamp_fractional", [](const Tensor& x) { return clamp(x, -0.3, 1.1); }, kFloating},
      {"clamp_above", [inf](const Tensor& x) { return clamp(x, -inf, 2.0); }, kArithmetic},
      {"clamp_below", [inf](const Tensor& x) { return clamp(x, -1.0, inf); }, kArithmetic},
      {"exp", [](const Tensor& x) { return exp(x); }, kFloating},
      {"log", [](const Tensor& x) { return log(x); }, kFloating},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, kFloating},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, kFloating},
      {"pow_2", [](const Tensor& x) { return pow(x, 2.0); }, kFloating},
      {"pow_0.5", [](const Tensor& x) { return pow(x, 0.5); }, kFloating},
      {"pow_-1.5", [](const Tensor& x) { return pow(x, -1.5); }, kFloating},
      {"tanh", [](const Tensor& x) { return tanh(x); }, kFloating},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, kFloating},
      {"gelu", [](const Tensor& x) { return gelu(x, false); }, kFloating},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, true); }, kFloating},
      {"gelu_backward", [](const Tensor& x) { return gelu_backward(x * 0.5, x, false); },
       kFloating},
      {"gelu_backward_tanh", [](const Tensor& x) { return gelu_backward(x * 0.5, x, true); },
       kFloating},
  };
}

std::vector<Layout> unary_layouts() {
  return {
      {"contiguous", {37, 53}, same},
      {"long", {4099}, same},
      {"unaligned", {4100}, [](const Tensor& t) { return t.slice(0, 1, t.sizes()[0]); }},
      {"transposed", {53, 37}, [](const Tensor& t) { return t.transpose(0, 1); }},
      {"strided", {37, 106}, [](const Tensor& t) { return t.slice(1, 0, 106, 2); }},
      {"broadcast",
       {1, 53},
       [](const Tensor& t) {
         return t.expand({37, 53});
       }},
      {"0-d", {}, same},
      {"empty", {0, 5}, same},
  };
}

TEST(CudaElementwiseTest, UnaryOpsMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  for (const UnaryCase& op : unary_cases()) {
    for (DType dtype : op.dtypes) {
      unsigned seed = 100;
      for (const Layout& layout : unary_layouts()) {
        const Tensor x = random_input(layout.base, dtype, seed++);
        expect_parity(op.fn(layout.view(x)), op.fn(layout.view(x.to(kGpu))),
                      label(op.name.c_str(), dtype, layout.name));
      }
    }
  }
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

TEST(CudaElementwiseTest, WhereAndMaskedFillMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  auto transposed = [](const Tensor& t) { return t.transpose(0, 1); };
  // (condition, a, b) layouts; the condition is bool.
  const std::vector<std::array<Layout, 3>> layouts = {
      {{{"c", {37, 53}, same}, {"c", {37, 53}, same}, {"c", {37, 53}, same}}},
      {{{"col", {37, 1}, same}, {"row", {1, 53}, same}, {"c", {37, 53}, same}}},
      {{{"t", {53, 37}, transposed}, {"0-d", {}, same}, {"t", {53, 37}, transposed}}},
      {{{"0-d", {}, same}, {"0-d", {}, same}, {"0-d", {}, same}}},
      {{{"empty", {0, 4}, same}, {"row", {4}, same}, {"row", {1, 4}, same}}},
  };
  for (DType dtype : kAll) {
    unsigned seed = 200;
    for (const auto& [c, a, b] : layouts) {
      const Tensor condition = random_input(c.base, DType::Bool, seed++);
      const Tensor x = random_input(a.base, dtype, seed++);
      const Tensor y = random_input(b.base, dtype, seed++);
      const std::string what = label("where", dtype, c.name + "," + a.name + "," + b.name);
      expect_parity(where(c.view(condition), a.view(x), b.view(y)),
                    where(c.view(condition.to(kGpu)), a.view(x.to(kGpu)), b.view(y.to(kGpu))),
                    what);
      // masked_fill: x in layout c's shape when b's shape is the output's; the mask from a.
      const Tensor filled = random_input(b.base, dtype, seed++);
      const Tensor mask = random_input(a.base, DType::Bool, seed++);
      const Scalar value = dtype == DType::Bool       ? Scalar(true)
                           : is_floating_point(dtype) ? Scalar(-1.5)
                                                      : Scalar(std::int64_t{9});
      expect_parity(masked_fill(b.view(filled), a.view(mask), value),
                    masked_fill(b.view(filled.to(kGpu)), a.view(mask.to(kGpu)), value),
                    "masked_fill " + what);
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

std::vector<InplaceCase> inplace_cases() {
  return {
      {"add_", [](const Tensor& x, const Tensor& y) { add_(x, y, 2); }, kArithmetic},
      {"mul_", [](const Tensor& x, const Tensor& y) { mul_(x, y); }, kArithmetic},
      {"mul_scalar",
       [](const Tensor& x, const Tensor&) { mul_(x, Scalar(std::int64_t{3})); },
       {DType::Int64, DType::Int32}},
      {"mul_scalar", [](const Tensor& x, const Tensor&) { mul_(x, 0.5); }, kFloating},
      {"addcmul_", [](const Tensor& x, const Tensor& y) { addcmul_(x, y, y, 3); }, kArithmetic},
      {"addcdiv_", [](const Tensor& x, const Tensor& y) { addcdiv_(x, y, y + 7.0, 0.5); },
       kFloating},
      {"lerp_", [](const Tensor& x, const Tensor& y) { lerp_(x, y, 0.3); }, kFloating},
      {"lerp_high", [](const Tensor& x, const Tensor& y) { lerp_(x, y, 0.8); }, kFloating},
      {"lerp_tensor", [](const Tensor& x, const Tensor& y) { lerp_(x, y, sigmoid(y)); }, kFloating},
      {"fill_", [](const Tensor& x, const Tensor&) { fill_(x, 1); }, kAll},
      {"copy_", [](const Tensor& x, const Tensor& y) { copy_(x, y.to(DType::Float64)); }, kAll},
  };
}

TEST(CudaInplaceTest, UpdatesMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  auto transposed = [](const Tensor& t) { return t.transpose(0, 1); };
  // (x, operand) layouts; x is a view of its base, so strided x are updated through strides.
  const std::vector<std::pair<Layout, Layout>> layouts = {
      {{"contiguous", {37, 53}, same}, {"contiguous", {37, 53}, same}},
      {{"transposed", {53, 37}, transposed}, {"row", {53}, same}},
      {{"strided", {37, 106}, [](const Tensor& t) { return t.slice(1, 0, 106, 2); }},
       {"column", {37, 1}, same}},
      {{"0-d", {}, same}, {"0-d", {}, same}},
      {{"empty", {0, 3}, same}, {"row", {3}, same}},
  };
  for (const InplaceCase& op : inplace_cases()) {
    for (DType dtype : op.dtypes) {
      unsigned seed = 300;
      for (const auto& [xl, yl] : layouts) {
        const Tensor base = random_input(xl.base, dtype, seed++);
        const Tensor operand = random_input(yl.base, dtype, seed++);
        const Tensor gpu_base = base.to(kGpu);
        const Tensor x = xl.view(base);
        const Tensor gpu_x = xl.view(gpu_base);
        op.fn(x, yl.view(operand));
        op.fn(gpu_x, yl.view(operand.to(kGpu)));
        const std::string what = label(op.name, dtype, xl.name + " x " + yl.name);
        expect_parity(x, gpu_x, what);
        expect_parity(base, gpu_base, what + " (base)");
      }
    }
  }
}

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
