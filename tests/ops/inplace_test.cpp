// In-place updates against naive double references: every update on float32 and float64 with a
// non-contiguous target or operands, broadcast and 0-d operands, size-1 and size-0 shapes;
// integer forms; aliasing operands; copy_ with conversion; version counters; expanded targets
// and every error path. Also the one capture test of these families: a sequence of ops
// (embedding, layer_norm, cat, tril, in-place updates) captured on a CPU stream replays like
// eager with new inputs written in place, and rand inside the capture draws fresh numbers.
#include "ops/inplace.h"

#include "core/device_graph.h"
#include "op_test_util.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/layer_norm.h"
#include "ops/random.h"
#include "ops/shape.h"

namespace grove::ops {
namespace {

using testing::broadcast_index;
using testing::element;
using testing::elements;
using testing::error_of;
using testing::expect_close;
using ::testing::HasSubstr;
using testing::non_contiguous;
using testing::random_tensor;
using testing::relative_tolerance;

// Updates round an intermediate (a * b, alpha * y) to the dtype before adding it to x, so where
// the sum cancels the error is a few ulps of the O(1) operands, not of the result: an absolute
// floor of 1e-6 (float32, ulp(4) = 5e-7) or 1e-14 (float64) under the relative tolerance.
double absolute_floor(DType dtype) {
  return dtype == DType::Float32 ? 1e-6 : 1e-14;
}

double reference_lerp(double x, double end, double weight) {
  return weight < 0.5 ? x + weight * (end - x) : end - (end - x) * (1.0 - weight);
}

struct UpdateCase {
  const char* name;
  int operands;  // tensor operands after x
  void (*op)(const Tensor& x, const Tensor& a, const Tensor& b);
  double (*reference)(double x, double a, double b);
  double last_low, last_high;  // range of the last operand (denominators stay away from 0)
};

const UpdateCase kUpdateCases[] = {
    {"add", 1, [](const Tensor& x, const Tensor& a, const Tensor&) { add_(x, a); },
     [](double x, double a, double) { return x + a; }, -2, 2},
    {"add_alpha", 1, [](const Tensor& x, const Tensor& a, const Tensor&) { add_(x, a, -0.5); },
     [](double x, double a, double) { return x - 0.5 * a; }, -2, 2},
    {"mul", 1, [](const Tensor& x, const Tensor& a, const Tensor&) { mul_(x, a); },
     [](double x, double a, double) { return x * a; }, -2, 2},
    {"mul_scalar", 0, [](const Tensor& x, const Tensor&, const Tensor&) { mul_(x, 2.5); },
     [](double x, double, double) { return x * 2.5; }, -2, 2},
    {"addcmul", 2,
     [](const Tensor& x, const Tensor& a, const Tensor& b) { addcmul_(x, a, b, 0.25); },
     [](double x, double a, double b) { return x + 0.25 * a * b; }, -2, 2},
    {"addcdiv", 2,
     [](const Tensor& x, const Tensor& a, const Tensor& b) { addcdiv_(x, a, b, -0.75); },
     [](double x, double a, double b) { return x - 0.75 * a / b; }, 0.5, 2},
    {"lerp_low", 1, [](const Tensor& x, const Tensor& a, const Tensor&) { lerp_(x, a, 0.25); },
     [](double x, double a, double) { return reference_lerp(x, a, 0.25); }, -2, 2},
    {"lerp_high", 1, [](const Tensor& x, const Tensor& a, const Tensor&) { lerp_(x, a, 0.75); },
     [](double x, double a, double) { return reference_lerp(x, a, 0.75); }, -2, 2},
    {"lerp_tensor", 2, [](const Tensor& x, const Tensor& a, const Tensor& b) { lerp_(x, a, b); },
     [](double x, double a, double b) { return reference_lerp(x, a, b); }, 0, 1},
    {"fill", 0, [](const Tensor& x, const Tensor&, const Tensor&) { fill_(x, 1.25); },
     [](double, double, double) { return 1.25; }, -2, 2},
    {"zero", 0, [](const Tensor& x, const Tensor&, const Tensor&) { zero_(x); },
     [](double, double, double) { return 0.0; }, -2, 2},
    {"copy", 1, [](const Tensor& x, const Tensor& a, const Tensor&) { copy_(x, a); },
     [](double, double a, double) { return a; }, -2, 2},
};

class InplaceTest : public ::testing::TestWithParam<std::tuple<UpdateCase, DType>> {};

// Runs the case on x with operands of the given shapes (made non-contiguous if asked) and checks
// values, the returned handle and the version counter.
void check_update(const UpdateCase& c, const Tensor& x, IntArrayRef a_sizes, IntArrayRef b_sizes,
                  bool strided_operands, const std::string& layout) {
  const DType dtype = x.dtype();
  Tensor a = random_tensor(a_sizes, dtype, c.operands == 1 ? c.last_low : -2,
                           c.operands == 1 ? c.last_high : 2, 11);
  Tensor b = random_tensor(b_sizes, dtype, c.last_low, c.last_high, 12);
  if (strided_operands) {
    a = non_contiguous(a);
    b = non_contiguous(b);
  }
  const std::vector<double> before = elements(x);
  std::vector<double> expected(before.size());
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    expected[static_cast<std::size_t>(i)] = c.reference(
        before[static_cast<std::size_t>(i)], element(a, broadcast_index(a.sizes(), x.sizes(), i)),
        element(b, broadcast_index(b.sizes(), x.sizes(), i)));
  }
  const std::uint64_t version = x.version();
  c.op(x, a, b);
  EXPECT_EQ(x.version(), version + 1) << c.name << " " << layout;
  expect_close(x, expected, relative_tolerance(dtype), absolute_floor(dtype),
               str(c.name, " ", layout));
}

TEST_P(InplaceTest, MatchesReferenceInEveryLayout) {
  const auto& [c, dtype] = GetParam();
  auto target = [&](IntArrayRef sizes) { return random_tensor(sizes, dtype, -2, 2, 10); };
  check_update(c, target({3, 4, 5}), {3, 4, 5}, {3, 4, 5}, false, "contiguous");
  check_update(c, non_contiguous(target({3, 4, 5})), {3, 4, 5}, {3, 4, 5}, false,
               "non-contiguous target");
  check_update(c, target({3, 4, 5}).transpose(0, 2), {5, 4, 3}, {5, 4, 3}, true,
               "transposed target, non-contiguous operands");
  check_update(c, target({3, 4, 5}), {5}, {4, 1}, false, "broadcast operands");
  check_update(c, target({3, 4, 5}), {}, {1, 1, 5}, false, "0-d operand");
  check_update(c, target({1, 4, 1}), {1, 1}, {4, 1}, false, "size-1 dims");
  check_update(c, target({2, 0, 3}), {0, 3}, {3}, false, "size-0");
  check_update(c, target({}), {}, {}, false, "0-d target");
}

INSTANTIATE_TEST_SUITE_P(Ops, InplaceTest,
                         ::testing::Combine(::testing::ValuesIn(kUpdateCases),
                                            ::testing::Values(DType::Float32, DType::Float64)),
                         testing::CaseAndDtypeName());

TEST(Inplace, IntegerUpdates) {
  for (DType dtype : {DType::Int64, DType::Int32}) {
    Tensor x = from_vector(std::vector<std::int64_t>{1, -2, 3, 4}).to(dtype);
    Tensor y = from_vector(std::vector<std::int64_t>{10, 20, 30, 40}).to(dtype);
    add_(x, y, 2);
    EXPECT_EQ(x.to_vector<std::int64_t>(), (std::vector<std::int64_t>{21, 38, 63, 84}));
    mul_(x, 3);
    EXPECT_EQ(x.to_vector<std::int64_t>(), (std::vector<std::int64_t>{63, 114, 189, 252}));
    addcmul_(x, y, y.select(0, 0), -1);  // x -= y * 10
    EXPECT_EQ(x.to_vector<std::int64_t>(), (std::vector<std::int64_t>{-37, -86, -111, -148}));
    fill_(x, 7);
    EXPECT_EQ(x.to_vector<std::int64_t>(), (std::vector<std::int64_t>(4, 7)));
  }
}

TEST(Inplace, ReturnsTheTargetItself) {
  Tensor x = zeros({3});
  EXPECT_EQ(&add_(x, ones({3})), &x);
  EXPECT_EQ(&fill_(x, 2.0), &x);
  EXPECT_EQ(&uniform_(x), &x);
}

TEST(Inplace, OperandsAliasingTheTargetSeeTheOldValues) {
  Tensor x = random_tensor({3, 4}, DType::Float64, -2, 2, 3);
  const std::vector<double> old = elements(x);
  add_(x, x);  // element for element: safe in place
  std::vector<double> expected;
  for (double v : old) expected.push_back(2 * v);
  expect_close(x, expected, 1e-12);

  // Row 0 is read for every row, including after row 0 itself has been updated.
  Tensor y = random_tensor({3, 4}, DType::Float64, -2, 2, 4);
  const std::vector<double> y_old = elements(y);
  add_(y, y.select(0, 0));
  expected.clear();
  for (std::size_t i = 0; i < 12; ++i) expected.push_back(y_old[i] + y_old[i % 4]);
  expect_close(y, expected, 1e-12);

  // A shifted view of the same storage.
  Tensor z = random_tensor({6}, DType::Float64, -2, 2, 5);
  const std::vector<double> z_old = elements(z);
  mul_(z.narrow(0, 1, 5), z.narrow(0, 0, 5));
  for (std::size_t i = 1; i < 6; ++i) EXPECT_EQ(element(z, i), z_old[i] * z_old[i - 1]) << i;
}

TEST(Inplace, CopyConvertsDtypesAndBroadcasts) {
  Tensor x = zeros({2, 3});
  Tensor src = from_vector(std::vector<double>{1.5, -2.25, 3.0});
  copy_(x, src);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1.5f, -2.25f, 3.0f, 1.5f, -2.25f, 3.0f}));
  Tensor integers = zeros({3}, DType::Int64);
  copy_(integers, src);  // truncation toward zero, as C++ and PyTorch
  EXPECT_EQ(integers.to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, -2, 3}));
  Tensor flags = zeros({3}, DType::Bool);
  copy_(flags, from_vector(std::vector<float>{0.0f, 0.5f, -1.0f}));
  EXPECT_EQ(flags.to_vector<bool>(), (std::vector<bool>{false, true, true}));
}

