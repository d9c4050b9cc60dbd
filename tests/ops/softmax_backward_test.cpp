// cross_entropy_backward and nll_loss_backward against naive references in double (softmax from
// the logits, not from the saved lse): ignored rows, an ignore_index inside [0, C), every target
// ignored (zeros), no rows, non-contiguous and transposed scores, targets, lse and grad, float32
// and float64, rows enough to run on several threads; both by central differences against the
// forward losses in float64; grad read by the kernel when a captured graph replays; and the
// error paths.
#include "core/device_graph.h"
#include "op_test_util.h"
#include "ops/dispatch.h"
#include "ops/softmax.h"

namespace grove::ops {
namespace {

using testing::element;
using testing::elements;
using testing::error_of;
using testing::expect_close;
using testing::expect_gradient;
using ::testing::HasSubstr;
using testing::non_contiguous;
using testing::random_integers;
using testing::random_tensor;
using testing::relative_tolerance;

// The cross_entropy op's two outputs (the user function drops lse), seen as autograd sees them.
struct LossAndLse : OpObserver {
  Tensor loss, lse;
  void on_op(const OpCall& call, const OpOutputs& outputs) override {
    if (call.kind != OpKind::CrossEntropy) return;
    loss = outputs[0];
    lse = outputs[1];
  }
};

LossAndLse cross_entropy_with_lse(const Tensor& logits, const Tensor& targets,
                                  std::int64_t ignore_index) {
  LossAndLse saved;
  OpObserverGuard guard(&saved);
  cross_entropy(logits, targets, ignore_index);
  return saved;
}

// With n the rows whose target is kept: grad (softmax(row) - onehot(target)) / n on those rows
// (cross_entropy), or -grad / n at the target (nll_loss); 0 on ignored rows.
std::vector<double> reference_backward(double grad, const Tensor& scores, const Tensor& targets,
                                       std::int64_t ignore_index, bool cross_entropy) {
  const std::int64_t rows = scores.size(0), classes = scores.size(1);
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < rows; ++i) kept += element(targets, i) != ignore_index ? 1 : 0;
  std::vector<double> result(static_cast<std::size_t>(rows * classes), 0.0);
  for (std::int64_t i = 0; i < rows; ++i) {
    const auto target = static_cast<std::int64_t>(element(targets, i));
    if (target == ignore_index) continue;
    double max = -INFINITY, sum = 0.0;
    for (std::int64_t c = 0; c < classes; ++c)
      max = std::max(max, element(scores, i * classes + c));
    for (std::int64_t c = 0; c < classes; ++c)
      sum += std::exp(element(scores, i * classes + c) - max);
    for (std::int64_t c = 0; c < classes; ++c) {
      const double probability =
          cross_entropy ? std::exp(element(scores, i * classes + c) - max) / sum : 0.0;
      result[static_cast<std::size_t>(i * classes + c)] =
          grad * (probability - (c == target ? 1.0 : 0.0)) / static_cast<double>(kept);
    }
  }
  return result;
}

struct LossCase {
  const char* name;
  std::int64_t rows, classes, ignore_index;
  int ignored_every;  // every k-th target is set to ignore_index (0: none)
};

const LossCase kLossCases[] = {
    {"small", 5, 7, -100, 0},
    {"ignored_rows", 9, 4, -100, 3},
    {"ignore_a_class", 8, 5, 2, 0},  // ignore_index inside [0, C): that class's rows are skipped
    {"one_class", 3, 1, -100, 0},
    {"many_rows", 300, 128, -100, 7},  // above the threshold for splitting rows over threads
    {"all_ignored", 4, 3, -100, 1},    // the loss is NaN; the gradient 0
    {"no_rows", 0, 3, -100, 0},
};

void PrintTo(const LossCase& c, std::ostream* out) {
  *out << c.name << ": (" << c.rows << ", " << c.classes << "), ignore_index " << c.ignore_index;
}

Tensor make_targets(const LossCase& c) {
  Tensor targets = random_integers({c.rows}, 0, c.classes, 32);
  if (c.ignored_every > 0) targets.slice(0, 0, c.rows, c.ignored_every).fill_(c.ignore_index);
  return targets;
}

class LossBackwardTest : public ::testing::TestWithParam<std::tuple<LossCase, DType>> {};

TEST_P(LossBackwardTest, MatchesReferenceInEveryLayout) {
  const auto& [c, dtype] = GetParam();
  const Tensor logits = random_tensor({c.rows, c.classes}, dtype, -4.0, 4.0, 31);
  const Tensor targets = make_targets(c);
  // grad is a 0-d view into a larger buffer (storage offset 1): read through its data pointer.
  const Tensor grad = from_vector(std::vector<double>{5.0, 0.75}).to(dtype).select(0, 1);
  const struct {
    const char* layout;
    Tensor logits, targets;
  } layouts[] = {
      {"contiguous", logits, targets},
      {"non-contiguous", non_contiguous(logits), non_contiguous(targets)},
      {"transposed", logits.t().contiguous().t(), targets},
  };
  // softmax - onehot is O(1); exp in float32 and the float32 lse give a few ulps of it, scaled by
  // grad / n: the floor is relative to that scale.
  const double rtol = relative_tolerance(dtype);
  const double scale = 0.75 / static_cast<double>(std::max<std::int64_t>(1, c.rows));
  for (const auto& layout : layouts) {
    const LossAndLse forward =
        cross_entropy_with_lse(layout.logits, layout.targets, c.ignore_index);
    const Tensor lse =
        str(layout.layout) == "non-contiguous" ? non_contiguous(forward.lse) : forward.lse;
    const Tensor out =
        cross_entropy_backward(grad, layout.logits, layout.targets, lse, c.ignore_index);
    EXPECT_EQ(out.sizes(), IntArrayRef({c.rows, c.classes}));
    EXPECT_EQ(out.dtype(), dtype);
    expect_close(out, reference_backward(0.75, layout.logits, layout.targets, c.ignore_index, true),
                 rtol, rtol * scale * 4, str("cross_entropy_backward ", layout.layout));
    const Tensor nll = nll_loss_backward(grad, layout.logits, layout.targets, c.ignore_index);
    EXPECT_EQ(nll.sizes(), IntArrayRef({c.rows, c.classes}));
    // -grad / n, one division in double rounded once to the dtype.
    expect_close(nll,
                 reference_backward(0.75, layout.logits, layout.targets, c.ignore_index, false),
                 rtol, 0.0, str("nll_loss_backward ", layout.layout));
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, LossBackwardTest,
                         ::testing::Combine(::testing::ValuesIn(kLossCases),
                                            ::testing::Values(DType::Float32, DType::Float64)),
                         testing::CaseAndDtypeName());

TEST(LossBackward, EveryTargetIgnoredGivesZerosAndANanLoss) {
  const Tensor logits = random_tensor({3, 4}, DType::Float32, -2, 2, 33);
  const Tensor targets = full({3}, std::int64_t{-100});
  const LossAndLse forward = cross_entropy_with_lse(logits, targets, -100);
  EXPECT_TRUE(std::isnan(forward.loss.item<float>()));  // the forward's mean of nothing
  const Tensor grad = full({}, 1.0f);
  EXPECT_EQ(cross_entropy_backward(grad, logits, targets, forward.lse).to_vector<float>(),
            std::vector<float>(12, 0.0f));
  EXPECT_EQ(nll_loss_backward(grad, logits, targets).to_vector<float>(),
            std::vector<float>(12, 0.0f));
}

TEST(LossBackward, AreTheDerivativesOfTheLosses) {
  const Tensor logits = random_tensor({6, 5}, DType::Float64, -3, 3, 34);
  const Tensor grad = full({}, 1.7, DType::Float64);
  for (const std::int64_t ignore_index : {std::int64_t{-100}, std::int64_t{3}}) {
    // Rows 3 (and, with ignore_index 3, 1 and 5) are ignored.
    const Tensor targets = from_vector(std::vector<std::int64_t>{0, 3, 4, ignore_index, 2, 3});
    const LossAndLse forward = cross_entropy_with_lse(logits, targets, ignore_index);
    expect_gradient(
        cross_entropy_backward(grad, logits, targets, forward.lse, ignore_index),
        [&](const Tensor& t) { return cross_entropy(t, targets, ignore_index); }, logits, grad,
        str("cross_entropy, ignore_index ", ignore_index));
    expect_gradient(
        nll_loss_backward(grad, logits, targets, ignore_index),
        [&](const Tensor& t) { return nll_loss(t, targets, ignore_index); }, logits, grad,
        str("nll_loss, ignore_index ", ignore_index));
  }
}

TEST(LossBackward, CapturedGradientReadsGradAndTargetsWhenItRuns) {
  const Tensor logits = random_tensor({4, 5}, DType::Float32, -2, 2, 35);
  Tensor targets = from_vector(std::vector<std::int64_t>{1, 0, 4, 2});
  const Tensor lse = cross_entropy_with_lse(logits, targets, -100).lse;
  Tensor grad = full({}, 1.0f);  // the graph's input buffers: grad and targets
  const Stream stream = new_stream(kCPU);
  DeviceGraph graph(kCPU);
  Tensor out;
  {
    StreamGuard guard(stream);
    graph.begin_capture(stream);
    out = cross_entropy_backward(grad, logits, targets, lse);  // no host read of grad
    graph.end_capture();
  }
  grad.fill_(3.0f);
  graph.replay();
  expect_close(out, reference_backward(3.0, logits, targets, -100, true), 1e-5, 1e-6);
  targets.copy_(from_vector(std::vector<std::int64_t>{1, 0, 9, 2}));
  EXPECT_THAT(error_of([&] { graph.replay(); }),
              HasSubstr("cross_entropy_backward: target 9 at position 2 is out of range for 5 "
                        "classes"));
}

TEST(LossBackward, BadTargetsNameTheValueAndPosition) {
  const Tensor logits = zeros({4, 5});
  const Tensor grad = full({}, 1.0f);
  EXPECT_THAT(error_of([&] {
                cross_entropy_backward(
                    grad, logits, from_vector(std::vector<std::int64_t>{0, 1, 7, 2}), zeros({4}));
              }),
              HasSubstr("cross_entropy_backward: target 7 at position 2 is out of range for 5 "
                        "classes (expected a value in [0, 5) or ignore_index -100)"));
  EXPECT_THAT(
      error_of([&] {
        nll_loss_backward(grad, logits, from_vector(std::vector<std::int64_t>{0, -1, 1, 2}));
      }),
      HasSubstr("nll_loss_backward: target -1 at position 1 is out of range"));
}

TEST(LossBackward, ShapeAndDtypeErrors) {
  const Tensor logits = zeros({4, 5});
  const Tensor targets = zeros({4}, DType::Int64);
  const Tensor grad = full({}, 1.0f);
  const Tensor lse = zeros({4});
  EXPECT_THAT(error_of([&] { cross_entropy_backward(zeros({1}), logits, targets, lse); }),
              HasSubstr("cross_entropy_backward: expected a 0-d grad (of the mean loss) of dtype "
                        "float32, but got float32[1] (inputs: float32[1], float32[4, 5], "
                        "int64[4], float32[4])"));
  EXPECT_THAT(error_of([&] { nll_loss_backward(full({}, 1.0, DType::Float64), logits, targets); }),
              HasSubstr("nll_loss_backward: expected a 0-d grad (of the mean loss) of dtype "
                        "float32, but got float64[]"));
  EXPECT_THAT(error_of([&] { cross_entropy_backward(grad, logits, targets, zeros({5})); }),
              HasSubstr("cross_entropy_backward: expected lse of shape [4] and dtype float32 (the "
                        "cross_entropy op's second output), but got float32[5]"));
  EXPECT_THAT(
      error_of([&] { cross_entropy_backward(grad, logits, targets, zeros({4}, DType::Float64)); }),
      HasSubstr("expected lse of shape [4] and dtype float32"));
  EXPECT_THAT(error_of([&] { cross_entropy_backward(grad, logits, zeros({4}), lse); }),
              HasSubstr("cross_entropy_backward: expected int64 class indices as targets, but got "
                        "float32"));
  EXPECT_THAT(error_of([&] {
                cross_entropy_backward(grad, zeros({2, 2, 5}), targets, lse);
              }),
              HasSubstr("cross_entropy_backward: expected logits of shape (N, C)"));
  EXPECT_THAT(error_of([&] { nll_loss_backward(grad, logits, zeros({3}, DType::Int64)); }),
              HasSubstr("nll_loss_backward: expected targets of shape [4] (one per row of the "
                        "log-probabilities [4, 5]), but got [3]"));
  EXPECT_THAT(error_of([&] {
                nll_loss_backward(full({}, 1, DType::Int64), zeros({4, 5}, DType::Int64), targets);
              }),
              HasSubstr("nll_loss_backward: expected a floating-point input, but got int64"));
}

}  // namespace
}  // namespace grove::ops
