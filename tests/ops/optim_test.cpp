// Fused optimizer updates (ops/optim.h) against plain double references of PyTorch's SGD and
// AdamW formulas, over several steps, with contiguous and strided tensors; their argument checks;
// and a captured AdamW step that reads its step number at replay time.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/device_graph.h"
#include "ops/inplace.h"
#include "ops/optim.h"
#include "tests/ops/op_test_util.h"

namespace grove::ops::testing {
namespace {

struct SgdCase {
  const char* name;
  SgdHyperparameters options;
  bool strided;
};

// Test names show the case's name, not the struct's bytes.
void PrintTo(const SgdCase& c, std::ostream* out) {
  *out << c.name;
}

class SgdTest : public ::testing::TestWithParam<std::tuple<SgdCase, DType>> {};

TEST_P(SgdTest, MatchesDoubleReferenceOverSteps) {
  const auto& [c, dtype] = GetParam();
  Tensor param = random_tensor({7, 5}, dtype, -1, 1, 1);
  Tensor velocity = zeros({7, 5}, TensorOptions(dtype));
  if (c.strided) {
    param = non_contiguous(param);
    velocity = non_contiguous(velocity);
  }
  std::vector<double> p = elements(param);
  std::vector<double> v(p.size(), 0.0);
  const SgdHyperparameters& o = c.options;
  for (unsigned step = 0; step < 4; ++step) {
    Tensor grad = random_tensor({7, 5}, dtype, -1, 1, 10 + step);
    if (c.strided) grad = non_contiguous(grad);
    const std::vector<double> g0 = elements(grad);
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double g = g0[i] + o.weight_decay * p[i];
      double direction = g;
      if (o.momentum != 0) {
        v[i] = o.momentum * v[i] + g;
        direction = o.nesterov ? g + o.momentum * v[i] : v[i];
      }
      p[i] -= o.lr * direction;
    }
    sgd_(param, grad, o.momentum != 0 ? velocity : Tensor(), o);
  }
  // float32: four steps of a few roundings each on values of order 1.
  const double rtol = dtype == DType::Float32 ? 1e-5 : 1e-12;
  expect_close(param, p, rtol, 1e-6, c.name);
  if (o.momentum != 0) expect_close(velocity, v, rtol, 1e-6, c.name);
}

const SgdCase kSgdCases[] = {
    {"plain", {0.1, 0.0, 0.0, false}, false},
    {"momentum", {0.1, 0.9, 0.0, false}, false},
    {"momentum_weight_decay", {0.05, 0.9, 0.01, false}, false},
    {"nesterov", {0.1, 0.9, 0.0, true}, false},
    {"nesterov_strided", {0.1, 0.8, 0.1, true}, true},
    {"plain_strided", {0.3, 0.0, 0.2, false}, true},
};

INSTANTIATE_TEST_SUITE_P(Optim, SgdTest,
                         ::testing::Combine(::testing::ValuesIn(kSgdCases),
                                            ::testing::Values(DType::Float32, DType::Float64)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::string(dtype_name(std::get<1>(info.param)));
                         });

// The fused update equals the three in-place ops the same step takes when written out.
TEST(OptimTest, SgdEqualsTheInPlaceOps) {
  const Tensor grad = random_tensor({64}, DType::Float64, -1, 1, 3);
  Tensor p1 = random_tensor({64}, DType::Float64, -1, 1, 4);
  Tensor p2 = p1.clone();
  Tensor v1 = random_tensor({64}, DType::Float64, -1, 1, 5);
  Tensor v2 = v1.clone();
  sgd_(p1, grad, v1, {0.01, 0.9, 0.0, false});
  mul_(v2, 0.9);
  add_(v2, grad);
  add_(p2, v2, -0.01);
  // One rounding apart at most: the fused kernel may contract a * b + c into one FMA.
  expect_close(p1, elements(p2), 1e-14);
  expect_close(v1, elements(v2), 1e-14);
}

void adamw_reference(std::vector<double>& p, std::vector<double>& m, std::vector<double>& v,
                     const std::vector<double>& g, const AdamwHyperparameters& o, double t) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    p[i] *= 1 - o.lr * o.weight_decay;
    m[i] = o.beta1 * m[i] + (1 - o.beta1) * g[i];
    v[i] = o.beta2 * v[i] + (1 - o.beta2) * g[i] * g[i];
    const double denominator = std::sqrt(v[i]) / std::sqrt(1 - std::pow(o.beta2, t)) + o.eps;
    p[i] -= o.lr / (1 - std::pow(o.beta1, t)) * m[i] / denominator;
  }
}

class AdamwTest : public ::testing::TestWithParam<std::tuple<DType, DType, bool>> {};

