// Graphed mode needs about the memory eager mode needs: a whole training step whose backward
// makes large intermediates and the zeros of slices' gradients, traced, warmed up, recorded and
// replayed, never holds much more at its peak than the same step run eagerly. What this guards:
// a trace that keeps every tensor it saw alive, an interpreter that keeps values past their last
// reader, and constants (those zeros) kept whole and all made at the start of a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "compile_test_util.h"
#include "core/caching_allocator.h"
#include "ops/optim.h"
#include "ops/reduce.h"

namespace grove::graphs {
namespace {

using namespace grove::graphs::testing;
using CompileMemory = testing::TreeTest;

constexpr std::int64_t kRows = 512;
constexpr std::int64_t kWidth = 256;
constexpr int kLayers = 8;

// Gated layers: each multiplies by a [width, 2 width] weight and splits the result in two with
// narrow(), whose gradient autograd makes as zeros with the slice written in (a constant of the
// trace, written in place on every run). Each layer's forward saves 1 MiB and more.
struct Gated {
  std::vector<Tensor> weights;
  std::vector<Tensor> velocity;
  Gated() {
    for (int layer = 0; layer < kLayers; ++layer) {
      weights.push_back(parameter({kWidth, 2 * kWidth}, 10 + static_cast<std::uint64_t>(layer)));
    }
  }
};

TensorList train_step(Gated& model, const TensorList& in) {
  Tensor h = in[0];
  for (const Tensor& w : model.weights) {
    const Tensor both = matmul(h, w);
    h = tanh(both.narrow(1, 0, kWidth)) * sigmoid(both.narrow(1, kWidth, kWidth));
  }
  const Tensor loss = ops::mean(h * h);
  loss.backward();
  const autograd::NoGradGuard no_grad;
  if (model.velocity.empty()) {
    for (const Tensor& w : model.weights) model.velocity.push_back(zeros_like(w));
  }
  for (std::size_t i = 0; i < model.weights.size(); ++i) {
    sgd_(model.weights[i], model.weights[i].grad(), model.velocity[i],
         SgdHyperparameters{.lr = 0.01, .momentum = 0.9});
    model.weights[i].set_grad({});
  }
  return {loss.detach()};
}

// The most memory held at once during `call`, beyond what was held before it.
template <typename Call>
std::size_t peak_during(Call&& call) {
  CachingAllocator& allocator = allocator_for(kTestDevice);
  allocator.reset_peak_stats();
  const std::size_t before = allocator.stats().allocated_bytes;
  call();
  return allocator.stats().peak_allocated_bytes - before;
}

TEST_F(CompileMemory, AGraphedStepPeaksAboutWhereTheEagerStepDoes) {
  on_fresh_thread([&] {
    Gated eager, graphed;
    const TensorList batch = {input({kRows, kWidth}, 3)};
    std::size_t eager_peak = 0;
    for (int s = 0; s < 3; ++s) {
      eager_peak = std::max(eager_peak, peak_during([&] { (void)train_step(eager, batch); }));
    }
    CompiledFunction step =
        compile([&](const TensorList& in) { return train_step(graphed, in); }, quiet());
    // Calls 1 and 2 trace (eager runs), 3 records, the rest replay.
    std::vector<std::size_t> peaks;
    for (int s = 0; s < 6; ++s) {
      peaks.push_back(peak_during([&] { (void)step(batch); }));
    }
    EXPECT_EQ(tree_manager(kTestDevice).counters().recordings, 1u);
    EXPECT_EQ(tree_manager(kTestDevice).counters().replays, 3u);
    const double mib = 1 << 20;
    std::ostringstream out;
    out << "peaks in MiB: eager " << eager_peak / mib << "; graphed calls";
    for (std::size_t peak : peaks) out << " " << peak / mib;
    const std::string figures = out.str();
    // Recording and replays: 10% above the eager step, and 2 MiB for the allocator's
    // rounding and a library's workspace.
    const double bound = 1.1 * static_cast<double>(eager_peak) + 2 * mib;
    for (std::size_t call = 2; call < peaks.size(); ++call) {
      EXPECT_LE(static_cast<double>(peaks[call]), bound)
          << "call " << call + 1 << " peaked above the eager step; " << figures;
    }
    // A trace also keeps, until it ends, a snapshot of every tensor the function made without an
    // op (here the 16 zeros of the slices' gradients, 1 MiB each; Note [What a trace sees]), and
    // frees the rest as eagerly: below twice the eager step. (When it kept every tensor it saw,
    // the first trace peaked at almost 8 times.)
    for (std::size_t call = 0; call < 2; ++call) {
      EXPECT_LE(static_cast<double>(peaks[call]), 2.0 * static_cast<double>(eager_peak))
          << "trace " << call + 1 << " held more than twice the eager step; " << figures;
    }
    std::cout << figures << "\n";
  });
}

}  // namespace
}  // namespace grove::graphs
