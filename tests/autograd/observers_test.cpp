// Autograd next to other observers (Note [Core observers], Note [Op observers]): autograd's
// slot sees every thread while a thread's own observers see only that thread; autograd runs
// first, so a thread observer sees results with their history; core's writes are refused as
// before whatever else observes; a thread's op observer sees the backward pass's ops, which is
// what a tracer of the joint forward and backward needs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "autograd/autograd.h"
#include "core/core_observer.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace grove::autograd {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

std::vector<double> values(const Tensor& tensor) {
  return tensor.contiguous().to_vector<double>();
}

// Remembers each view or copy, with whether its result had a gradient history when seen, and
// counts writes.
struct HistoryRecorder final : CoreObserver {
  void on_derived(const Tensor& source, const Tensor& result, DerivedKind kind,
                  IntArrayRef) override {
    kinds.push_back(kind);
    sources.push_back(source);
    had_history.push_back(grad_fn(result) != nullptr);
  }
  void before_write(const CoreWrite&) override { ++before_writes; }
  void on_write(const CoreWrite&) override { ++writes; }

  std::vector<DerivedKind> kinds;
  std::vector<Tensor> sources;
  std::vector<bool> had_history;
  int before_writes = 0;
  int writes = 0;
};

// A thread observer sees views of tensors with and without gradients; autograd has already
// given the first its history.
TEST(Observers, AThreadObserverSeesViewsWithAndWithoutGradients) {
  const Tensor w = from_vector<double>({1, 2, 3, 4}, {2, 2}).requires_grad_();
  const Tensor plain = zeros({2, 2}, DType::Float64);
  HistoryRecorder observer;
  Tensor wt;
  {
    const CoreObserverGuard guard(&observer);
    wt = w.t();
    (void)plain.t().contiguous();
  }
  ASSERT_EQ(observer.kinds.size(), 3u);
  EXPECT_EQ(observer.kinds[0], DerivedKind::Permute);
  EXPECT_TRUE(observer.had_history[0]);  // autograd's observer ran first
  EXPECT_EQ(observer.kinds[1], DerivedKind::Permute);
  EXPECT_FALSE(observer.had_history[1]);
  EXPECT_EQ(observer.kinds[2], DerivedKind::Copy);
  // Autograd's behaviour is unchanged by the other observer.
  ops::sum(ops::mul(wt, from_vector<double>({1, 10, 100, 1000}, {2, 2}))).backward();
  EXPECT_EQ(values(w.grad()), (std::vector<double>{1, 100, 10, 1000}));
}

// Autograd's slot sees every thread: views and copies recorded on a worker thread that has no
// observer of its own have their gradients, and the main thread's observer sees none of it.
TEST(Observers, AutogradRecordsViewsAndOpsOnEveryThread) {
  const Tensor w = from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}).requires_grad_();
  HistoryRecorder main_observer;
  const CoreObserverGuard guard(&main_observer);
  std::thread worker([&] {
    const Tensor picked = w.t().narrow(0, 1, 2).contiguous();  // rows 1..2 of w^T: w[:, 1:3]
    ops::sum(ops::mul(picked, picked)).backward();
  });
  worker.join();
  EXPECT_TRUE(main_observer.kinds.empty());
  EXPECT_EQ(values(w.grad()), (std::vector<double>{0, 4, 6, 0, 10, 12}));
}

// Core's writes keep their refusal for autograd: with grad mode on, Tensor::copy_ and
// Tensor::fill_ touching a tensor that requires gradients throw before the write, and a thread
// observer hears of neither; inside a NoGradGuard they run and the observer sees both sides.
TEST(Observers, CoreWritesAreRefusedForAutogradAsBefore) {
  const Tensor w = from_vector<double>({1, 2}).requires_grad_();
  const Tensor target = zeros({2}, DType::Float64);
  HistoryRecorder observer;
  const CoreObserverGuard guard(&observer);
  EXPECT_THAT(error_of([&] { target.copy_(w); }), HasSubstr("Tensor::copy_: writing into"));
  EXPECT_THAT(error_of([&] { w.fill_(0); }), HasSubstr("Use ops::fill_(...)"));
  EXPECT_EQ(observer.before_writes, 0);
  EXPECT_EQ(observer.writes, 0);
  EXPECT_EQ(values(target), (std::vector<double>{0, 0}));
  {
    const NoGradGuard no_grad;
    target.copy_(w);
  }
  EXPECT_EQ(observer.before_writes, 1);
  EXPECT_EQ(observer.writes, 1);
  EXPECT_EQ(values(target), (std::vector<double>{1, 2}));
}

// Backward runs ops through dispatch on the calling thread, so a thread's op observer (a tracer
// of the joint graph) sees them; another thread's backward stays invisible to it.
TEST(Observers, AThreadOpObserverSeesItsThreadsBackwardOps) {
  struct OpCounter final : ops::OpObserver {
    void on_op(const ops::OpCall&, const ops::OpOutputs&) override { ++ops; }
    int ops = 0;
  } counter;
  const Tensor w = from_vector<double>({1, 2}).requires_grad_();
  const Tensor loss = ops::sum(ops::mul(w, w));
  const ops::OpObserverGuard guard(&counter);
  std::thread([&] {
    const Tensor other = from_vector<double>({3}).requires_grad_();
    ops::sum(ops::mul(other, other)).backward();
  }).join();
  EXPECT_EQ(counter.ops, 0);
  loss.backward();
  EXPECT_GT(counter.ops, 0);
  EXPECT_EQ(values(w.grad()), (std::vector<double>{2, 4}));
}

}  // namespace
}  // namespace grove::autograd
