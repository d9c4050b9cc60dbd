// The backward engine: graph shapes (chains, diamonds, shared subexpressions), accumulation,
// retain_graph, grad(), grad mode, detach, hooks, and the errors users can cause.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <functional>
#include <thread>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/autograd_meta.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "ops/linalg.h"
#include "ops/reduce.h"
#include "ops/shape.h"

namespace grove::autograd {
namespace {

using namespace grove::ops;

Tensor leaf(std::vector<double> values, IntArrayRef sizes = {}) {
  return from_vector(values, sizes).requires_grad_();
}

std::vector<double> values(const Tensor& tensor) {
  return tensor.contiguous().to_vector<double>();
}

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(Engine, ChainRuleThroughElementwiseOps) {
  const Tensor x = leaf({1.0, 2.0, 3.0});
  const Tensor y = sum(mul(exp(x), x));  // d/dx = exp(x) (1 + x)
  y.backward();
  const std::vector<double> grad = values(x.grad());
  for (std::size_t i = 0; i < 3; ++i) {
    const double v = static_cast<double>(i + 1);
    EXPECT_NEAR(grad[i], std::exp(v) * (1 + v), 1e-4 * std::exp(v));
  }
}

// Note [Adding a view's gradient into the sum]: the slices of one tensor (chunk's pieces, a
// selected row) add their gradients into one sum: the first makes the zeros, the others add into
// their part of it, and no full-size sum is made.
TEST(Engine, SlicesOfOneTensorAddTheirGradientsIntoOneSum) {
  class FullSizeSums final : public ops::OpObserver {
   public:
    void on_op(const ops::OpCall& call, const ops::OpOutputs& outputs) override {
      const bool sum = call.kind == OpKind::Add || call.kind == OpKind::AddInplace;
      if (sum && outputs[0].numel() == 24) ++count;
    }
    int count = 0;
  };
  std::vector<double> data(24);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = 0.25 * static_cast<double>(i) - 2.0;
  const Tensor x = leaf(data, {4, 6});
  const std::vector<Tensor> parts = chunk(x, 3, 1);  // three (4, 2) slices
  const Tensor loss = add(add(sum(mul(parts[0], 2.0)), sum(mul(parts[1], 3.0))),
                          add(sum(mul(parts[2], 4.0)), sum(mul(x.select(0, 1), 5.0))));
  FullSizeSums sums;
  {
    const ops::OpObserverGuard guard(&sums);
    loss.backward();
  }
  std::vector<double> expected;
  for (int row = 0; row < 4; ++row) {
    for (const double column : {2.0, 2.0, 3.0, 3.0, 4.0, 4.0}) {
      expected.push_back(column + (row == 1 ? 5.0 : 0.0));
    }
  }
  EXPECT_EQ(values(x.grad()), expected);
  EXPECT_EQ(sums.count, 0) << "a slice's gradient was summed at the full size";
}

TEST(Engine, DiamondSumsBothPaths) {
  // y = a + b with a = 2x, b = x^2 over the same x: dy/dx = 2 + 2x.
  const Tensor x = leaf({3.0});
  const Tensor y = add(mul(x, 2.0), mul(x, x));
  y.backward();
  EXPECT_DOUBLE_EQ(x.grad().item<double>(), 8.0);
}

TEST(Engine, SharedSubexpressionRunsItsBackwardOnce) {
  // s = exp(x) feeds two ops; its node must run once, with the summed gradient.
  const Tensor x = leaf({0.5});
  const Tensor s = exp(x);
  const Tensor y = add(mul(s, 3.0), mul(s, s));  // dy/ds = 3 + 2s
  int calls = 0;
  register_hook(s, [&](const Tensor& grad) {
    ++calls;
    EXPECT_NEAR(grad.item<double>(), 3.0 + 2.0 * std::exp(0.5), 1e-12);
    return Tensor();
  });
  y.backward();
  EXPECT_EQ(calls, 1);
  EXPECT_NEAR(x.grad().item<double>(), (3.0 + 2.0 * std::exp(0.5)) * std::exp(0.5), 1e-12);
}

TEST(Engine, LeafUsedTwiceAccumulates) {
  const Tensor w = leaf({1.0, 2.0});
  const Tensor y = add(sum(mul(w, 3.0)), sum(mul(w, 4.0)));
  y.backward();
  EXPECT_EQ(values(w.grad()), (std::vector<double>{7.0, 7.0}));
}

TEST(Engine, GradAccumulatesAcrossBackwardCallsUntilCleared) {
  const Tensor w = leaf({1.0});
  sum(mul(w, 2.0)).backward();
  const Tensor first = w.grad();
  sum(mul(w, 5.0)).backward();
  EXPECT_DOUBLE_EQ(w.grad().item<double>(), 7.0);
  // Accumulation is in place: a handle taken earlier sees the sum (optimizers rely on it).
  EXPECT_DOUBLE_EQ(first.item<double>(), 7.0);
  w.set_grad(Tensor());
  EXPECT_FALSE(w.grad().defined());
  sum(mul(w, 5.0)).backward();
  EXPECT_DOUBLE_EQ(w.grad().item<double>(), 5.0);
}

TEST(Engine, LeafGradDoesNotAliasTheOutputGradient) {
  const Tensor a = leaf({1.0, 2.0});
  const Tensor b = leaf({3.0, 4.0});
  const Tensor y = add(a, b);  // both gradients are the same tensor inside the engine
  const Tensor g = from_vector<double>({1.0, 1.0});
  y.backward(g);
  ops::add_(a.grad(), a.grad());  // must not change b's gradient or the caller's g
  EXPECT_EQ(values(b.grad()), (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(values(g), (std::vector<double>{1.0, 1.0}));
}

TEST(Engine, ExplicitGradientForNonScalarOutput) {
  const Tensor x = leaf({1.0, 2.0, 3.0});
  const Tensor y = mul(x, x);
  y.backward(from_vector<double>({1.0, 0.0, -1.0}));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2.0, 0.0, -6.0}));
}

TEST(Engine, ImplicitGradientNeedsOneElement) {
  const Tensor y = mul(leaf({1.0, 2.0}), 2.0);
  const std::string message = error_of([&] { y.backward(); });
  EXPECT_NE(message.find("one element"), std::string::npos) << message;
  const std::string shape = error_of([&] { y.backward(from_vector<double>({1.0})); });
  EXPECT_NE(shape.find("must match"), std::string::npos) << shape;
}

TEST(Engine, SecondBackwardWithoutRetainGraphThrows) {
  const Tensor x = leaf({2.0});
  const Tensor y = sum(mul(x, x));  // mul saves its inputs
  y.backward();
  const std::string message = error_of([&] { y.backward(); });
  EXPECT_NE(message.find("a second time"), std::string::npos) << message;
  EXPECT_NE(message.find("retain_graph"), std::string::npos) << message;
}

TEST(Engine, RetainGraphAllowsASecondBackward) {
  const Tensor x = leaf({2.0});
  const Tensor y = sum(mul(x, x));
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  EXPECT_DOUBLE_EQ(x.grad().item<double>(), 8.0);
}

TEST(Engine, InPlaceChangeOfASavedTensorIsDetected) {
  const Tensor x = leaf({1.0, 2.0});
  const Tensor h = mul(x, 2.0);
  const Tensor y = sum(mul(h, h));          // saves h at version 0
  ops::add_(h, ones({2}, DType::Float64));  // h is now at version 1
  const std::string message = error_of([&] { y.backward(); });
  EXPECT_NE(message.find("modified by an in-place operation"), std::string::npos) << message;
  EXPECT_NE(message.find("mul"), std::string::npos) << message;
  EXPECT_NE(message.find("version 0"), std::string::npos) << message;
  EXPECT_NE(message.find("version 1"), std::string::npos) << message;
}

TEST(Engine, InPlaceChangeThroughAViewIsDetected) {
  const Tensor x = leaf({1.0, 2.0, 3.0, 4.0});
  const Tensor h = exp(x);  // exp saves its output
  const Tensor y = sum(h);
  Tensor alias = h.detach().slice(0, 0, 2);  // shares h's storage and version counter
  ops::mul_(alias, 2.0);
  EXPECT_NE(error_of([&] { y.backward(); }).find("in-place"), std::string::npos);
}

TEST(Engine, InPlaceOpsOnNonLeavesAreRecorded) {
  // y = (2x) * 3 + w, written with in-place ops on an intermediate.
  const Tensor x = leaf({1.0, 2.0});
  const Tensor w = leaf({5.0, 6.0});
  const Tensor y = mul(x, 2.0);
  ops::mul_(y, 3.0);
  ops::add_(y, w);
  EXPECT_FALSE(y.is_leaf());
  sum(mul(y, y)).backward();  // d/dx = 2y * 6, d/dw = 2y
  const std::vector<double> yv = values(y);
  EXPECT_EQ(values(x.grad()), (std::vector<double>{12 * yv[0], 12 * yv[1]}));
  EXPECT_EQ(values(w.grad()), (std::vector<double>{2 * yv[0], 2 * yv[1]}));
}

TEST(Engine, InPlaceMulKeepsTheOldValueForTheOtherOperand) {
  // y = h * w in place: dy/dw needs h's value before the write.
  const Tensor x = leaf({1.0, 2.0});
  const Tensor w = leaf({3.0, 4.0});
  const Tensor h = mul(x, 1.0);
  ops::mul_(h, w);
  sum(h).backward();
  EXPECT_EQ(values(w.grad()), (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{3.0, 4.0}));
}

TEST(Engine, InPlaceOpsWhoseOperandIsTheTargetSaveItsOldValue) {
  // mul_(y, y) squares y: dy/dx must use y before the write (2 * 3 = 6), not after (2 * 9).
  const Tensor x = leaf({3.0});
  const Tensor y = mul(x, 1.0);
  ops::mul_(y, y);
  y.backward();
  EXPECT_DOUBLE_EQ(x.grad().item<double>(), 6.0);
  // addcmul_(z, z, b): z = z + z b, so dz_old = 1 + b and db = z_old.
  const Tensor u = leaf({3.0});
  const Tensor b = leaf({2.0});
  const Tensor z = mul(u, 1.0);
  ops::addcmul_(z, z, b);
  z.backward();
  EXPECT_DOUBLE_EQ(u.grad().item<double>(), 3.0);
  EXPECT_DOUBLE_EQ(b.grad().item<double>(), 3.0);
}

TEST(Engine, InPlaceOpReadingAViewOfItsTarget) {
  // y *= y[0]: y_new = (y0 y0, y1 y0); d sum / dy0 = 2 y0 + y1, d sum / dy1 = y0.
  const Tensor x = leaf({3.0, 2.0});
  const Tensor y = mul(x, 1.0);
  ops::mul_(y, y.select(0, 0));
  sum(y).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{8.0, 3.0}));
}

