// The OpenMP paths: ctest runs every test process with one thread (see tests/CMakeLists.txt), so
// this file sets two threads explicitly and checks that threaded kernels agree with one thread
// on inputs large enough to be split (GEMM above its threshold, conv over images, softmax and
// cross_entropy rows, the backward ops). Kernels that are designed to be deterministic (every
// sum computed by one thread in a fixed order) must match bit for bit.
#include <omp.h>

#include "op_test_util.h"
#include "ops/conv.h"
#include "ops/embedding.h"
#include "ops/layer_norm.h"
#include "ops/linalg.h"
#include "ops/pool.h"
#include "ops/reduce.h"
#include "ops/softmax.h"

namespace grove::ops {
namespace {

using testing::elements;
using testing::expect_close;
using testing::random_integers;
using testing::random_tensor;

// Runs `op` with `threads` OpenMP threads and restores the previous count.
template <typename Op>
Tensor with_threads(int threads, Op op) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  Tensor result = op();
  omp_set_num_threads(before);
  return result;
}

// rtol 0: the results must be equal, bit for bit.
template <typename Op>
void expect_same_with_two_threads(Op op, double rtol, const char* what) {
  const Tensor one = with_threads(1, op);
  const Tensor two = with_threads(2, op);
  if (rtol == 0.0) {
    EXPECT_EQ(elements(two), elements(one)) << what;
    return;
  }
  // GEMM may split sums differently across threads: float32 rounding, hence rtol.
  expect_close(two, elements(one), rtol, 1e-5, what);
}

TEST(Threads, LargeMatmulAgreesWithOneThread) {
  Tensor a = random_tensor({256, 384}, DType::Float32, -1, 1, 1);
  Tensor b = random_tensor({384, 256}, DType::Float32, -1, 1, 2);
  expect_same_with_two_threads([&] { return matmul(a, b); }, 1e-5, "matmul");
}

TEST(Threads, ConvOverABatchAgreesWithOneThread) {
  Tensor input = random_tensor({8, 16, 16, 16}, DType::Float32, -1, 1, 3);
  Tensor weight = random_tensor({32, 16, 3, 3}, DType::Float32, -1, 1, 4);
  // N O (C kH kW) (Ho Wo) multiply-adds, above kMinParallelWork: images over threads.
  ASSERT_GE(8 * 32 * (16 * 9) * (16 * 16), 1 << 21);
  expect_same_with_two_threads(
      [&] {
        return conv2d(input, weight, {}, {1, 1}, {1, 1});
      },
      1e-5, "conv2d");
}

TEST(Threads, SoftmaxAndCrossEntropyAreDeterministicAcrossThreadCounts) {
  Tensor logits = random_tensor({1024, 64}, DType::Float32, -3, 3, 5);
  Tensor targets = random_integers({1024}, 0, 64, 6);
  expect_same_with_two_threads([&] { return softmax(logits, 1); }, 0.0, "softmax");
  expect_same_with_two_threads([&] { return cross_entropy(logits, targets); }, 0.0,
                               "cross_entropy");
}

// A convolution's bias gradient: per channel over batch and image, the channels spread over
// threads, each folded by one thread in the one-thread order. Also mean and var.
TEST(Threads, SumsOfFewOutputsOverThreadsEqualOneThreadBitForBit) {
  Tensor x = random_tensor({16, 8, 30, 30}, DType::Float32, -1, 3, 10);
  ASSERT_GE(x.numel(), 1 << 16);  // above kMinParallelReduce: the threaded path
  expect_same_with_two_threads([&] { return sum(x, {0, 2, 3}); }, 0.0, "sum");
  expect_same_with_two_threads([&] { return mean(x.to(DType::Float64), {0, 2, 3}, true); }, 0.0,
                               "mean, float64");
  expect_same_with_two_threads([&] { return var(x, {0, 2, 3}); }, 0.0, "var");
  // A linear layer's bias gradient: chunks of adjacent columns over threads.
  Tensor rows = random_tensor({2048, 130}, DType::Float32, -1, 3, 11);
  expect_same_with_two_threads([&] { return sum(rows, {0}); }, 0.0, "sum of columns");
  expect_same_with_two_threads([&] { return var(rows, {0}); }, 0.0, "var of columns");
}

TEST(Threads, ConvBackwardOverABatchIsDeterministicAcrossThreadCounts) {
  // Images (grad_input) and fixed chunks of images (grad_weight) over threads, serial GEMMs.
  Tensor input = random_tensor({8, 16, 16, 16}, DType::Float32, -1, 1, 7);
  Tensor weight = random_tensor({32, 16, 3, 3}, DType::Float32, -1, 1, 8);
  Tensor grad = random_tensor({8, 32, 16, 16}, DType::Float32, -1, 1, 9);
  // N O (C kH kW) (Ho Wo) multiply-adds, above kMinParallelWork: the threaded path.
  ASSERT_GE(8 * 32 * (16 * 9) * (16 * 16), 1 << 21);
  expect_same_with_two_threads(
      [&] { return conv2d_backward_input(grad, weight, input.sizes(), {1}, {1}); }, 0.0,
      "conv2d_backward_input");
  expect_same_with_two_threads(
      [&] { return conv2d_backward_weight(grad, input, weight.sizes(), {1}, {1}); }, 0.0,
      "conv2d_backward_weight");
}

TEST(Threads, OneImageConvBackwardAgreesWithOneThread) {
  // One image: Eigen's own threads in one GEMM, whose blocking depends on the thread count.
  Tensor input = random_tensor({1, 32, 14, 14}, DType::Float32, -1, 1, 10);
  Tensor weight = random_tensor({64, 32, 3, 3}, DType::Float32, -1, 1, 11);
  Tensor grad = random_tensor({1, 64, 14, 14}, DType::Float32, -1, 1, 12);
  expect_same_with_two_threads(
      [&] { return conv2d_backward_input(grad, weight, input.sizes(), {1}, {1}); }, 1e-5,
      "conv2d_backward_input");
  expect_same_with_two_threads(
      [&] { return conv2d_backward_weight(grad, input, weight.sizes(), {1}, {1}); }, 1e-5,
      "conv2d_backward_weight");
}

TEST(Threads, BackwardOpsAreDeterministicAcrossThreadCounts) {
  Tensor indices = random_integers({600}, 0, 7, 13);  // many repeats
  Tensor rows = random_tensor({600, 130}, DType::Float32, -1, 1, 14);
  expect_same_with_two_threads([&] { return embedding_backward(rows, indices, 7); }, 0.0,
                               "embedding_backward");

  Tensor x = random_tensor({256, 160}, DType::Float32, -3, 5, 15);
  Tensor weight = random_tensor({160}, DType::Float32, 0.5, 1.5, 16);
  Tensor grad = random_tensor({256, 160}, DType::Float32, -1, 1, 17);
  const LayerNormResult forward = layer_norm_with_stats(x, {160}, weight);
  const auto backward = [&] {
    return layer_norm_backward(grad, x, forward.mean, forward.rstd, {160}, weight);
  };
  expect_same_with_two_threads([&] { return backward().grad_input; }, 0.0, "layer_norm input");
  expect_same_with_two_threads([&] { return backward().grad_weight; }, 0.0, "layer_norm weight");
  expect_same_with_two_threads([&] { return backward().grad_bias; }, 0.0, "layer_norm bias");
  expect_same_with_two_threads([&] { return layer_norm_with_stats(x, {160}, weight).output; }, 0.0,
                               "layer_norm");
  expect_same_with_two_threads([&] { return layer_norm_with_stats(x, {160}, weight).rstd; }, 0.0,
                               "layer_norm rstd");

  Tensor image = random_tensor({8, 32, 28, 28}, DType::Float32, -1, 1, 18);
  const auto [pooled, argmax] = max_pool2d_with_indices(image, {3}, {2}, {1});
  Tensor pooled_grad = random_tensor(pooled.sizes(), DType::Float32, -1, 1, 19);
  expect_same_with_two_threads(
      [&] { return max_pool2d_backward(pooled_grad, argmax, image.sizes()); }, 0.0,
      "max_pool2d_backward");
  expect_same_with_two_threads(
      [&] { return avg_pool2d_backward(pooled_grad, image.sizes(), {3}, {2}, {1}); }, 0.0,
      "avg_pool2d_backward");

  Tensor logits = random_tensor({1024, 64}, DType::Float32, -3, 3, 20);
  Tensor targets = random_integers({1024}, 0, 64, 21);
  Tensor lse = random_tensor({1024}, DType::Float32, 4, 5, 22);  // any values do here
  Tensor loss_grad = full({}, 0.5f);
  expect_same_with_two_threads(
      [&] { return cross_entropy_backward(loss_grad, logits, targets, lse); }, 0.0,
      "cross_entropy_backward");
}

}  // namespace
}  // namespace grove::ops