TEST_P(AdamwTest, MatchesDoubleReferenceOverSteps) {
  const auto& [dtype, step_dtype, strided] = GetParam();
  const AdamwHyperparameters o{0.01, 0.9, 0.99, 1e-8, 0.1};
  Tensor param = random_tensor({6, 4}, dtype, -1, 1, 1);
  Tensor exp_avg = zeros({6, 4}, TensorOptions(dtype));
  Tensor exp_avg_sq = zeros({6, 4}, TensorOptions(dtype));
  if (strided) {
    param = non_contiguous(param);
    exp_avg = non_contiguous(exp_avg);
    exp_avg_sq = non_contiguous(exp_avg_sq);
  }
  const Tensor step = zeros({1}, TensorOptions(step_dtype));
  const Tensor one = ones({1}, TensorOptions(step_dtype));
  std::vector<double> p = elements(param);
  std::vector<double> m(p.size(), 0.0);
  std::vector<double> v(p.size(), 0.0);
  for (unsigned t = 1; t <= 5; ++t) {
    const Tensor grad = random_tensor({6, 4}, dtype, -1, 1, 20 + t);
    add_(step, one);
    adamw_(param, grad, exp_avg, exp_avg_sq, step, o);
    adamw_reference(p, m, v, elements(grad), o, t);
  }
  // float32: each step divides by sqrt(v) ~ |g|; five steps keep within a few ulps of 1e-2.
  const double rtol = dtype == DType::Float32 ? 2e-5 : 1e-12;
  expect_close(param, p, rtol, 1e-6, "param");
  expect_close(exp_avg, m, rtol, 1e-7, "exp_avg");
  expect_close(exp_avg_sq, v, rtol, 1e-9, "exp_avg_sq");
}

INSTANTIATE_TEST_SUITE_P(Optim, AdamwTest,
                         ::testing::Combine(::testing::Values(DType::Float32, DType::Float64),
                                            ::testing::Values(DType::Int64, DType::Float32),
                                            ::testing::Bool()));

// A captured AdamW step reads the step number when it runs: replaying the captured
// (add_(step, one); adamw_) gives the same values as running it eagerly.
TEST(OptimTest, CapturedAdamwReadsTheStepAtReplay) {
  const AdamwHyperparameters o{0.1, 0.9, 0.999, 1e-8, 0.0};
  const Tensor grad = random_tensor({16}, DType::Float32, -1, 1, 7);
  Tensor eager_param = random_tensor({16}, DType::Float32, -1, 1, 8);
  Tensor param = eager_param.clone();
  const Tensor eager_m = zeros({16}), eager_v = zeros({16}), eager_step = zeros({1});
  const Tensor m = zeros({16}), v = zeros({16}), step = zeros({1}), one = ones({1});
  DeviceGraph graph(kCPU);
  graph.begin_capture(current_stream(kCPU));
  add_(step, one);
  adamw_(param, grad, m, v, step, o);
  graph.end_capture();
  for (int i = 0; i < 3; ++i) {
    graph.replay();
    add_(eager_step, one);
    adamw_(eager_param, grad, eager_m, eager_v, eager_step, o);
  }
  synchronize(current_stream(kCPU));
  EXPECT_EQ(step.item<float>(), 3.0f);
  expect_close(param, elements(eager_param), 0.0, 0.0, "param after three replays");
}

// With the learning rate in a float64 tensor holding options' value, both updates give the
// bits of the fixed-rate form, step after step.
TEST(OptimTest, LrTensorGivesTheFixedRatesBits) {
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor grad = random_tensor({24}, dtype, -1, 1, 11);
    const Tensor start = random_tensor({24}, dtype, -1, 1, 12);
    const SgdHyperparameters sgd{0.05, 0.9, 0.01, true};
    Tensor p1 = start.clone(), p2 = start.clone();
    const Tensor v1 = zeros_like(start), v2 = zeros_like(start);
    const Tensor lr = full({}, sgd.lr, TensorOptions(DType::Float64));
    const AdamwHyperparameters adamw{0.01, 0.9, 0.99, 1e-8, 0.1};
    Tensor q1 = start.clone(), q2 = start.clone();
    const Tensor m1 = zeros_like(start), m2 = zeros_like(start), s1 = zeros_like(start),
                 s2 = zeros_like(start), step = ones({1});
    const Tensor adam_lr = full({}, adamw.lr, TensorOptions(DType::Float64));
    for (int i = 0; i < 3; ++i) {
      sgd_(p1, grad, v1, sgd);
      sgd_(p2, grad, v2, lr, SgdHyperparameters{0.0, sgd.momentum, sgd.weight_decay, sgd.nesterov});
      adamw_(q1, grad, m1, s1, step, adamw);
      adamw_(q2, grad, m2, s2, step, adam_lr, adamw);
    }
    expect_close(p2, elements(p1), 0.0, 0.0, "sgd_ with an lr tensor");
    expect_close(q2, elements(q1), 0.0, 0.0, "adamw_ with an lr tensor");
  }
}