TEST(Engine, InPlaceOnALeafThatRequiresGradIsRefused) {
  const Tensor w = leaf({1.0, 2.0});
  const std::string message = error_of([&] { ops::add_(w, ones({2}, DType::Float64)); });
  EXPECT_NE(message.find("leaf"), std::string::npos) << message;
  EXPECT_NE(message.find("NoGradGuard"), std::string::npos) << message;
  EXPECT_EQ(values(w), (std::vector<double>{1.0, 2.0}));  // refused before the write
  {
    const NoGradGuard no_grad;  // what optimizers do
    ops::add_(w, ones({2}, DType::Float64));
  }
  EXPECT_EQ(values(w), (std::vector<double>{2.0, 3.0}));
  EXPECT_TRUE(w.is_leaf());
}

TEST(Engine, InPlaceIntoAViewWithHistoryIsRefused) {
  const Tensor x = leaf({1.0, 2.0, 3.0});
  const Tensor h = mul(x, 2.0);
  const Tensor part = h.slice(0, 0, 2);
  const std::string message = error_of([&] { ops::mul_(part, 2.0); });
  EXPECT_NE(message.find("view"), std::string::npos) << message;
}

TEST(Engine, UsingAViewAfterItsBaseChangedInPlaceIsRefused) {
  const Tensor x = leaf({1.0, 2.0});
  const Tensor h = mul(x, 2.0);
  const Tensor view = h.view({2, 1});
  const Tensor used_before = sum(view);  // fine: used before the change
  ops::mul_(h, 3.0);                     // the view's values are now 3x what its history says
  const std::string message = error_of([&] { (void)mul(view, 2.0); });
  EXPECT_NE(message.find("modified in place after the view was made"), std::string::npos)
      << message;
  used_before.backward();  // the use before the change still differentiates
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2.0, 2.0}));
  const Tensor fresh = h.view({2, 1});  // taken again: carries the new history
  sum(fresh).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{8.0, 8.0}));
}

