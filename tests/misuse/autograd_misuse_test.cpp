// Misuse of autograd and of in-place writes: backward twice without retain_graph, backward of a
// non-scalar without a gradient or with one of the wrong shape or dtype, gradients of tensors that
// need none, in-place writes into leaves that require grad and into tensors saved for backward,
// and in-place updates whose target aliases an operand in a way a kernel cannot order (the
// fused optimizer updates). Partly overlapping operands of the elementwise in-place ops are
// legal (the operand is copied first): tests at the end check those give the right values.
#include <cmath>
#include <limits>

#include "autograd/autograd.h"
#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "ops/optim.h"
#include "ops/reduce.h"
#include "tests/misuse/misuse_case.h"

namespace grove::misuse {
namespace {

using namespace grove::ops;

Tensor leaf(IntArrayRef sizes) {
  return ones(sizes).requires_grad_();
}

std::vector<MisuseCase> backward_cases() {
  return {
      {"BackwardTwiceWithoutRetainGraph",
       [] {
         const Tensor x = leaf({3});
         const Tensor loss = sum(mul(x, x));
         loss.backward();
         loss.backward();
       },
       {"backward", "retain_graph"}},
      {"GradTwiceWithoutRetainGraph",
       [] {
         const Tensor x = leaf({3});
         const Tensor loss = sum(exp(x));
         autograd::grad({loss}, {x});
         autograd::grad({loss}, {x});
       },
       {"retain_graph"}},
      {"BackwardOfANonScalarWithoutAGradient",
       [] {
         mul(leaf({2, 3}), 2.0).backward();
       },
       {"one element", "[2, 3]"}},
      {"BackwardOfAnEmptyOutputWithoutAGradient",
       [] { mul(leaf({0}), 2.0).backward(); },
       {"one element", "[0]"}},
      {"BackwardWithAGradientOfTheWrongShape",
       [] {
         mul(leaf({2, 3}), 2.0).backward(ones({3}));
       },
       {"gradient", "[2, 3]", "[3]"}},
      {"BackwardWithAGradientOfTheWrongDtype",
       [] { mul(leaf({2}), 2.0).backward(ones({2}, DType::Float64)); },
       {"gradient", "float32", "float64"}},
      {"BackwardOfATensorWithoutGrad",
       [] { sum(ones({3})).backward(); },
       {"does not require gradients"}},
      {"BackwardOfAnUndefinedTensor", [] { Tensor().backward(); }, {"undefined"}},
      {"BackwardOfAnOutputMadeUnderNoGrad",
       [] {
         const Tensor x = leaf({3});
         Tensor y;
         {
           const autograd::NoGradGuard no_grad;
           y = sum(x);
         }
         y.backward();
       },
       {"does not require gradients", "NoGradGuard"}},
      {"BackwardOfAnIntegerOutput",
       [] { argmax(mul(leaf({3}), 2.0)).backward(); },
       {"int64", "does not require gradients"}},
      {"BackwardGradientCountDiffers",
       [] {
         const Tensor x = leaf({2});
         autograd::backward({sum(x), sum(x)}, {ones({})});
       },
       {"2 outputs", "1 output gradients"}},
      {"BackwardOfNoOutputs", [] { autograd::backward({}); }, {"no outputs"}},
      {"GradOfAnInputThatNeedsNoGrad",
       [] {
         const Tensor x = leaf({2});
         autograd::grad({sum(x)}, {ones({2})});
       },
       {"input 0", "does not require gradients"}},
      {"GradOfAnUnusedInput",
       [] {
         const Tensor x = leaf({2});
         autograd::grad({sum(x)}, {leaf({2})});
       },
       {"input 0", "allow_unused"}},
      {"BackwardAfterASavedTensorChangedInPlace",
       [] {
         const Tensor x = leaf({3});
         const Tensor y = exp(x);  // saves its output
         const Tensor loss = sum(y);
         {
           const autograd::NoGradGuard no_grad;
           add_(y, ones({3}));
         }
         loss.backward();
       },
       {"version"}},
      {"RequiresGradOnANonLeaf",
       [] { mul(leaf({2}), 2.0).requires_grad_(false); },
       {"requires_grad"}},
      {"RequiresGradOnABoolTensor",
       [] { ones({2}, DType::Bool).requires_grad_(); },
       {"requires_grad", "bool"}},
      {"SetGradOfTheWrongShape",
       [] {
         leaf({2, 3}).set_grad(ones({3, 2}));
       },
       {"set_grad", "[2, 3]", "[3, 2]"}},
      {"SetGradOfTheWrongDtype",
       [] { leaf({2}).set_grad(ones({2}, DType::Float64)); },
       {"set_grad", "float32", "float64"}},
      {"RetainGradWithoutGrad", [] { ones({2}).retain_grad(); }, {"retain_grad", "[2]"}},
      {"RegisterHookWithoutGrad",
       [] { autograd::register_hook(ones({2}), [](const Tensor&) { return Tensor(); }); },
       {"register_hook", "[2]"}},
      {"PostAccumulateHookOnANonLeaf",
       [] {
         autograd::register_post_accumulate_grad_hook(mul(leaf({2}), 2.0), [](const Tensor&) {});
       },
       {"register_post_accumulate_grad_hook", "leaf"}},
      {"HookReturningAGradientOfAnotherDtype",
       [] {
         const Tensor x = leaf({2});
         autograd::register_hook(x, [](const Tensor& g) { return g.to(DType::Float64); });
         sum(x).backward();
       },
       {"hook", "float64"}},
  };
}

std::vector<MisuseCase> in_place_cases() {
  return {
      {"AddIntoALeafThatRequiresGrad",
       [] { add_(leaf({3}), ones({3})); },
       {"add_", "leaf", "requires"}},
      {"FillALeafThatRequiresGrad", [] { fill_(leaf({3}), 0.0); }, {"fill_", "leaf"}},
      {"CoreFillOfALeafThatRequiresGrad",
       [] { leaf({3}).fill_(0.0); },
       {"fill_", "requires gradients", "NoGradGuard"}},
      {"CoreCopyIntoALeafThatRequiresGrad",
       [] { leaf({3}).copy_(zeros({3})); },
       {"copy_", "requires gradients", "NoGradGuard"}},
      {"UniformIntoAViewOfALeafThatRequiresGrad",
       [] { uniform_(leaf({4}).slice(0, 0, 2)); },
       {"uniform_", "view", "gradient history"}},
      {"ZeroALeafThatRequiresGrad", [] { zero_(leaf({3})); }, {"leaf"}},
      {"SgdParamAliasesGrad",
       [] {
         const Tensor p = zeros({4});
         sgd_(p, p, Tensor(), {.lr = 0.1});
       },
       {"sgd_", "param", "grad", "share memory"}},
      {"SgdOverListsWithGradModeOn",
       [] {
         const std::vector<Tensor> params = {leaf({2}), leaf({3})};
         sgd_(params, std::vector<Tensor>{zeros({2}), zeros({3})}, std::vector<Tensor>{}, Tensor(),
              {.lr = 0.1});
       },
       {"sgd_", "several parameters", "NoGradGuard"}},
      {"SgdVelocityOverlapsGrad",
       [] {
         const Tensor buffer = zeros({6});
         sgd_(zeros({4}), buffer.slice(0, 0, 4), buffer.slice(0, 2, 6),
              {.lr = 0.1, .momentum = 0.9});
       },
       {"sgd_", "share memory"}},
      {"SgdVelocityExpanded",
       [] { sgd_(zeros({4}), zeros({4}), zeros({1}).expand({4}), {.lr = 0.1, .momentum = 0.9}); },
       {"sgd_", "velocity", "share memory"}},
      {"SgdMomentumWithoutVelocity",
       [] { sgd_(zeros({4}), zeros({4}), Tensor(), {.momentum = 0.9}); },
       {"sgd_", "velocity"}},
      {"SgdNegativeLr",
       [] { sgd_(zeros({4}), zeros({4}), Tensor(), {.lr = -1.0}); },
       {"sgd_", "lr", "-1"}},
      {"SgdLrTensorIsTheParam",
       [] {
         const Tensor p = zeros({1});
         sgd_(p, zeros({1}), Tensor(), p, {});
       },
       {"sgd_", "lr"}},
      {"AdamwStatesAlias",
       [] {
         const Tensor state = zeros({4});
         adamw_(zeros({4}), zeros({4}), state, state, ones({}), {});
       },
       {"adamw_", "exp_avg", "exp_avg_sq", "share memory"}},
      {"AdamwStepAliasesParam",
       [] {
         const Tensor p = zeros({1});
         adamw_(p, zeros({1}), zeros({1}), zeros({1}), p, {});
       },
       {"adamw_", "step"}},
      {"AdamwBetaOfOne",
       [] { adamw_(zeros({2}), zeros({2}), zeros({2}), zeros({2}), ones({}), {.beta1 = 1.0}); },
       {"adamw_", "beta1", "1"}},
      {"AdamwZeroEps",
       [] {
         ops::AdamwHyperparameters options;
         options.eps = -1.0;
         adamw_(zeros({2}), zeros({2}), zeros({2}), zeros({2}), ones({}), options);
       },
       {"adamw_", "eps", "-1"}},
      {"AdamwBoolStep",
       [] { adamw_(zeros({2}), zeros({2}), zeros({2}), zeros({2}), ones({}, DType::Bool), {}); },
       {"adamw_", "step", "bool"}},
  };
}

GROVE_MISUSE_SUITE(Autograd, backward_cases)
GROVE_MISUSE_SUITE(InPlace, in_place_cases)

// Partly overlapping operands of in-place updates are legal: the result is what it would be
// if the operand had been read in full before the write (as with a copy of it).
TEST(InPlaceMisuse, AddOfAShiftedViewOfTheTargetReadsTheOldValues) {
  const Tensor x = arange(5);
  add_(x.slice(0, 1, 5), x.slice(0, 0, 4));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 1, 3, 5, 7}));
}