TEST(Inplace, VersionCountersAreSharedByViewsAndUntouchedByErrors) {
  Tensor base = zeros({4, 4});
  Tensor view = base.select(0, 1);
  const std::uint64_t version = base.version();
  add_(view, ones({4}));
  normal_(view);
  EXPECT_EQ(base.version(), version + 2);
  EXPECT_THROW(add_(base, ones({5})), Error);
  EXPECT_EQ(base.version(), version + 2);
}

TEST(Inplace, ExpandedTargetsAreRefused) {
  Tensor expanded = zeros({1, 3}).expand({2, 3});
  const std::string message = error_of([&] { add_(expanded, ones({2, 3})); });
  EXPECT_THAT(message, HasSubstr("add_: cannot write in place into a broadcast (expanded) view: "
                                 "dimension 0 has stride 0"));
  EXPECT_THAT(message, HasSubstr("(inputs: float32[2, 3], float32[2, 3])"));
  EXPECT_THAT(error_of([&] { fill_(expanded, 1.0); }), HasSubstr("fill_: cannot write in place"));
  EXPECT_THAT(error_of([&] { uniform_(expanded); }), HasSubstr("uniform_: cannot write in place"));
}

TEST(Inplace, ErrorsNameOpShapesAndDtypes) {
  Tensor x = zeros({3});
  Tensor integers = zeros({3}, DType::Int64);
  EXPECT_THAT(error_of([&] {
                add_(x, zeros({2, 3}));
              }),
              HasSubstr("add_: operand 1 of shape [2, 3] does not broadcast to the target's shape "
                        "[3] (an in-place op cannot change its target's shape) (inputs: "
                        "float32[3], float32[2, 3])"));
  EXPECT_THAT(error_of([&] { mul_(x, zeros({4})); }),
              HasSubstr("mul_: shapes [3] and [4] cannot be broadcast together"));
  EXPECT_THAT(error_of([&] { addcmul_(x, x, zeros({3}, DType::Float64)); }),
              HasSubstr("addcmul_: expected operand 2 to have the target's dtype float32, but got "
                        "float64; convert it with to(dtype) (inputs: float32[3], float32[3], "
                        "float64[3])"));
  EXPECT_THAT(error_of([&] { add_(integers, integers, 0.5); }),
              HasSubstr("add_: a floating-point alpha (0.5) cannot be applied to a int64 tensor"));
  EXPECT_THAT(error_of([&] { mul_(integers, 1.5); }),
              HasSubstr("mul_: a floating-point scalar (1.5) cannot be applied to a int64 tensor "
                        "without truncating it (inputs: int64[3], scalar 1.5)"));
  EXPECT_THAT(error_of([&] { fill_(integers, 2.5); }),
              HasSubstr("fill_: a floating-point fill value (2.5) cannot be applied"));
  EXPECT_THAT(error_of([&] { addcdiv_(integers, integers, integers); }),
              HasSubstr("addcdiv_: expected a floating-point tensor to update, but got int64"));
  EXPECT_THAT(error_of([&] { lerp_(integers, integers, 0.5); }),
              HasSubstr("lerp_: expected a floating-point tensor to update, but got int64"));
  EXPECT_THAT(error_of([&] { add_(zeros({3}, DType::Bool), zeros({3}, DType::Bool)); }),
              HasSubstr("add_: expected a numeric tensor to update, but got bool"));
  EXPECT_THAT(error_of([&] { copy_(x, zeros({2})); }),
              HasSubstr("copy_: shapes [3] and [2] cannot be broadcast together"));
  EXPECT_THAT(error_of([&] {
                copy_(x, zeros({2, 3}));
              }),
              HasSubstr("copy_: the source of shape [2, 3] does not broadcast to the target's "
                        "shape [3]"));
  EXPECT_THAT(error_of([&] { add_(x, Tensor()); }), HasSubstr("add_: input 1 is undefined"));
  EXPECT_THAT(error_of([&] { uniform_(x, 1.0, 0.0); }),
              HasSubstr("uniform_: expected finite bounds with low <= high, but got low = 1 and "
                        "high = 0 (inputs: float32[3])"));
  EXPECT_THAT(error_of([&] { normal_(x, 0.0, -1.0); }),
              HasSubstr("normal_: expected a finite mean and a finite std >= 0, but got mean = 0 "
                        "and std = -1"));
  EXPECT_THAT(error_of([&] { uniform_(integers); }),
              HasSubstr("uniform_: expected a floating-point tensor to update, but got int64"));
}