TEST(Engine, WritingHistoryIntoSharedMemoryIsRefused) {
  const Tensor x = leaf({1.0, 2.0});
  const Tensor buffer = zeros({4}, DType::Float64);
  const Tensor half = buffer.slice(0, 0, 2);  // shares buffer's memory
  const std::string message = error_of([&] { ops::copy_(half, x); });
  EXPECT_NE(message.find("share"), std::string::npos) << message;
}

TEST(Engine, CopyIntoAFreshTensorIsRecorded) {
  const Tensor x = leaf({1.0, 2.0});
  const Tensor target = zeros({3, 2}, DType::Float64);
  ops::copy_(target, x);  // broadcast over 3 rows
  sum(target).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{3.0, 3.0}));
}

TEST(Engine, CoreCopyOfATensorWithGradIsRefusedUnderGradMode) {
  const Tensor x = leaf({1.0, 2.0});
  const Tensor target = zeros({2}, DType::Float64);
  const std::string message = error_of([&] { target.copy_(x); });
  EXPECT_NE(message.find("ops::copy_"), std::string::npos) << message;
  const NoGradGuard no_grad;
  target.copy_(x);
  EXPECT_EQ(values(target), (std::vector<double>{1.0, 2.0}));
}

TEST(Engine, NoGradGuardRecordsNothing) {
  const Tensor x = leaf({1.0});
  Tensor y;
  {
    const NoGradGuard no_grad;
    y = mul(x, 2.0);
    EXPECT_FALSE(GradMode::is_enabled());
    {
      const EnableGradGuard enable;
      EXPECT_TRUE(mul(x, 2.0).requires_grad());
    }
    EXPECT_FALSE(GradMode::is_enabled());
  }
  EXPECT_TRUE(GradMode::is_enabled());
  EXPECT_FALSE(y.requires_grad());
  EXPECT_TRUE(y.is_leaf());
  const std::string message = error_of([&] { sum(y).backward(); });
  EXPECT_NE(message.find("does not require gradients"), std::string::npos) << message;
}