TEST(InPlaceMisuse, AddcmulOfAReversedOverlapReadsTheOldValues) {
  const Tensor x = arange(4);
  addcmul_(x.slice(0, 0, 3), x.slice(0, 1, 4), ones({3}));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 3, 5, 3}));
}

TEST(InPlaceMisuse, CopyOfAShiftedViewOfItselfCopiesTheOldValues) {
  const Tensor x = arange(5);
  x.slice(0, 1, 5).copy_(x.slice(0, 0, 4));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 0, 1, 2, 3}));
  const Tensor y = arange(5);
  y.slice(0, 0, 4).copy_(y.slice(0, 1, 5));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 4}));
}

TEST(InPlaceMisuse, CopyOfATransposeIntoItselfTransposes) {
  const Tensor x = arange(9).view({3, 3});
  copy_(x, x.t());
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 3, 6, 1, 4, 7, 2, 5, 8}));
  const Tensor y = arange(9).view({3, 3});
  y.copy_(y.t());
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 3, 6, 1, 4, 7, 2, 5, 8}));
}

TEST(InPlaceMisuse, MulOfATransposeIntoItselfUsesTheOldValues) {
  const Tensor x = arange(4).view({2, 2});
  mul_(x, x.t());
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 2, 2, 9}));
}

}  // namespace
}  // namespace grove::misuse
