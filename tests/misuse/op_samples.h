// A valid call of every op, for the misuse suite's tables driven over the op table: each op's
// user function called on small valid inputs, recorded by an observer (the inputs and
// attributes dispatch saw), so that a table can replay the call through
// dispatch(op_entry(kind), ...) with one thing broken. A test in op_table_misuse_test.cpp checks
// that every OpKind has a sample and that each replays cleanly.
#pragma once

#include <functional>
#include <map>
#include <vector>

#include "ops/attention.h"
#include "ops/collective.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/inplace.h"
#include "ops/layer_norm.h"
#include "ops/linalg.h"
#include "ops/op_table.h"
#include "ops/optim.h"
#include "ops/pool.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "ops/rms_norm.h"
#include "ops/shape.h"
#include "ops/softmax.h"
#include "tests/ops/loopback_collectives.h"

namespace grove::misuse {

using test_engines::loopback_group;

using ops::OpKind;

inline constexpr auto kNumOps = static_cast<std::size_t>(OpKind::Count);

// One recorded call of an op.
struct Sample {
  OpKind kind = OpKind::Count;
  std::vector<Tensor> inputs;
  ops::OpAttributes attributes;
};

class SampleRecorder final : public ops::OpObserver {
 public:
  explicit SampleRecorder(OpKind kind) : kind_(kind) {}
  void on_op(const ops::OpCall& call, const ops::OpOutputs&) override {
    if (call.kind != kind_ || recorded_) return;
    sample.kind = call.kind;
    sample.inputs.assign(call.inputs.begin(), call.inputs.end());
    sample.attributes = call.attributes;
    recorded_ = true;
  }
  Sample sample;