TEST(Engine, DetachCutsTheGraph) {
  const Tensor x = leaf({2.0});
  const Tensor h = mul(x, x);
  const Tensor y = add(mul(h.detach(), x), h);  // d/dx = h + 2x (the detached h is a constant)
  EXPECT_FALSE(h.detach().requires_grad());
  y.backward();
  EXPECT_DOUBLE_EQ(x.grad().item<double>(), 4.0 + 4.0);
}

TEST(Engine, RequiresGradPropagatesAndStopsAtNonDifferentiableOutputs) {
  const Tensor x = leaf({1.0, 3.0, 2.0}, {3});
  const Tensor y = mul(x, 2.0);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_EQ(grad_fn(y)->name(), "MulBackward");
  EXPECT_FALSE(gt(x, 1.0).requires_grad());
  EXPECT_FALSE(argmax(x).requires_grad());
  const MaxResult max_result = max(x, 0);
  EXPECT_TRUE(max_result.values.requires_grad());
  EXPECT_FALSE(max_result.indices.requires_grad());
  EXPECT_FALSE(mul(from_vector<double>({1.0}), 2.0).requires_grad());
}

TEST(Engine, RequiresGradFalseOnANonLeafIsRefused) {
  const Tensor y = mul(leaf({1.0}), 2.0);
  EXPECT_NE(error_of([&] { y.requires_grad_(false); }).find("detach()"), std::string::npos);
}

TEST(Engine, ViewsCarryGradientsBack) {
  const Tensor x = leaf({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {2, 3});
  // Every kind of view, then a weighted sum so each element gets a distinct gradient.
  const Tensor y = x.t().reshape({3, 2}).slice(0, 1, 3).select(1, 0).unsqueeze(0).expand({2, 2});
  sum(mul(y, from_vector<double>({1.0, 10.0, 100.0, 1000.0}, {2, 2}))).backward();
  // x.t() = [[1,4],[2,5],[3,6]]; rows 1..2, column 0 -> elements x[0][1], x[0][2]; the expand
  // repeats them over 2 rows: gradients 1 + 100 and 10 + 1000.
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 101, 1010, 0, 0, 0}));
}

