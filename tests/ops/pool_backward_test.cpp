// max_pool2d_backward and avg_pool2d_backward against direct loops in double: overlapping
// windows (which must add up), strides, padding (never a max; counted in avg's divisor), 3-d and
// 4-d inputs, ties (the first index wins, so its element takes the whole gradient), input sizes
// that the windows leave partly unread, non-contiguous grad, sizes that take the threaded path;
// both by central differences against the forward ops in float64; index checks in a captured
// graph; and the error paths.
#include <algorithm>
#include <numeric>

#include "core/device_graph.h"
#include "op_test_util.h"
#include "ops/pool.h"

namespace grove::ops {
namespace {

using testing::elements;
using testing::error_of;
using testing::expect_close;
using testing::expect_gradient;
using ::testing::HasSubstr;
using testing::non_contiguous;
using testing::random_tensor;
using testing::relative_tolerance;

struct Window {
  std::int64_t kernel_h, kernel_w, stride_h, stride_w, padding_h, padding_w;
};

struct Gradients {
  std::vector<double> max, average;
};

// For every plane and window of the forward: the max's gradient goes to the window's first
// maximum in row-major order (padding never wins), the average's to every input element of the
// window, divided by kH * kW.
Gradients reference_gradients(const Tensor& input, const Tensor& grad, const Window& w) {
  const std::int64_t height = input.size(-2), width = input.size(-1);
  const std::int64_t out_h = grad.size(-2), out_w = grad.size(-1);
  const std::int64_t planes = input.numel() / (height * width);
  const std::vector<double> in = elements(input), g = elements(grad);
  Gradients result{std::vector<double>(in.size(), 0.0), std::vector<double>(in.size(), 0.0)};
  for (std::int64_t p = 0; p < planes; ++p) {
    for (std::int64_t oy = 0; oy < out_h; ++oy) {
      for (std::int64_t ox = 0; ox < out_w; ++ox) {
        const double dy = g[static_cast<std::size_t>((p * out_h + oy) * out_w + ox)];
        std::int64_t best = -1;
        for (std::int64_t i = 0; i < w.kernel_h; ++i) {
          for (std::int64_t j = 0; j < w.kernel_w; ++j) {
            const std::int64_t y = oy * w.stride_h - w.padding_h + i;
            const std::int64_t x = ox * w.stride_w - w.padding_w + j;
            if (y < 0 || y >= height || x < 0 || x >= width) continue;
            const std::int64_t index = (p * height + y) * width + x;
            result.average[static_cast<std::size_t>(index)] +=
                dy / static_cast<double>(w.kernel_h * w.kernel_w);
            if (best < 0 ||
                in[static_cast<std::size_t>(index)] > in[static_cast<std::size_t>(best)]) {
              best = index;
            }
          }
        }
        result.max[static_cast<std::size_t>(best)] += dy;
      }
    }
  }
  return result;
}

enum class Values { Random, Ties, Distinct };

struct PoolBackwardCase {
  const char* name;
  DimVector sizes;
  Window window;
  Values values = Values::Random;
  bool strided_grad = false;
  bool finite_differences = true;  // small enough to check by central differences
};

void PrintTo(const PoolBackwardCase& c, std::ostream* out) {
  *out << c.name;
}

// clang-format off
const PoolBackwardCase kCases[] = {
    // name                    sizes            kH kW sH sW pH pW
    {"kernel_2",               {2, 3, 6, 6},   {2, 2, 2, 2, 0, 0}},
    {"overlapping_stride_1",   {1, 2, 5, 5},   {3, 3, 1, 1, 1, 1}},
    {"overlapping_stride_2",   {2, 2, 7, 8},   {3, 3, 2, 2, 1, 1}},
    {"asymmetric",             {1, 2, 7, 6},   {3, 2, 1, 2, 1, 0}},
    {"unread_edges",           {1, 2, 7, 9},   {2, 2, 2, 2, 0, 0}},  // last row and column
    {"kernel_is_input",        {2, 2, 5, 4},   {5, 4, 5, 4, 0, 0}},
    {"unbatched_3d",           {3, 6, 6},      {3, 3, 2, 2, 1, 1}},
    {"strided_grad",           {2, 3, 6, 7},   {3, 3, 2, 2, 1, 1}, Values::Random, true},
    {"distinct_overlapping",   {2, 2, 6, 6},   {3, 3, 1, 1, 1, 1}, Values::Distinct},
    {"ties_first_wins",        {2, 2, 8, 8},   {3, 3, 1, 1, 1, 1}, Values::Ties, false, false},
    {"batch_0",                {0, 3, 4, 4},   {2, 2, 2, 2, 0, 0}},
    {"threaded",               {8, 32, 28, 28}, {3, 3, 2, 2, 1, 1}, Values::Random, false, false},
};
// clang-format on

Tensor make_input(const PoolBackwardCase& c, DType dtype) {
  switch (c.values) {
    case Values::Ties:  // integers 0..2: most windows hold several equal maxima
      return testing::random_integers(c.sizes, 0, 3, 2).to(dtype);
    case Values::Distinct: {  // 0.01 apart at least: no perturbation of 1e-6 changes a max
      std::vector<double> values(static_cast<std::size_t>(product(c.sizes)));
      std::iota(values.begin(), values.end(), 0.0);
      std::shuffle(values.begin(), values.end(), std::mt19937(3));
      for (double& value : values) value *= 0.01;
      return from_vector(values).reshape(c.sizes).to(dtype);
    }
    case Values::Random:
      break;
  }
  return random_tensor(c.sizes, dtype, -2, 2, 1);
}

struct Operands {
  Tensor input, indices, grad;
};

Operands make_operands(const PoolBackwardCase& c, DType dtype) {
  const Window& w = c.window;
  Operands x;
  x.input = make_input(c, dtype);
  x.indices = max_pool2d_with_indices(x.input, {w.kernel_h, w.kernel_w}, {w.stride_h, w.stride_w},
                                      {w.padding_h, w.padding_w})
                  .second;
  x.grad = random_tensor(x.indices.sizes(), dtype, -2, 2, 4);
  if (c.strided_grad) {
    x.grad = non_contiguous(x.grad);
    x.indices = non_contiguous(x.indices);
  }
  return x;
}

class PoolBackwardTest : public ::testing::TestWithParam<std::tuple<PoolBackwardCase, DType>> {};

TEST_P(PoolBackwardTest, MatchesDirectLoops) {
  const auto& [c, dtype] = GetParam();
  const Window& w = c.window;
  const Operands x = make_operands(c, dtype);
  const Gradients expected = reference_gradients(x.input, x.grad, w);
  const Tensor max_grad = max_pool2d_backward(x.grad, x.indices, x.input.sizes());
  const Tensor avg_grad = avg_pool2d_backward(x.grad, x.input.sizes(), {w.kernel_h, w.kernel_w},
                                              {w.stride_h, w.stride_w}, {w.padding_h, w.padding_w});
  for (const Tensor& out : {max_grad, avg_grad}) {
    EXPECT_EQ(out.sizes(), x.input.sizes());
    EXPECT_EQ(out.dtype(), dtype);
  }
  // Sums of at most ceil(k / s)^2 terms of |grad| <= 2 (divided by kH kW for avg), in the dtype:
  // a few ulps of the result, and an absolute floor for sums that cancel.
  const double rtol = relative_tolerance(dtype);
  expect_close(max_grad, expected.max, rtol, rtol * 10, str(c.name, " max"));
  expect_close(avg_grad, expected.average, rtol, rtol * 10, str(c.name, " avg"));
}

INSTANTIATE_TEST_SUITE_P(Ops, PoolBackwardTest,
                         ::testing::Combine(::testing::ValuesIn(kCases),
                                            ::testing::Values(DType::Float32, DType::Float64)),
                         testing::CaseAndDtypeName());

// The cases small enough for central differences.
std::vector<PoolBackwardCase> small_cases() {
  std::vector<PoolBackwardCase> cases;
  for (const PoolBackwardCase& c : kCases) {
    if (c.finite_differences) cases.push_back(c);
  }
  return cases;
}

class PoolBackwardGradcheck : public ::testing::TestWithParam<PoolBackwardCase> {};

TEST_P(PoolBackwardGradcheck, AreTheDerivativesOfThePoolings) {
  const PoolBackwardCase& c = GetParam();
  const Window& w = c.window;
  // Values at least 0.01 apart, so that no perturbation changes which element is a window's
  // max (where the max is not differentiable).
  PoolBackwardCase distinct = c;
  distinct.values = Values::Distinct;
  const Operands x = make_operands(distinct, DType::Float64);
  const DimVector kernel{w.kernel_h, w.kernel_w}, stride{w.stride_h, w.stride_w},
      padding{w.padding_h, w.padding_w};
  expect_gradient(
      max_pool2d_backward(x.grad, x.indices, x.input.sizes()),
      [&](const Tensor& t) { return max_pool2d(t, kernel, stride, padding); }, x.input, x.grad,
      str(c.name, " max"));
  expect_gradient(
      avg_pool2d_backward(x.grad, x.input.sizes(), kernel, stride, padding),
      [&](const Tensor& t) { return avg_pool2d(t, kernel, stride, padding); }, x.input, x.grad,
      str(c.name, " avg"));
}

INSTANTIATE_TEST_SUITE_P(Ops, PoolBackwardGradcheck, ::testing::ValuesIn(small_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(MaxPool2dBackward, ScattersToTheGivenIndicesAndAddsRepeats) {
  // One plane of 2 x 3; four grad elements whose indices name elements 5, 0, 5, 5.
  const Tensor grad = from_vector<double>({1.0, 2.0, 4.0, 8.0}, {1, 2, 2});
  const Tensor indices = from_vector(std::vector<std::int64_t>{5, 0, 5, 5}, {1, 2, 2});
  EXPECT_EQ(max_pool2d_backward(grad, indices, {1, 2, 3}).to_vector<double>(),
            (std::vector<double>{2.0, 0.0, 0.0, 0.0, 0.0, 13.0}));
}

TEST(MaxPool2dBackward, TiesSendTheGradientToTheFirstElement) {
  const Tensor input = full({1, 1, 4, 4}, 1.0);
  const auto [values, indices] = max_pool2d_with_indices(input, {3}, {1});  // 2 x 2 windows
  const Tensor grad = from_vector<double>({1.0, 2.0, 3.0, 4.0}, {1, 1, 2, 2});
  // Window (y, x) picks element (y, x), its first: all of them distinct here.
  EXPECT_EQ(max_pool2d_backward(grad, indices, input.sizes()).to_vector<double>(),
            (std::vector<double>{1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(MaxPool2dBackward, TheKernelChecksIndicesWhenACapturedGraphReplays) {
  // See Note [Index checks during capture].
  const Tensor grad = from_vector<double>({1.0, 2.0, 4.0, 8.0}, {1, 2, 2});
  Tensor indices = zeros({1, 2, 2}, DType::Int64);  // the graph's input buffer
  const Stream stream = new_stream(kCPU);
  DeviceGraph graph(kCPU);
  Tensor out;
  {
    StreamGuard guard(stream);
    graph.begin_capture(stream);
    EXPECT_NO_THROW(out = max_pool2d_backward(grad, indices, {1, 2, 3}));
    graph.end_capture();
  }
  indices.copy_(from_vector(std::vector<std::int64_t>{5, 0, 5, 5}, {1, 2, 2}));
  graph.replay();
  EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{2.0, 0.0, 0.0, 0.0, 0.0, 13.0}));
  indices.copy_(from_vector(std::vector<std::int64_t>{5, 0, 6, 5}, {1, 2, 2}));
  EXPECT_THAT(error_of([&] { graph.replay(); }),
              HasSubstr("max_pool2d_backward: index 6 at position [0, 1, 0] of the indices of "
                        "shape [1, 2, 2] is out of range for the input plane's H * W elements "
                        "(expected 0 <= index < 6); found by the kernel"));
}

TEST(AvgPool2dBackward, PaddingCountsInTheDivisor) {
  // Kernel 2, stride 2, padding 1 on a 2 x 2 plane: each window holds one element, divisor 4.
  const Tensor grad = from_vector<double>({4.0, 8.0, 12.0, 16.0}, {1, 1, 2, 2});
  EXPECT_EQ(avg_pool2d_backward(grad, {1, 1, 2, 2}, {2}, {2}, {1}).to_vector<double>(),
            (std::vector<double>{1.0, 2.0, 3.0, 4.0}));
  // An empty stride means stride = kernel, as in the forward.
  EXPECT_EQ(avg_pool2d_backward(grad, {1, 1, 2, 2}, {2}, {}, {1}).to_vector<double>(),
            (std::vector<double>{1.0, 2.0, 3.0, 4.0}));
}

TEST(MaxPool2dBackward, ErrorsNameTheOpAndShapes) {
  const Tensor grad = zeros({1, 2, 3, 3});
  const Tensor indices = zeros({1, 2, 3, 3}, DType::Int64);
  EXPECT_THAT(error_of([&] {
                max_pool2d_backward(grad, zeros({1, 2, 3, 2}, DType::Int64), {1, 2, 6, 6});
              }),
              HasSubstr("max_pool2d_backward: expected indices of grad's shape"));
  EXPECT_THAT(error_of([&] {
                max_pool2d_backward(grad, zeros({1, 2, 3, 3}), {1, 2, 6, 6});
              }),
              HasSubstr("max_pool2d_backward: expected int64 indices, but got float32"));
  EXPECT_THAT(
      error_of([&] {
        max_pool2d_backward(grad, indices, {1, 3, 6, 6});
      }),
      HasSubstr("max_pool2d_backward: expected grad of shape (N, C, Ho, Wo) with the "
                "input's N, C = [1, 3], but got [1, 2, 3, 3] for input sizes [1, 3, 6, 6]"));
  EXPECT_THAT(error_of([&] {
                max_pool2d_backward(grad, indices, {2, 6, 6});
              }),
              HasSubstr("expected grad of shape (C, Ho, Wo)"));
  EXPECT_THAT(error_of([&] {
                max_pool2d_backward(grad, indices, {6, 6});
              }),
              HasSubstr("max_pool2d_backward: expected input_sizes of 3 values (C, H, W) or 4 "
                        "(N, C, H, W), but got [6, 6]"));
  EXPECT_THAT(error_of([&] {
                max_pool2d_backward(zeros({1, 2, 3, 3}, DType::Int64), indices, {1, 2, 6, 6});
              }),
              HasSubstr("max_pool2d_backward: expected a float32 or float64 grad, but got int64"));
  const Tensor bad = from_vector(std::vector<std::int64_t>{0, 3, 4, 1}, {1, 2, 2});
  EXPECT_THAT(error_of([&] {
                max_pool2d_backward(zeros({1, 2, 2}), bad, {1, 2, 2});
              }),
              HasSubstr("max_pool2d_backward: index 4 at position [0, 1, 0] of the indices of "
                        "shape [1, 2, 2] is out of range for the input plane's H * W elements "
                        "(expected 0 <= index < 4)"));
}

TEST(AvgPool2dBackward, ErrorsNameTheOpAndShapes) {
  EXPECT_THAT(error_of([] {
                avg_pool2d_backward(zeros({1, 2, 2, 2}), {1, 2, 6, 6}, {2});
              }),
              HasSubstr("avg_pool2d_backward: expected grad of shape [1, 2, 3, 3] (avg_pool2d's "
                        "output for input sizes [1, 2, 6, 6]), but got [1, 2, 2, 2] (inputs: "
                        "float32[1, 2, 2, 2])"));
  EXPECT_THAT(error_of([] {
                avg_pool2d_backward(zeros({1, 2, 3, 3}), {1, 2, 6, 6}, {2}, {}, {2});
              }),
              HasSubstr("avg_pool2d_backward: expected paddings between 0 and half the kernel "
                        "(2, 2), but got (2, 2)"));
  EXPECT_THAT(error_of([] {
                avg_pool2d_backward(zeros({1, 1, 1, 1}), {1, 1, 3, 3}, {4});
              }),
              HasSubstr("avg_pool2d_backward: the kernel (4, 4) is larger than the padded input "
                        "(3, 3)"));
  EXPECT_THAT(error_of([] {
                avg_pool2d_backward(zeros({1, 2, 3, 3}), {1, 3, 6, 6}, {2});
              }),
              HasSubstr("avg_pool2d_backward: expected grad of shape (N, C, Ho, Wo) with the "
                        "input's N, C = [1, 3]"));
  EXPECT_THAT(error_of([] {
                avg_pool2d_backward(zeros({3, 3}), {6, 6}, {2});
              }),
              HasSubstr("avg_pool2d_backward: expected input_sizes of 3 values (C, H, W) or 4"));
  EXPECT_THAT(error_of([] {
                avg_pool2d_backward(zeros({2, 3, 3}, DType::Int32), {2, 6, 6}, {2});
              }),
              HasSubstr("avg_pool2d_backward: expected a float32 or float64 grad, but got int32"));
  EXPECT_THAT(error_of([] {
                avg_pool2d_backward(zeros({2, 3, 3}), {2, 6, 6}, {2}, {0});
              }),
              HasSubstr("avg_pool2d_backward: expected strides >= 1, but got (0, 0)"));
}

}  // namespace
}  // namespace grove::ops
