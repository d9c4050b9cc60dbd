// softmax, log_softmax, cross_entropy and nll_loss against naive references in double: every
// dim, contiguous, non-contiguous and transposed inputs, size-1 and size-0 dims, float32 and
// float64, rows large enough to run on several threads; extreme logits, -inf and NaN; ignored
// targets; the saved log-sum-exp; captured losses; and the error paths.
#include "ops/softmax.h"

#include "core/device_graph.h"
#include "op_test_util.h"
#include "ops/dispatch.h"

namespace grove::ops {
namespace {

using testing::element;
using testing::elements;
using testing::error_of;
using testing::expect_close;
using ::testing::HasSubstr;
using testing::non_contiguous;
using testing::random_integers;
using testing::random_tensor;
using testing::relative_tolerance;

// --- softmax, log_softmax ---

// Reference along `dim`: for every element, its row's values (row-major positions).
std::vector<double> reference_softmax(const Tensor& x, std::int64_t dim, bool log) {
  const std::int64_t ndim = std::max<std::int64_t>(x.dim(), 1);
  dim = dim < 0 ? dim + ndim : dim;
  const std::int64_t length = x.dim() == 0 ? 1 : x.size(dim);
  std::int64_t inner = 1;  // row-major distance between neighbours along dim
  for (std::int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
  std::vector<double> result(static_cast<std::size_t>(x.numel()));
  std::vector<double> row_max(result.size()), row_sum(result.size());  // at each row's start
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const std::int64_t position = (i / inner) % length;
    const auto first = static_cast<std::size_t>(i - position * inner);
    if (position == 0) {  // a row's first element comes before the rest of the row
      double max = -INFINITY;
      for (std::int64_t j = 0; j < length; ++j) max = std::max(max, element(x, i + j * inner));
      double sum = 0.0;
      for (std::int64_t j = 0; j < length; ++j) sum += std::exp(element(x, i + j * inner) - max);
      row_max[first] = max;
      row_sum[first] = sum;
    }
    const double shifted = element(x, i) - row_max[first];
    result[static_cast<std::size_t>(i)] =
        log ? shifted - std::log(row_sum[first]) : std::exp(shifted) / row_sum[first];
  }
  return result;
}

struct SoftmaxCase {
  const char* name;
  std::vector<std::int64_t> sizes;
  std::int64_t dim;
};

const SoftmaxCase kSoftmaxCases[] = {
    {"last", {4, 7}, -1},
    {"first", {4, 7}, 0},
    {"middle", {2, 3, 5}, 1},
    {"middle_negative", {2, 3, 5}, -2},
    {"row_of_one", {3, 1}, 1},
    {"rows_of_zero", {2, 0, 3}, 1},
    {"no_rows", {0, 5}, 1},
    {"scalar", {}, 0},
    {"long_rows", {3, 1000}, -1},
    {"many_rows", {300, 128}, 1},  // above the threshold for splitting rows over threads
};

// Readable parameters in failure messages (gtest prints structs as bytes otherwise).
void PrintTo(const SoftmaxCase& c, std::ostream* out) {
  *out << c.name << ": sizes " << IntArrayRef(c.sizes) << ", dim " << c.dim;
}

class SoftmaxTest : public ::testing::TestWithParam<std::tuple<SoftmaxCase, DType, bool>> {};

void check_softmax(const Tensor& x, std::int64_t dim, bool log, const std::string& layout) {
  Tensor output = log ? log_softmax(x, dim) : softmax(x, dim);
  EXPECT_EQ(output.sizes(), x.sizes()) << layout;
  EXPECT_EQ(output.dtype(), x.dtype()) << layout;
  // float32: exp is evaluated in float32 by vectorised code (about 2 ulps) on arguments
  // x - max that carry float32 rounding; 1e-5 covers that for logits within a few units.
  // log_softmax values near zero get the absolute floor.
  const double rtol = relative_tolerance(x.dtype());
  expect_close(output, reference_softmax(x, dim, log), rtol, rtol * 1e-2, layout);
}

TEST_P(SoftmaxTest, MatchesReferenceInEveryLayout) {
  const auto& [c, dtype, log] = GetParam();
  Tensor base = random_tensor(c.sizes, dtype, -4.0, 4.0, 21);
  check_softmax(base, c.dim, log, "contiguous");
  check_softmax(non_contiguous(base), c.dim, log, "non-contiguous");
  if (c.sizes.size() >= 2) {
    check_softmax(base.transpose(0, -1).contiguous().transpose(0, -1), c.dim, log, "transposed");
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, SoftmaxTest,
                         ::testing::Combine(::testing::ValuesIn(kSoftmaxCases),
                                            ::testing::Values(DType::Float32, DType::Float64),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return str(std::get<2>(info.param) ? "log_softmax_" : "softmax_",
                                      std::get<0>(info.param).name, "_",
                                      dtype_name(std::get<1>(info.param)));
                         });

TEST(Softmax, ExtremeLogitsDoNotOverflow) {
  Tensor x = from_vector(std::vector<float>{1000, 0, -1000, 88, 89, 90}, {2, 3});
  expect_close(softmax(x, 1), reference_softmax(x, 1, false), 1e-5, 1e-30);
  expect_close(log_softmax(x, 1), reference_softmax(x, 1, true), 1e-5);
  EXPECT_EQ(softmax(x, 1).to_vector<float>()[0], 1.0f);
}

TEST(Softmax, WideLogitsKeepRelativeAccuracy) {
  // x - max reaches -85, near the bottom of float's normal range, where exp is hardest to get
  // right; tiny probabilities must still be accurate relative to themselves.
  for (DType dtype : {DType::Float32, DType::Float64}) {
    Tensor x = random_tensor({64, 200}, dtype, -80.0, 5.0, 22);
    expect_close(softmax(x, 1), reference_softmax(x, 1, false), relative_tolerance(dtype));
    expect_close(log_softmax(x, 1), reference_softmax(x, 1, true), relative_tolerance(dtype));
  }
}

TEST(Softmax, NegativeInfinityIsProbabilityZeroAndNanSpreads) {
  const float inf = INFINITY;
  // Row 0: a masked position; row 1: NaN; row 2: every position masked (NaN, as PyTorch).
  Tensor x = from_vector(std::vector<float>{-inf, 0, 1, 2, NAN, 1, -inf, -inf, -inf}, {3, 3});
  for (const Tensor& input : {x, non_contiguous(x)}) {
    const std::vector<float> p = softmax(input, 1).to_vector<float>();
    const std::vector<float> logp = log_softmax(input, 1).to_vector<float>();
    EXPECT_EQ(p[0], 0.0f);
    EXPECT_EQ(logp[0], -inf);
    EXPECT_NEAR(p[1] + p[2], 1.0f, 1e-6);
    for (int i = 3; i < 9; ++i) EXPECT_TRUE(std::isnan(p[i]) && std::isnan(logp[i])) << i;
  }
}

TEST(Softmax, ErrorsNameTheOpShapesAndDtypes) {
  std::string message = error_of([] { softmax(zeros({2, 3}), 2); });
  EXPECT_THAT(message, HasSubstr("softmax: dimension 2 is out of range for a 2-d input"));
  EXPECT_THAT(message, HasSubstr("(inputs: float32[2, 3])"));
  EXPECT_THAT(error_of([] {
                log_softmax(zeros({2, 3}, DType::Int64), 1);
              }),
              HasSubstr("log_softmax: expected a floating-point input, but got int64"));
}

// --- cross_entropy, nll_loss ---

// mean over non-ignored rows of -log_probs[i, t_i]; log_probs from `scores` when from_logits.
double reference_loss(const Tensor& scores, const Tensor& targets, std::int64_t ignore_index,
                      bool from_logits) {
  const std::int64_t classes = scores.size(1);
  const std::vector<double> log_probs =
      from_logits ? reference_softmax(scores, 1, true) : elements(scores);
  long double total = 0;
  std::int64_t count = 0;
  for (std::int64_t i = 0; i < scores.size(0); ++i) {
    const auto target = static_cast<std::int64_t>(element(targets, i));
    if (target == ignore_index) continue;
    total -= log_probs[static_cast<std::size_t>(i * classes + target)];
    ++count;
  }
  return static_cast<double>(total / count);
}

struct LossCase {
  const char* name;
  std::int64_t rows, classes, ignore_index;
  int ignored_every;  // every k-th target is set to ignore_index (0: none)
};

const LossCase kLossCases[] = {
    {"small", 5, 7, -100, 0},
    {"ignored_rows", 9, 4, -100, 3},
    {"ignore_a_class", 8, 5, 2, 0},  // ignore_index inside [0, C): that class is skipped
    {"one_class", 3, 1, -100, 0},
    {"many_rows", 300, 128, -100, 7},  // above the threshold for splitting rows over threads
    {"all_ignored", 4, 3, -100, 1},    // NaN, as PyTorch
    {"no_rows", 0, 3, -100, 0},        // NaN
};

void PrintTo(const LossCase& c, std::ostream* out) {
  *out << c.name << ": (" << c.rows << ", " << c.classes << "), ignore_index " << c.ignore_index;
}

class CrossEntropyTest : public ::testing::TestWithParam<std::tuple<LossCase, DType>> {};

TEST_P(CrossEntropyTest, MatchesReferenceInEveryLayout) {
  const auto& [c, dtype] = GetParam();
  Tensor logits = random_tensor({c.rows, c.classes}, dtype, -4.0, 4.0, 31);
  Tensor targets = random_integers({c.rows}, 0, c.classes, 32);
  if (c.ignored_every > 0) targets.slice(0, 0, c.rows, c.ignored_every).fill_(c.ignore_index);
  // The loss is a mean of row terms of size about log C, summed in double.
  const double rtol = relative_tolerance(dtype);
  const struct {
    const char* layout;
    Tensor logits, targets;
  } layouts[] = {
      {"contiguous", logits, targets},
      {"non-contiguous", non_contiguous(logits), non_contiguous(targets)},
      {"transposed", logits.t().contiguous().t(), targets},
  };
  for (const auto& layout : layouts) {
    const double expected = reference_loss(layout.logits, layout.targets, c.ignore_index, true);
    Tensor loss = cross_entropy(layout.logits, layout.targets, c.ignore_index);
    EXPECT_EQ(loss.dim(), 0) << layout.layout;
    EXPECT_EQ(loss.dtype(), dtype) << layout.layout;
    expect_close(loss, {expected}, rtol, 0.0, str("cross_entropy ", layout.layout));
    Tensor log_probs = from_vector(reference_softmax(layout.logits, 1, true))
                           .reshape({c.rows, c.classes})
                           .to(dtype);
    expect_close(nll_loss(log_probs, layout.targets, c.ignore_index),
                 {reference_loss(log_probs, layout.targets, c.ignore_index, false)}, rtol, 0.0,
                 str("nll_loss ", layout.layout));
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, CrossEntropyTest,
                         ::testing::Combine(::testing::ValuesIn(kLossCases),
                                            ::testing::Values(DType::Float32, DType::Float64)),
                         [](const auto& info) {
                           return str(std::get<0>(info.param).name, "_",
                                      dtype_name(std::get<1>(info.param)));
                         });

// Keeps the outputs of the last cross_entropy call, as autograd will.
struct SavedOutputs : OpObserver {
  Tensor loss, lse;
  void on_op(const OpCall& call, const OpOutputs& outputs) override {
    if (call.kind != OpKind::CrossEntropy) return;
    loss = outputs[0];
    lse = outputs[1];
  }
};

TEST(CrossEntropy, SavesEachRowsLogSumExpForAutograd) {
  // See Note [Cross-entropy saves the log-sum-exp].
  Tensor logits = random_tensor({6, 5}, DType::Float64, -3, 3, 33);
  Tensor targets = from_vector(std::vector<std::int64_t>{0, -100, 4, 1, 2, 3});
  SavedOutputs saved;
  Tensor loss;
  {
    OpObserverGuard guard(&saved);
    loss = cross_entropy(logits, targets);
  }
  ASSERT_TRUE(saved.lse.defined());
  EXPECT_EQ(saved.loss.item<double>(), loss.item<double>());
  std::vector<double> expected;
  for (std::int64_t i = 0; i < 6; ++i) {
    double sum = 0.0;
    for (std::int64_t j = 0; j < 5; ++j) sum += std::exp(element(logits, i * 5 + j));
    expected.push_back(std::log(sum));
  }
  expect_close(saved.lse, expected, 1e-12);  // every row, the ignored one too
}

TEST(CrossEntropy, CapturedLossChecksTargetsWhenItRuns) {
  Tensor logits = random_tensor({4, 5}, DType::Float32, -2, 2, 34);
  Tensor targets = from_vector(std::vector<std::int64_t>{1, 0, 4, 2});
  const Stream stream = new_stream(kCPU);
  DeviceGraph graph(kCPU);
  Tensor loss;
  {
    StreamGuard guard(stream);
    graph.begin_capture(stream);
    loss = cross_entropy(logits, targets);  // reads no targets on the host
    graph.end_capture();
  }
  graph.replay();
  expect_close(loss, {reference_loss(logits, targets, -100, true)}, 1e-5);
  targets.copy_(from_vector(std::vector<std::int64_t>{1, 0, 9, 2}));
  EXPECT_THAT(error_of([&] { graph.replay(); }),
              HasSubstr("cross_entropy: target 9 at position 2 is out of range for 5 classes"));
}

TEST(CrossEntropy, BadTargetsNameTheValueAndPosition) {
  Tensor logits = zeros({4, 5});
  std::string message = error_of([&] {
    cross_entropy(logits, from_vector(std::vector<std::int64_t>{0, 1, 7, 2}));
  });
  EXPECT_THAT(message, HasSubstr("cross_entropy: target 7 at position 2 is out of range for 5 "
                                 "classes (expected a value in [0, 5) or ignore_index -100)"));
  EXPECT_THAT(message, HasSubstr("(inputs: float32[4, 5], int64[4])"));
  EXPECT_THAT(error_of([&] {
                nll_loss(logits, from_vector(std::vector<std::int64_t>{0, -1, 1, 2}));
              }),
              HasSubstr("nll_loss: target -1 at position 1 is out of range for 5 classes"));
  // -1 is fine once it is the ignore_index.
  EXPECT_FALSE(std::isnan(
      nll_loss(logits, from_vector(std::vector<std::int64_t>{0, -1, 1, 2}), -1).item<float>()));
}

TEST(CrossEntropy, ShapeAndDtypeErrors) {
  Tensor logits = zeros({4, 5});
  Tensor targets = zeros({4}, DType::Int64);
  std::string message = error_of([&] { cross_entropy(logits, zeros({4})); });
  EXPECT_THAT(message, HasSubstr("cross_entropy: expected int64 class indices as targets, but "
                                 "got float32"));
  EXPECT_THAT(message, HasSubstr("(inputs: float32[4, 5], float32[4])"));
  EXPECT_THAT(error_of([&] { cross_entropy(logits, zeros({3}, DType::Int64)); }),
              HasSubstr("expected targets of shape [4] (one per row of the logits [4, 5]), but "
                        "got [3]"));
  EXPECT_THAT(error_of([&] {
                cross_entropy(zeros({2, 2, 5}), targets);
              }),
              HasSubstr("cross_entropy: expected logits of shape (N, C), but got shape [2, 2, 5]"));
  EXPECT_THAT(error_of([&] {
                cross_entropy(zeros({4, 5}, DType::Int64), targets);
              }),
              HasSubstr("cross_entropy: expected a floating-point input, but got int64"));
  EXPECT_THAT(error_of([&] {
                cross_entropy(zeros({4, 0}), targets);
              }),
              HasSubstr("cross_entropy: expected at least one class"));
  EXPECT_THAT(error_of([&] {
                nll_loss(logits, zeros({4, 1}, DType::Int64));
              }),
              HasSubstr("nll_loss: expected targets of shape [4] (one per row of the "
                        "log-probabilities [4, 5]), but got [4, 1]"));
}

}  // namespace
}  // namespace grove::ops