// --- capture ---

Stream capture_stream() {
  static const Stream stream = new_stream(kCPU);
  return stream;
}

// token ids (2, 3), x (2, 3, 8) -> (3, 2, 12): embed, add, layer-norm a transposed view (which
// layer_norm copies), concatenate a constant, lower-triangle it and update it in place.
struct Program {
  Tensor table = random_tensor({10, 8}, DType::Float32, -1, 1, 21);
  Tensor gamma = random_tensor({8}, DType::Float32, 0.5, 1.5, 22);
  Tensor beta = random_tensor({8}, DType::Float32, -0.5, 0.5, 23);
  Tensor extra = random_tensor({3, 2, 4}, DType::Float32, -1, 1, 24);

  Tensor operator()(const Tensor& tokens, const Tensor& x) const {
    Tensor h = add(embedding(table, tokens), x);
    Tensor normed = layer_norm(h.transpose(0, 1), {8}, gamma, beta);
    Tensor joined = tril(cat({normed, extra}, -1));
    addcmul_(joined, joined, extra.narrow(2, 0, 1), 0.5);
    return joined;
  }
};

TEST(InplaceCaptureTest, CapturedSequenceReplaysLikeEagerWithNewInputs) {
  const Program program;
  Tensor tokens = zeros({2, 3}, DType::Int64);  // the graph's input buffers
  Tensor x = zeros({2, 3, 8});
  DeviceGraph graph(kCPU);
  Tensor output, noise;
  {
    StreamGuard guard(capture_stream());
    graph.begin_capture(capture_stream());
    output = program(tokens, x);
    noise = rand({6});
    graph.end_capture();
  }
  std::vector<std::vector<float>> draws;
  for (unsigned trial = 0; trial < 3; ++trial) {
    const Tensor new_tokens = testing::random_integers({2, 3}, 0, 10, 30 + trial);
    const Tensor new_x = random_tensor({2, 3, 8}, DType::Float32, -1, 1, 40 + trial);
    copy_(tokens, new_tokens);
    copy_(x, new_x);
    graph.replay();
    const Tensor eager = program(new_tokens, new_x);
    EXPECT_EQ(output.to_vector<float>(), eager.to_vector<float>()) << "trial " << trial;
    draws.push_back(noise.to_vector<float>());
    for (float value : draws.back()) EXPECT_TRUE(value >= 0.0f && value < 1.0f) << value;
  }
  EXPECT_NE(draws[0], draws[1]);  // fresh numbers on every replay
  EXPECT_NE(draws[1], draws[2]);
  // A replay draws what an eager call would draw from the same generator state: the kernel read
  // the seed and offset when it ran, not when it was captured.
  manual_seed(99);
  graph.replay();
  const std::vector<float> replayed = noise.to_vector<float>();
  manual_seed(99);
  EXPECT_EQ(replayed, rand({6}).to_vector<float>());
}

}  // namespace
}  // namespace grove::ops