 private:
  OpKind kind_;
  bool recorded_ = false;
};

inline Tensor f32(IntArrayRef sizes) {
  return ops::rand(sizes);
}
inline Tensor indices(std::vector<std::int64_t> values) {
  return from_vector(values);
}

// A valid call of each op through its user function. Ops reached only inside another call
// (max_pool2d's indices) are made by that call.
inline const std::map<OpKind, std::function<void()>>& valid_calls() {
  static const std::map<OpKind, std::function<void()>> calls = {
      {OpKind::Add,
       [] {
         ops::add(f32({2, 3}), f32({3}));
       }},
      {OpKind::Sub,
       [] {
         ops::sub(f32({2, 3}), f32({2, 3}));
       }},
      {OpKind::Mul,
       [] {
         ops::mul(f32({2, 3}), f32({2, 1}));
       }},
      {OpKind::Div,
       [] {
         ops::div(f32({2, 3}), f32({2, 3}));
       }},
      {OpKind::Maximum,
       [] {
         ops::maximum(f32({2, 3}), f32({2, 3}));
       }},
      {OpKind::Minimum,
       [] {
         ops::minimum(f32({2, 3}), f32({2, 3}));
       }},
      {OpKind::Eq,
       [] {
         ops::eq(f32({2, 3}), f32({2, 3}));
       }},
      {OpKind::Ne,
       [] {
         ops::ne(f32({2, 3}), f32({2, 3}));
       }},
      {OpKind::Lt,
       [] {
         ops::lt(f32({2, 3}), f32({2, 3}));
       }},
      {OpKind::Le,
       [] {
         ops::le(f32({2, 3}), f32({2, 3}));
       }},
      {OpKind::Gt,
       [] {
         ops::gt(f32({2, 3}), f32({2, 3}));
       }},
      {OpKind::Ge,
       [] {
         ops::ge(f32({2, 3}), f32({2, 3}));
       }},
      {OpKind::Where,
       [] {
         ops::where(ops::gt(f32({2, 3}), 0.5), f32({2, 3}), f32({2, 3}));
       }},
      {OpKind::MaskedFill,
       [] {
         ops::masked_fill(f32({2, 3}), ops::gt(f32({3}), 0.5), 0.0);
       }},
      {OpKind::Clamp,
       [] {
         ops::clamp(f32({2, 3}), 0.1, 0.9);
       }},
      {OpKind::Neg,
       [] {
         ops::neg(f32({2, 3}));
       }},
      {OpKind::Exp,
       [] {
         ops::exp(f32({2, 3}));
       }},
      {OpKind::Log,
       [] {
         ops::log(f32({2, 3}));
       }},
      {OpKind::Sqrt,
       [] {
         ops::sqrt(f32({2, 3}));
       }},
      {OpKind::Rsqrt,
       [] {
         ops::rsqrt(f32({2, 3}));
       }},
      {OpKind::Pow,
       [] {
         ops::pow(f32({2, 3}), 2.5);
       }},
      {OpKind::Abs,
       [] {
         ops::abs(f32({2, 3}));
       }},
      {OpKind::Tanh,
       [] {
         ops::tanh(f32({2, 3}));
       }},
      {OpKind::Sigmoid,
       [] {
         ops::sigmoid(f32({2, 3}));
       }},
      {OpKind::Relu,
       [] {
         ops::relu(f32({2, 3}));
       }},
      {OpKind::Gelu,
       [] {
         ops::gelu(f32({2, 3}));
       }},
      {OpKind::GeluBackward,
       [] {
         ops::gelu_backward(f32({2, 3}), f32({2, 3}));
       }},
      {OpKind::ReluBackward,
       [] {
         ops::relu_backward(f32({2, 3}), f32({2, 3}));
       }},
      {OpKind::AddInplace,
       [] {
         ops::add_(f32({2, 3}), f32({3}), 0.5);
       }},
      {OpKind::MulInplace,
       [] {
         ops::mul_(f32({2, 3}), f32({2, 3}));
       }},
      {OpKind::Addcmul,
       [] {
         ops::addcmul_(f32({2, 3}), f32({2, 3}), f32({2, 3}));
       }},
      {OpKind::Addcdiv,
       [] {
         ops::addcdiv_(f32({2, 3}), f32({2, 3}), f32({2, 3}));
       }},
      {OpKind::Lerp,
       [] {
         ops::lerp_(f32({2, 3}), f32({2, 3}), f32({2, 3}));
       }},
      {OpKind::Fill,
       [] {
         ops::fill_(f32({2, 3}), 1.5);
       }},
      {OpKind::Copy,
       [] {
         ops::copy_(f32({2, 3}), f32({2, 3}));
       }},
      {OpKind::Uniform,
       [] {
         ops::uniform_(f32({2, 3}));
       }},
      {OpKind::Normal,
       [] {
         ops::normal_(f32({2, 3}));
       }},
      {OpKind::SgdStep,
       [] { ops::sgd_(f32({4}), f32({4}), zeros({4}), {.lr = 0.1, .momentum = 0.9}); }},
      {OpKind::AdamwStep,
       [] { ops::adamw_(f32({4}), f32({4}), zeros({4}), zeros({4}), ones({}), {}); }},
      {OpKind::UnscaleGrads,
       [] {
         const Tensor grads[] = {f32({2, 3})};
         ops::unscale_grads_(grads, zeros({1}), full({1}, 1024.0));
       }},
      {OpKind::UpdateScale,
       [] {
         ops::update_scale_(full({1}, 1024.0), zeros({1}, DType::Int32), zeros({1}), 2.0, 0.5,
                            2000);
       }},
      {OpKind::Sum,
       [] {
         ops::sum(f32({2, 3}), {1});
       }},
      {OpKind::Mean,
       [] {
         ops::mean(f32({2, 3}), {0});
       }},
      {OpKind::Max,
       [] {
         ops::max(f32({2, 3}), 1);
       }},
      {OpKind::Argmax,
       [] {
         ops::argmax(f32({2, 3}), 1);
       }},
      {OpKind::Var,
       [] {
         ops::var(f32({2, 3}), {1});
       }},
      {OpKind::Matmul,
       [] {
         ops::matmul(f32({2, 3}), f32({3, 4}));
       }},
      {OpKind::Linear,
       [] {
         ops::linear(f32({2, 3}), f32({4, 3}), f32({4}));
       }},
      {OpKind::Bmm,
       [] {
         ops::bmm(f32({2, 2, 3}), f32({2, 3, 4}));
       }},
      {OpKind::LinearWeightGrad,
       [] {
         ops::linear_weight_grad(f32({2, 4}), f32({2, 3}), /*bias=*/true);
       }},
      {OpKind::Softmax,
       [] {
         ops::softmax(f32({2, 3}), 1);
       }},
      {OpKind::LogSoftmax,
       [] {
         ops::log_softmax(f32({2, 3}), -1);
       }},
      {OpKind::CrossEntropy,
       [] {
         ops::cross_entropy(f32({2, 3}), indices({0, 2}));
       }},
      {OpKind::NllLoss,
       [] {
         ops::nll_loss(f32({2, 3}), indices({1, 2}));
       }},
      {OpKind::CrossEntropyBackward,
       [] {
         const Tensor logits = f32({2, 3});
         ops::cross_entropy_backward(ones({}), logits, indices({0, 2}),
                                     ops::sum(ops::exp(logits), {1}));
       }},
      {OpKind::NllLossBackward,
       [] {
         ops::nll_loss_backward(ones({}), f32({2, 3}), indices({0, 1}));
       }},
      {OpKind::LayerNorm,
       [] {
         ops::layer_norm(f32({2, 3}), {3}, f32({3}), f32({3}));
       }},
      {OpKind::LayerNormBackward,
       [] {
         const Tensor x = f32({2, 3});
         const ops::LayerNormResult stats = ops::layer_norm_with_stats(x, {3}, f32({3}));
         ops::layer_norm_backward(f32({2, 3}), x, stats.mean, stats.rstd, {3}, f32({3}));
       }},
      {OpKind::RmsNorm,
       [] {
         ops::rms_norm(f32({2, 3}), {3}, f32({3}));
       }},
      {OpKind::RmsNormBackward,
       [] {
         const Tensor x = f32({2, 3});
         const ops::RmsNormResult stats = ops::rms_norm_with_stats(x, {3}, f32({3}));
         ops::rms_norm_backward(f32({2, 3}), x, stats.rrms, {3}, f32({3}));
       }},
      {OpKind::Attention,
       [] {
         ops::attention(f32({2, 3, 2, 4}), f32({2, 3, 2, 4}), f32({2, 3, 2, 4}), true, 0.5);
       }},
      {OpKind::AttentionBackward,
       [] {
         const Tensor q = f32({2, 3, 2, 4});
         const ops::AttentionResult r = ops::attention_with_lse(q, q, q, true, 0.5);
         ops::attention_backward(f32({2, 3, 2, 4}), q, q, q, r.output, r.lse, true, 0.5);
       }},
      {OpKind::Embedding,
       [] {
         ops::embedding(f32({5, 3}), indices({0, 4, 2}));
       }},
      {OpKind::EmbeddingBackward,
       [] {
         ops::embedding_backward(f32({3, 2}), indices({0, 4, 2}), 5);
       }},
      {OpKind::Conv2d,
       [] {
         ops::conv2d(f32({1, 2, 5, 5}), f32({3, 2, 3, 3}), f32({3}));
       }},
      {OpKind::MaxPool2d,
       [] {
         ops::max_pool2d(f32({1, 2, 4, 4}), {2});
       }},
      {OpKind::AvgPool2d,
       [] {
         ops::avg_pool2d(f32({1, 2, 4, 4}), {2});
       }},
      {OpKind::Conv2dBackwardInput,
       [] {
         ops::conv2d_backward_input(f32({1, 3, 3, 3}), f32({3, 2, 3, 3}), {1, 2, 5, 5});
       }},
      {OpKind::Conv2dBackwardWeight,
       [] {
         ops::conv2d_backward_weight(f32({1, 3, 3, 3}), f32({1, 2, 5, 5}), {3, 2, 3, 3});
       }},
      {OpKind::MaxPool2dBackward,
       [] {
         const auto [output, where] = ops::max_pool2d_with_indices(f32({1, 2, 4, 4}), {2});
         ops::max_pool2d_backward(f32({1, 2, 2, 2}), where, {1, 2, 4, 4});
       }},
      {OpKind::AvgPool2dBackward,
       [] {
         ops::avg_pool2d_backward(f32({1, 2, 2, 2}), {1, 2, 4, 4}, {2});
       }},
      {OpKind::Cat,
       [] {
         ops::cat({f32({2, 3}), f32({1, 3})}, 0);
       }},
      {OpKind::Tril,
       [] {
         ops::tril(f32({3, 3}));
       }},
      {OpKind::Triu,
       [] {
         ops::triu(f32({3, 3}), 1);
       }},
      {OpKind::OneHot,
       [] {
         ops::one_hot(indices({0, 3}), 4);
       }},
      {OpKind::Rand,
       [] {
         ops::rand({2, 3});
       }},
      {OpKind::Randn,
       [] {
         ops::randn({2, 3});
       }},
      {OpKind::Randint,
       [] {
         ops::randint(0, 5, {2, 3});
       }},
      {OpKind::Dropout,
       [] {
         ops::dropout(f32({2, 3}), 0.5);
       }},
      {OpKind::AllReduce,
       [] {
         ops::all_reduce_(f32({2, 3}), ops::ReduceOp::kSum, loopback_group());
       }},
      {OpKind::Broadcast,
       [] {
         ops::broadcast_(f32({2, 3}), 0, loopback_group());
       }},
      {OpKind::AllGather,
       [] {
         ops::all_gather(f32({2, 3}), loopback_group());
       }},
  };
  return calls;
}

inline Sample sample_of(OpKind kind) {
  SampleRecorder recorder(kind);
  {
    const ops::OpObserverGuard guard(&recorder);
    valid_calls().at(kind)();
  }
  GROVE_CHECK(recorder.sample.kind == kind, "the valid call of ", kind, " did not run it");
  return recorder.sample;
}

inline void replay(const Sample& sample) {
  ops::dispatch(ops::op_entry(sample.kind), sample.inputs, sample.attributes);
}

// How many inputs the sample of `kind` has. Runs its valid call: the misuse tables are built
// when the test program registers its tests, after main starts.
inline std::size_t sample_input_count(OpKind kind) {
  return sample_of(kind).inputs.size();
}

}  // namespace grove::misuse
