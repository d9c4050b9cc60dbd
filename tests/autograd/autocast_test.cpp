// Autocast (ops/autocast.h): the dtype each op runs in under a guard, the casts it makes and
// keeps, and the guard's scope.
#include <gtest/gtest.h>

#include "autograd/autograd.h"
#include "autograd/grad_mode.h"
#include "core/core_observer.h"
#include "ops/autocast.h"
#include "tests/misuse/op_samples.h"

namespace grove {
namespace {

using ops::AutocastRule;
using ops::OpKind;

// Counts the copies core makes (to(dtype) among them).
class CopyCounter final : public CoreObserver {
 public:
  void on_derived(const Tensor&, const Tensor& result, DerivedKind kind, IntArrayRef) override {
    if (kind == DerivedKind::Copy) dtypes.push_back(result.dtype());
  }
  std::vector<DType> dtypes;
};

// The sample call of `kind` with its float32 inputs converted to `dtype`.
misuse::Sample sample_in(OpKind kind, DType dtype) {
  misuse::Sample sample = misuse::sample_of(kind);
  for (Tensor& input : sample.inputs) {
    if (input.dtype() == DType::Float32) input = input.to(dtype);
  }
  return sample;
}

TEST(Autocast, EveryOpRunsInTheDTypeOfItsRule) {
  for (const DType low : {DType::BFloat16, DType::Float16}) {
    for (std::size_t k = 0; k < misuse::kNumOps; ++k) {
      const auto kind = static_cast<OpKind>(k);
      const AutocastRule rule = ops::autocast_rule(kind);
      if (rule == AutocastRule::Follow) continue;
      SCOPED_TRACE(std::string(ops::op_name(kind)) + " " + std::string(dtype_name(low)));
      // Lower: float32 in, the guard's dtype out. Float32: 16-bit in, float32 out.
      const misuse::Sample sample =
          rule == AutocastRule::Lower ? sample_in(kind, DType::Float32) : sample_in(kind, low);
      const AutocastGuard guard(low);
      const ops::OpOutputs outputs =
          ops::dispatch(ops::op_entry(kind), sample.inputs, sample.attributes);
      EXPECT_EQ(outputs[0].dtype(), rule == AutocastRule::Lower ? low : DType::Float32);
    }
  }
}

TEST(Autocast, TheTableNamesTheDocumentedOps) {
  for (const OpKind kind :
       {OpKind::Matmul, OpKind::Linear, OpKind::Bmm, OpKind::Conv2d, OpKind::Attention}) {
    EXPECT_EQ(ops::autocast_rule(kind), AutocastRule::Lower) << kind;
  }
  for (const OpKind kind : {OpKind::Softmax, OpKind::LogSoftmax, OpKind::LayerNorm, OpKind::RmsNorm,
                            OpKind::Sum, OpKind::Mean, OpKind::Var, OpKind::Exp, OpKind::Log,
                            OpKind::Pow, OpKind::Sqrt, OpKind::Rsqrt}) {
    EXPECT_EQ(ops::autocast_rule(kind), AutocastRule::Float32) << kind;
  }
  // The losses read 16-bit scores as they are and return a float32 loss: no cast of the logits
  // (Note [A loss is in the compute dtype] in ops/softmax.cpp).
  for (const OpKind kind : {OpKind::CrossEntropy, OpKind::NllLoss}) {
    EXPECT_EQ(ops::autocast_rule(kind), AutocastRule::Follow) << kind;
    const AutocastGuard guard(DType::BFloat16);
    const Tensor scores =
        ops::log_softmax(from_vector<float>({0.5f, -1.0f, 2.0f, 0.25f}, {2, 2}), 1)
            .to(DType::BFloat16);
    const Tensor targets = from_vector<std::int64_t>({1, 0}, {2});
    const Tensor loss = kind == OpKind::CrossEntropy ? ops::cross_entropy(scores, targets)
                                                     : ops::nll_loss(scores, targets);
    EXPECT_EQ(loss.dtype(), DType::Float32) << kind;
  }
  for (const OpKind kind : {OpKind::Add, OpKind::Gelu, OpKind::Embedding, OpKind::Dropout}) {
    EXPECT_EQ(ops::autocast_rule(kind), AutocastRule::Follow) << kind;
  }
}

TEST(Autocast, MixedDTypesFollowTheWidest) {
  const AutocastGuard guard(DType::BFloat16);
  const Tensor low = ops::rand({4}).to(DType::BFloat16);
  EXPECT_EQ(ops::add(low, ops::rand({4})).dtype(), DType::Float32);
  EXPECT_EQ(ops::add(low, low).dtype(), DType::BFloat16);
  EXPECT_EQ(ops::add(low, ops::rand({4}).to(DType::Float16)).dtype(), DType::Float32);
  EXPECT_EQ(ops::add(low, ops::rand({4}, TensorOptions(DType::Float64))).dtype(), DType::Float64);
  EXPECT_EQ(ops::gelu(low).dtype(), DType::BFloat16);
  EXPECT_EQ(ops::cat({low, ops::rand({2})}, 0).dtype(), DType::Float32);
  // float64 is left alone by the tensor-core ops, as in PyTorch.
  const Tensor wide = ops::rand({2, 2}, TensorOptions(DType::Float64));
  EXPECT_EQ(ops::matmul(wide, wide).dtype(), DType::Float64);
}

TEST(Autocast, InPlaceOpsAreNeverCastAndTheirNamesEndInUnderscore) {
  for (std::size_t k = 0; k < misuse::kNumOps; ++k) {
    const auto kind = static_cast<OpKind>(k);
    const misuse::Sample sample = misuse::sample_of(kind);
    std::vector<Tensor> inputs;
    for (const Tensor& input : sample.inputs) inputs.push_back(input.clone());
    const ops::OpOutputs outputs = ops::dispatch(ops::op_entry(kind), inputs, sample.attributes);
    const bool in_place = !inputs.empty() && outputs[0].is_alias_of(inputs[0]) &&
                          outputs[0].impl() == inputs[0].impl();
    EXPECT_EQ(ops::detail::is_in_place(kind), in_place) << kind;
  }
  const AutocastGuard guard(DType::BFloat16);
  const Tensor x = ops::rand({3});
  ops::add_(x, ops::rand({3}));
  EXPECT_EQ(x.dtype(), DType::Float32);
}

TEST(Autocast, AParameterIsCastOncePerVersion) {
  const Tensor w = ops::rand({3, 4}).requires_grad_(true);
  const Tensor x = ops::rand({2, 4});
  CopyCounter copies;
  const CoreObserverGuard observe(&copies);
  const AutocastGuard guard(DType::BFloat16);
  const Tensor y1 = ops::linear(x, w);
  const Tensor y2 = ops::linear(x, w);
  // x (no gradients) is cast at each call, w once.
  EXPECT_EQ(copies.dtypes.size(), 3u);
  EXPECT_EQ(y1.to_vector<float>(), y2.to_vector<float>());
  {
    const autograd::NoGradGuard no_grad;
    ops::mul_(w, 2.0);  // an optimizer's update: a new version
  }
  const Tensor y3 = ops::linear(x, w);
  EXPECT_EQ(copies.dtypes.size(), 5u);
  EXPECT_NEAR(y3.to(DType::Float32).to_vector<float>()[0],
              2 * y1.to(DType::Float32).to_vector<float>()[0], 0.05);
}

TEST(Autocast, GradientsReachFloat32ParametersInFloat32) {
  const Tensor w = ops::rand({3, 4}).requires_grad_(true);
  const Tensor x = ops::rand({2, 4});
  Tensor loss;
  {
    const AutocastGuard guard(DType::BFloat16);
    const Tensor y = ops::linear(x, w);
    EXPECT_EQ(y.dtype(), DType::BFloat16);
    loss = ops::sum(y);  // float32 by its rule
    EXPECT_EQ(loss.dtype(), DType::Float32);
  }
  loss.backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), DType::Float32);
  // d loss / d w[i][j] = sum over rows of x[:, j], each x rounded to bfloat16.
  const std::vector<float> xs = x.to(DType::BFloat16).to(DType::Float32).to_vector<float>();
  const std::vector<float> grads = w.grad().to_vector<float>();
  for (int j = 0; j < 4; ++j) {
    EXPECT_NEAR(grads[static_cast<std::size_t>(j)], xs[static_cast<std::size_t>(j)] + xs[4u + j],
                0.02);
  }
}

TEST(Autocast, GuardsNestAndTurnOff) {
  const Tensor a = ops::rand({2, 2});
  EXPECT_FALSE(ops::autocast_dtype().has_value());
  {
    const AutocastGuard outer(DType::BFloat16);
    EXPECT_EQ(ops::matmul(a, a).dtype(), DType::BFloat16);
    {
      const AutocastGuard inner(DType::Float16);
      EXPECT_EQ(ops::matmul(a, a).dtype(), DType::Float16);
      const AutocastGuard off(std::nullopt);
      EXPECT_EQ(ops::matmul(a, a).dtype(), DType::Float32);
    }
    EXPECT_EQ(ops::autocast_dtype(), DType::BFloat16);
  }
  EXPECT_EQ(ops::matmul(a, a).dtype(), DType::Float32);
}

TEST(Autocast, AGuardTakesA16BitDType) {
  try {
    const AutocastGuard guard(DType::Float32);
    FAIL() << "a float32 guard should be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bfloat16 or float16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace grove
