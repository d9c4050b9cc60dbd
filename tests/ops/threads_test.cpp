// The OpenMP paths: ctest runs every test process with one thread (see tests/CMakeLists.txt), so
// this file sets two threads explicitly and checks that threaded kernels agree with one thread
// on inputs large enough to be split (GEMM above its threshold, conv over images, softmax and
// cross_entropy rows). Reductions that are designed to be deterministic must match exactly.
#include <omp.h>

#include "op_test_util.h"
#include "ops/conv.h"
#include "ops/linalg.h"
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

template <typename Op>
void expect_same_with_two_threads(Op op, double rtol, const char* what) {
  const Tensor one = with_threads(1, op);
  const Tensor two = with_threads(2, op);
  // GEMM may split sums differently across threads: float32 rounding, hence rtol.
  expect_close(two, elements(one), rtol, 1e-5, what);
}

TEST(Threads, LargeMatmulAgreesWithOneThread) {
  Tensor a = random_tensor({256, 384}, DType::Float32, -1, 1, 1);
  Tensor b = random_tensor({384, 256}, DType::Float32, -1, 1, 2);
  expect_same_with_two_threads([&] { return matmul(a, b); }, 1e-5, "matmul");
}

TEST(Threads, ConvOverABatchAgreesWithOneThread) {
  Tensor input = random_tensor({8, 4, 12, 12}, DType::Float32, -1, 1, 3);
  Tensor weight = random_tensor({6, 4, 3, 3}, DType::Float32, -1, 1, 4);
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

}  // namespace
}  // namespace grove::ops