TEST(Engine, CopiesCarryGradientsBackInTheSourceDtype) {
  const Tensor x = leaf({1.0, 2.0});
  const Tensor y = x.to(DType::Float32);
  sum(mul(y, 3.0f)).backward();
  EXPECT_EQ(x.grad().dtype(), DType::Float64);
  EXPECT_EQ(values(x.grad()), (std::vector<double>{3.0, 3.0}));
}

TEST(Engine, AsStridedViewsOfTensorsWithGradAreRefused) {
  const Tensor x = leaf({1.0, 2.0, 3.0, 4.0});
  EXPECT_NE(error_of([&] { (void)x.as_strided({2}, {2}, 0); }).find("as_strided"),
            std::string::npos);
}

TEST(Engine, GradReturnsGradientsWithoutTouchingGrad) {
  const Tensor x = leaf({1.0, 2.0});
  const Tensor w = leaf({3.0, 4.0});
  const Tensor h = mul(x, w);
  const Tensor y = sum(mul(h, h));
  const std::vector<Tensor> grads = grad({y}, {w, h});
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
  // dy/dh = 2h = (6, 16); dy/dw = 2h x = (6, 32)
  EXPECT_EQ(values(grads[1]), (std::vector<double>{6.0, 16.0}));
  EXPECT_EQ(values(grads[0]), (std::vector<double>{6.0, 32.0}));
}

TEST(Engine, GradRunsOnlyWhatTheRequestedInputsNeed) {
  const Tensor x = leaf({1.0});
  const Tensor w = leaf({2.0});
  const Tensor a = mul(x, 3.0);
  const Tensor y = add(a, mul(w, w));
  int x_side = 0;
  register_hook(a, [&](const Tensor&) {
    ++x_side;
    return Tensor();
  });
  const std::vector<Tensor> grads = grad({y}, {w});
  EXPECT_DOUBLE_EQ(grads[0].item<double>(), 4.0);
  EXPECT_EQ(x_side, 0);  // the branch towards x was not needed
}

TEST(Engine, GradOfAnUnusedInput) {
  const Tensor x = leaf({1.0});
  const Tensor unused = leaf({2.0});
  const Tensor y = mul(x, 2.0);
  const std::string message =
      error_of([&] { (void)grad({y}, {unused}, {}, {.retain_graph = true}); });
  EXPECT_NE(message.find("allow_unused"), std::string::npos) << message;
  const std::vector<Tensor> grads = grad({y}, {x, unused}, {}, {.allow_unused = true});
  EXPECT_DOUBLE_EQ(grads[0].item<double>(), 2.0);
  EXPECT_FALSE(grads[1].defined());
}

TEST(Engine, BackwardOfSeveralOutputs) {
  const Tensor x = leaf({1.0, 2.0});
  const Tensor a = sum(mul(x, 2.0));
  const Tensor b = sum(mul(x, x));
  backward({a, b});
  EXPECT_EQ(values(x.grad()), (std::vector<double>{4.0, 6.0}));
}

TEST(Engine, HooksCanReplaceGradients) {
  const Tensor x = leaf({1.0, 2.0});
  const Tensor h = mul(x, 3.0);
  register_hook(h, [](const Tensor& grad) { return mul(grad, 10.0); });
  register_hook(x, [](const Tensor& grad) { return add(grad, 1.0); });
  int accumulated = 0;
  register_post_accumulate_grad_hook(x, [&](const Tensor& leaf_tensor) {
    ++accumulated;
    EXPECT_EQ(values(leaf_tensor.grad()), (std::vector<double>{31.0, 31.0}));
  });
  sum(h).backward();
  EXPECT_EQ(accumulated, 1);
  EXPECT_EQ(values(x.grad()), (std::vector<double>{31.0, 31.0}));
}

TEST(Engine, HookReturningAWrongShapeIsAnError) {
  const Tensor x = leaf({1.0, 2.0});
  const Tensor h = mul(x, 3.0);
  register_hook(h, [](const Tensor&) { return zeros({3}, DType::Float64); });
  EXPECT_NE(error_of([&] { sum(h).backward(); }).find("same shape"), std::string::npos);
}

