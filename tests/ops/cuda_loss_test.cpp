// The CUDA loss kernels (ops/cuda/loss.cu) where a table of values (the parity table,
// tests/ops/cuda_parity_test.cpp, which holds the layouts, ignored rows, block rows and the model
// shapes) cannot say enough: out-of-range targets (reported at the next synchronisation and NaN
// until then, see Note [Out-of-range targets on the GPU]) and one capture and replay of
// cross_entropy with its gradient. Every test skips without a CUDA device (CTest label `gpu`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/device_graph.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "ops/softmax.h"
#include "tests/ops/cuda_test_util.h"

namespace grove::ops {
namespace {

using testing::kGpu;

// Tolerances: the GPU computes each row in double (exp and log of double) and rounds once; the
// CPU's dense float32 rows use a float exp accurate to a few ulps and float partial sums, so
// float32 losses and gradients agree to a few ulps (1e-5 relative, 1e-7 absolute for
// probabilities near zero). float64: both in double, the mean summed in a different order
// (1e-12).
void expect_parity(const Tensor& cpu_result, const Tensor& gpu_result, const std::string& what) {
  testing::expect_device_parity(cpu_result, gpu_result, what, {1e-5, 1e-7, 1e-12, 1e-15});
}

// Scores of `sizes` = (N, C) built as `view` of a base tensor, the same on both devices.
struct ScoreLayout {
  std::string name;
  DimVector base;
  std::function<Tensor(const Tensor&)> view;
};

// Targets in [0, classes), every `ignore_every`-th set to ignore_index (positions
// ignore_every - 1, 2 ignore_every - 1, ...; ignore_every 0: none, 1: all), read through a stride-2
// view when `strided`.
Tensor make_targets(std::int64_t rows, std::int64_t classes, unsigned seed, int ignore_every,
                    std::int64_t ignore_index, bool strided) {
  std::vector<double> values = testing::elements(
      testing::random_integers({std::max<std::int64_t>(rows, 1)}, 0, classes, seed));
  values.resize(static_cast<std::size_t>(rows));
  for (std::size_t i = static_cast<std::size_t>(ignore_every) - 1;
       ignore_every > 0 && i < values.size(); i += static_cast<std::size_t>(ignore_every)) {
    values[i] = static_cast<double>(ignore_index);
  }
  if (!strided) return from_vector(values).to(DType::Int64);
  std::vector<double> doubled(values.size() * 2, 0.0);
  for (std::size_t i = 0; i < values.size(); ++i) doubled[2 * i] = values[i];
  return from_vector(doubled).to(DType::Int64).slice(0, 0, 2 * rows, 2);
}

// lse of each row, in double on the CPU, as the cross_entropy op's second output would hold it.
Tensor row_lse(const Tensor& scores) {
  const std::int64_t rows = scores.size(0), classes = scores.size(1);
  const std::vector<double> x = testing::elements(scores);
  std::vector<double> lse(static_cast<std::size_t>(rows));
  for (std::int64_t i = 0; i < rows; ++i) {
    double max = x[static_cast<std::size_t>(i * classes)];
    for (std::int64_t c = 0; c < classes; ++c)
      max = std::max(max, x[static_cast<std::size_t>(i * classes + c)]);
    double sum = 0.0;
    for (std::int64_t c = 0; c < classes; ++c)
      sum += std::exp(x[static_cast<std::size_t>(i * classes + c)] - max);
    lse[static_cast<std::size_t>(i)] = max + std::log(sum);
  }
  return from_vector(lse).to(scores.dtype());
}

struct TargetCase {
  std::string name;
  int ignore_every;
  std::int64_t ignore_index;
  bool strided;
};

// The CPU throws for a target outside [0, C); the GPU reports it at the next synchronisation,
// and until then the loss is NaN and the bad row's gradient is NaN, the other rows' gradients
// stay finite. See Note [Out-of-range targets on the GPU].
TEST(CudaLossTest, OutOfRangeTargetsGiveNaNAndAreReported) {
  SKIP_WITHOUT_GPU();
  const Tensor scores = testing::random_tensor({4, 5}, DType::Float32, -2.0, 2.0, 5).to(kGpu);
  const Stream stream = current_stream(kGpu);
  for (std::int64_t bad : {std::int64_t{5}, std::int64_t{-3}, std::int64_t{1} << 40}) {
    const Tensor targets = from_vector(std::vector<std::int64_t>{0, bad, 4, 2}).to(kGpu);
    const Tensor grad = full({}, 1.0, TensorOptions(kGpu).dtype(DType::Float32));
    const Tensor lse = row_lse(scores.to(kCPU)).to(kGpu);
    using Loss = std::function<Tensor()>;
    for (const Loss& loss : {Loss([&] { return cross_entropy(scores, targets); }),
                             Loss([&] { return nll_loss(scores, targets); })}) {
      const Tensor value = loss();
      EXPECT_THROW(synchronize(stream), DeviceCheckError) << bad;
      EXPECT_TRUE(std::isnan(value.to(kCPU).item<float>())) << bad;
    }
    for (const Loss& gradient :
         {Loss([&] { return cross_entropy_backward(grad, scores, targets, lse); }),
          Loss([&] { return nll_loss_backward(grad, scores, targets); })}) {
      const Tensor g = gradient();
      EXPECT_THROW(synchronize(stream), DeviceCheckError) << bad;
      const std::vector<double> values = testing::elements(g.to(kCPU));
      for (std::size_t i = 0; i < values.size(); ++i) {
        EXPECT_EQ(std::isnan(values[i]), i / 5 == 1) << "target " << bad << " element " << i;
      }
    }
  }
}

// cross_entropy and its gradient captured once and replayed with new logits, targets and grad:
// the kernels read all three on the device.
TEST(CudaLossTest, CapturedCrossEntropyReplaysWithNewInputs) {
  SKIP_WITHOUT_GPU();
  const Stream stream = new_stream(kGpu);
  StreamGuard guard(stream);
  const Tensor logits = testing::random_tensor({256, 128}, DType::Float32, -5.0, 5.0, 21);
  const Tensor targets = make_targets(256, 128, 22, 7, -100, false);
  const Tensor grad = full({}, 1.0, TensorOptions(DType::Float32));
  const Tensor gpu_logits = logits.to(kGpu);
  const Tensor gpu_targets = targets.to(kGpu);
  const Tensor gpu_grad = grad.to(kGpu);
  const Tensor gpu_lse = row_lse(logits).to(kGpu);

  DeviceGraph graph(kGpu);
  graph.begin_capture(stream);
  const Tensor loss = cross_entropy(gpu_logits, gpu_targets);
  const Tensor logits_grad = cross_entropy_backward(gpu_grad, gpu_logits, gpu_targets, gpu_lse);
  graph.end_capture();

  graph.replay();
  expect_parity(cross_entropy(logits, targets), loss, "first replay: loss");
  expect_parity(cross_entropy_backward(grad, logits, targets, row_lse(logits)), logits_grad,
                "first replay: gradient");
  const Tensor logits2 = testing::random_tensor({256, 128}, DType::Float32, -5.0, 5.0, 23);
  const Tensor targets2 = make_targets(256, 128, 24, 3, -100, false);
  const Tensor grad2 = full({}, 0.25, TensorOptions(DType::Float32));
  gpu_logits.copy_(logits2);  // new values in the captured inputs' memory
  gpu_targets.copy_(targets2);
  gpu_grad.copy_(grad2);
  gpu_lse.copy_(row_lse(logits2));
  graph.replay();
  expect_parity(cross_entropy(logits2, targets2), loss, "replay with new inputs: loss");
  expect_parity(cross_entropy_backward(grad2, logits2, targets2, row_lse(logits2)), logits_grad,
                "replay with new inputs: gradient");
}

}  // namespace
}  // namespace grove::ops
