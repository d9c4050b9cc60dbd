// The CUDA softmax and log_softmax kernel (ops/cuda/softmax.cu) on rows holding NaN: the NaN
// stays in its row, as on the CPU. Values and layouts against the CPU are in the parity table
// (tests/ops/cuda_parity_test.cpp). Every test skips without a CUDA device (CTest label `gpu`).
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/tensor.h"
#include "ops/softmax.h"
#include "tests/ops/cuda_test_util.h"

namespace grove::ops {
namespace {

using testing::kGpu;

// Tolerances: the GPU computes in double and rounds once; the CPU's dense float32 path uses a
// float exp accurate to a few ulps and float partial sums, so float32 agrees to a few ulps
// (1e-5 relative, 1e-7 absolute for probabilities near zero). log_softmax's x - lse cancels
// near zero: the CPU's float lse is off by a few float32 ulps of |lse| (<= about 10 here), so
// its absolute floor is 2e-6. float64: both compute in double with sums in different orders and
// different exp implementations (1e-12).
void expect_parity(const Tensor& cpu_result, const Tensor& gpu_result, const std::string& what,
                   double float32_atol = 1e-7) {
  testing::expect_device_parity(cpu_result, gpu_result, what, {1e-5, float32_atol, 1e-12, 1e-15});
}

// A NaN anywhere in a row makes the whole row NaN on both devices; other rows are unaffected.
TEST(CudaSoftmaxTest, NaNPropagatesThroughItsRowOnly) {
  SKIP_WITHOUT_GPU();
  std::vector<double> values = testing::elements(testing::random_tensor({4, 300}, DType::Float64));
  values[1 * 300 + 250] = std::numeric_limits<double>::quiet_NaN();
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor x = from_vector(values).reshape({4, 300}).to(dtype);
    expect_parity(softmax(x, 1), softmax(x.to(kGpu), 1), "softmax");
    expect_parity(log_softmax(x, -1), log_softmax(x.to(kGpu), -1), "log_softmax", 2e-6);
    expect_parity(softmax(x, 0), softmax(x.to(kGpu), 0), "softmax over dim 0");
  }
}

}  // namespace
}  // namespace grove::ops