TEST(Engine, RetainGradKeepsANonLeafGradient) {
  const Tensor x = leaf({1.0, 2.0});
  const Tensor h = mul(x, 3.0);
  h.retain_grad();
  sum(mul(h, h)).backward();
  EXPECT_EQ(values(h.grad()), (std::vector<double>{6.0, 12.0}));
}

TEST(Engine, RetainGradAfterAnInPlaceOpMeansTheNewValue) {
  const Tensor x = leaf({1.0, 2.0});
  const Tensor a = mul(x, 2.0);
  a.retain_grad();
  ops::mul_(a, 3.0);
  sum(a).backward();
  EXPECT_EQ(values(a.grad()), (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{6.0, 6.0}));
}

TEST(Engine, RetainGradSeesTheGradientAfterHooks) {
  const Tensor x = leaf({1.0});
  const Tensor a = mul(x, 1.0);
  a.retain_grad();
  register_hook(a, [](const Tensor& grad) { return mul(grad, 2.0); });
  sum(a).backward();
  EXPECT_DOUBLE_EQ(a.grad().item<double>(), x.grad().item<double>());
}

TEST(Engine, LeafSharedByGraphsOnTwoThreadsAccumulatesEveryGradient) {
  const Tensor w = from_vector<float>(std::vector<float>(16, 1.0f)).requires_grad_();
  auto work = [&] {
    for (int i = 0; i < 2000; ++i) sum(mul(w, 1.0f)).backward();
  };
  std::thread a(work);
  std::thread b(work);
  a.join();
  b.join();
  EXPECT_EQ(w.grad().to_vector<float>(), std::vector<float>(16, 4000.0f));
}

// Note [Autograd metadata is published once]: threads that first need a tensor's metadata at the
// same moment all get the one that was installed (run under ThreadSanitizer, no race either).
TEST(Engine, ThreadsMakingATensorsMetadataAtOnceShareOne) {
  constexpr int kThreads = 8;
  for (int round = 0; round < 50; ++round) {
    const Tensor t = from_vector<float>({1.0f, 2.0f});
    std::vector<AutogradMeta*> seen(kThreads, nullptr);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        ready.fetch_add(1);
        while (ready.load() < kThreads) std::this_thread::yield();
        seen[static_cast<std::size_t>(i)] = &ensure_meta(t);
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (AutogradMeta* meta : seen) EXPECT_EQ(meta, seen[0]);
    EXPECT_EQ(meta_of(t), seen[0]);
  }
}

TEST(Engine, InPlaceIntoAViewMadeWithoutGradIsRefused) {
  const Tensor x = leaf({1.0, 2.0});
  const Tensor a = mul(x, 2.0);
  Tensor view;
  {
    const NoGradGuard no_grad;
    view = a.view({2});
  }
  const std::string message = error_of([&] { ops::fill_(view, 0.0); });
  EXPECT_NE(message.find("NoGradGuard"), std::string::npos) << message;
  const NoGradGuard no_grad;
  ops::fill_(view, 0.0);  // fine without recording
}

TEST(Engine, GradOfAnInputWhoseInfluenceWasOverwrittenIsZero) {
  const Tensor x = leaf({1.0, 2.0});
  const Tensor y = mul(x, 1.0);
  ops::fill_(y, 0.0);
  int post_hooks = 0;
  register_post_accumulate_grad_hook(x, [&](const Tensor&) { ++post_hooks; });
  const std::vector<Tensor> grads = grad({sum(y)}, {x}, {}, {.retain_graph = true});
  EXPECT_EQ(values(grads[0]), (std::vector<double>{0.0, 0.0}));
  sum(y).backward();
  EXPECT_EQ(post_hooks, 0);  // no gradient arrived, so nothing was accumulated
  EXPECT_FALSE(x.grad().defined());
}

TEST(Engine, AStaleViewCannotBeDifferentiated) {
  const Tensor x = leaf({1.0, 2.0});
  const Tensor a = mul(x, 1.0);
  const Tensor v = a.view({2});
  ops::mul_(a, 10.0);
  EXPECT_NE(error_of([&] { v.backward(ones({2}, DType::Float64)); }).find("modified in place"),
            std::string::npos);
}