// A captured update reads the learning rate when it replays: a schedule that writes the lr
// tensor between replays gives what eager updates with those rates give.
TEST(OptimTest, CapturedUpdatesFollowTheLrTensor) {
  const Tensor grad = random_tensor({16}, DType::Float32, -1, 1, 7);
  Tensor eager_p = random_tensor({16}, DType::Float32, -1, 1, 8);
  Tensor eager_q = eager_p.clone();
  Tensor p = eager_p.clone(), q = eager_p.clone();
  const Tensor eager_v = zeros({16}), v = zeros({16});
  const Tensor eager_m = zeros({16}), eager_s = zeros({16}), m = zeros({16}), s = zeros({16});
  const Tensor step = ones({1});
  const Tensor lr = full({}, 0.0f);
  DeviceGraph graph(kCPU);
  graph.begin_capture(current_stream(kCPU));
  sgd_(p, grad, v, lr, SgdHyperparameters{0.0, 0.9, 0.0, false});
  adamw_(q, grad, m, s, step, lr, AdamwHyperparameters{0.0, 0.9, 0.999, 1e-8, 0.1});
  graph.end_capture();
  for (const float rate : {0.1f, 0.05f, 0.025f}) {
    lr.fill_(rate);
    graph.replay();
    sgd_(eager_p, grad, eager_v, SgdHyperparameters{rate, 0.9, 0.0, false});
    const Tensor eager_lr = full({}, rate);
    adamw_(eager_q, grad, eager_m, eager_s, step, eager_lr,
           AdamwHyperparameters{0.0, 0.9, 0.999, 1e-8, 0.1});
  }
  synchronize(current_stream(kCPU));
  expect_close(p, elements(eager_p), 0.0, 0.0, "sgd_ after three replays");
  expect_close(q, elements(eager_q), 0.0, 0.0, "adamw_ after three replays");
}

TEST(OptimTest, RefusesBadArguments) {
  const Tensor p = zeros({4}), g = zeros({4}), v = zeros({4}), step = ones({1});
  auto message_of = [](auto body) -> std::string {
    try {
      body();
    } catch (const Error& error) {
      return error.what();
    }
    return "";
  };
  EXPECT_NE(message_of([&] {
              sgd_(p, zeros({5}), v, {0.1, 0.9, 0, false});
            }).find("expected grad to have the parameter's sizes [4], but got [5]"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              sgd_(p, g, Tensor(), {0.1, 0.9, 0, false});
            }).find("needs a velocity tensor"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              sgd_(p, g, v, {0.1, 0.0, 0, true});
            }).find("nesterov needs"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              sgd_(p, g, v, {-1, 0.9, 0, false});
            }).find("expected lr >= 0"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              sgd_(p, p, v, {0.1, 0.9, 0, false});
            }).find("param and grad share memory"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              sgd_(zeros({4}, TensorOptions(DType::Int64)), g, v, {});
            }).find("expected a float32 or float64 parameter"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              sgd_(p, g.to(DType::Float64), v, {0.1, 0.9, 0, false});
            }).find("expected grad to have the parameter's dtype float32"),
            std::string::npos);
  AdamwHyperparameters bad_beta;
  bad_beta.beta2 = 1.0;
  EXPECT_NE(message_of([&] {
              adamw_(p, g, zeros({4}), zeros({4}), step, bad_beta);
            }).find("expected beta2 in [0, 1)"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              adamw_(p, g, zeros({4}), zeros({4}), ones({2}), {});
            }).find("one-element numeric tensor"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              sgd_(p, g, v, ones({2}), {0.0, 0.9});
            }).find("expected lr to be a one-element float32 or float64 tensor"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              adamw_(p, g, zeros({4}), zeros({4}), step, p.slice(0, 0, 1).view({}), {});
            }).find("input 0 shares memory with lr"),
            std::string::npos);
  // Halves of one buffer may serve as two tensors; overlapping views may not.
  const Tensor buffer = zeros({8});
  EXPECT_EQ(message_of([&] {
              sgd_(buffer.slice(0, 0, 4), g, buffer.slice(0, 4, 8), {0.1, 0.9});
            }),
            "");
  EXPECT_NE(message_of([&] {
              sgd_(buffer.slice(0, 0, 4), g, buffer.slice(0, 3, 7), {0.1, 0.9});
            }).find("param and velocity share memory"),
            std::string::npos);
  // A state whose elements share memory would be updated by racing writes.
  EXPECT_NE(message_of([&] {
              sgd_(p, g, zeros({1}).expand({4}), {0.1, 0.9});
            }).find("velocity has elements that share memory"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              adamw_(p, g, zeros({4}), zeros({1}).expand({4}), step, {});
            }).find("exp_avg_sq has elements that share memory"),
            std::string::npos);
}

// A step below 1 is not a step: the parameter turns NaN instead of moving by a wrong amount.
TEST(OptimTest, AdamwStepBelowOnePoisonsTheParameter) {
  const Tensor p = ones({3});
  adamw_(p, ones({3}), zeros({3}), zeros({3}), zeros({1}), {});
  for (const float value : p.to_vector<float>()) EXPECT_TRUE(std::isnan(value));
}

}  // namespace
}  // namespace grove::ops::testing