TEST(Engine, SetGradRefusesExpandedTensors) {
  const Tensor x = leaf({1.0, 2.0, 3.0});
  EXPECT_NE(error_of([&] { x.set_grad(zeros({1}, DType::Float64).expand({3})); }).find("expanded"),
            std::string::npos);
}

TEST(Engine, OnlyWhatTheWantedGradientsNeedIsSaved) {
  // y = x * w with x plain data: dw needs x, and nothing needs w, so w is not saved (its
  // storage is referenced by w alone).
  const Tensor x = from_vector<double>({1.0, 2.0});
  const Tensor w = leaf({3.0, 4.0});
  const Tensor y = mul(x, w);
  EXPECT_EQ(w.storage().use_count(), 1U);
  EXPECT_EQ(x.storage().use_count(), 2U);  // x and the node's saved handle
  sum(y).backward();
  EXPECT_EQ(values(w.grad()), (std::vector<double>{1.0, 2.0}));
}

TEST(Engine, GradientsAreTheSameWhenOnlySomeInputsRequireThem) {
  // The rules save less when fewer gradients are wanted; the gradients must not change.
  using Fn = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::pair<const char*, Fn>> cases = {
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, add(b, 3.0)); }},
      {"matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b.t()); }},
      {"linear", [](const Tensor& a, const Tensor& b) { return ops::linear(a, b); }},
      {"addcmul_",
       [](const Tensor& a, const Tensor& b) {
         Tensor y = mul(a, 1.0);
         ops::addcmul_(y, a, b, 0.5);
         return y;
       }},
  };
  for (const auto& [name, fn] : cases) {
    const Tensor a0 = from_vector<double>({1.0, -2.0, 0.5, 3.0}, {2, 2});
    const Tensor b0 = from_vector<double>({0.3, 1.5, -1.0, 2.0}, {2, 2});
    const Tensor a_both = a0.clone().requires_grad_();
    const Tensor b_both = b0.clone().requires_grad_();
    sum(fn(a_both, b_both)).backward();
    const Tensor a_only = a0.clone().requires_grad_();
    sum(fn(a_only, b0)).backward();
    const Tensor b_only = b0.clone().requires_grad_();
    sum(fn(a0, b_only)).backward();
    EXPECT_EQ(values(a_only.grad()), values(a_both.grad())) << name;
    EXPECT_EQ(values(b_only.grad()), values(b_both.grad())) << name;
  }
}

TEST(Engine, GraphIsFreedWithItsOutputs) {
  const Tensor x = leaf({1.0});
  WeakIntrusivePtr<Node> weak_node;
  {
    const Tensor y = mul(x, x);
    weak_node = WeakIntrusivePtr<Node>(grad_fn(y));
    EXPECT_FALSE(weak_node.expired());
  }
  EXPECT_TRUE(weak_node.expired());  // no cycle keeps the graph alive
}

TEST(Engine, LongChainRunsAndDiesWithoutRecursion) {
  // 20000 nodes: a recursive engine, or a graph whose nodes destroy each other recursively,
  // would overflow the stack.
  const Tensor x = leaf({1.0});
  Tensor y = x;
  for (int i = 0; i < 20000; ++i) y = mul(y, 1.0);
  y.backward();
  EXPECT_DOUBLE_EQ(x.grad().item<double>(), 1.0);
}

TEST(Engine, LeavesAndTheirAccumulatorsAreFreed) {
  // The leaf's meta points at its AccumulateGrad weakly and the node holds the leaf: the pair
  // must still die with the last handle (checked by the weak handle's expiry, and by the
  // sanitizer build's leak checker).
  WeakIntrusivePtr<TensorImpl> weak_leaf;
  {
    const Tensor x = leaf({1.0, 2.0});
    const Tensor y = mul(x, x);
    weak_leaf = WeakIntrusivePtr<TensorImpl>(IntrusivePtr<TensorImpl>(x.impl()));
  }
  EXPECT_TRUE(weak_leaf.expired());
}

TEST(Engine, IntegerTensorsCannotRequireGrad) {
  EXPECT_NE(
      error_of([] { (void)zeros({2}, DType::Int64).requires_grad_(); }).find("floating-point"),
      std::string::npos);
}

}  // namespace
}  // namespace grove::autograd
