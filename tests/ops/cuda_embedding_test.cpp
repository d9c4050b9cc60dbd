// The CUDA embedding kernels (ops/cuda/embedding.cu) where a table of values (the parity table,
// tests/ops/cuda_parity_test.cpp, which holds both backward paths and integer tables) cannot say
// enough: a captured gradient replayed with new indices, and out-of-range indices, which are
// reported at the next synchronisation and give NaN in the meantime
// (Note [Out-of-range indices on the GPU]; more in cuda_device_errors_test.cpp). Every test
// skips without a CUDA device (CTest label `gpu`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/device_graph.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "ops/embedding.h"
#include "tests/ops/cuda_test_util.h"

namespace grove::ops {
namespace {

using testing::kGpu;

using testing::strided_on_gpu;

// Tolerance 0: the gather copies values, and the gradient adds each output element's grad rows
// in index order in the grad's dtype on both devices (no fused multiply-add is possible in a
// plain sum), so the results must agree bit for bit.
void expect_exact(const Tensor& cpu_result, const Tensor& gpu_result, const std::string& what) {
  testing::expect_device_parity(cpu_result, gpu_result, what, {0.0, 0.0, 0.0, 0.0});
}

struct IndexCase {
  std::string name;
  DimVector sizes;
  bool strided;   // read through a stride-2 view
  bool repeated;  // draw from 3 rows only, so most indices repeat
};

// Captured once, replayed with new indices and gradients, on both of the backward's paths (a
// scan for 6 indices; a sort for 1,000, whose scratch lives in the capture's pool and whose sort
// runs again on every replay).
TEST(CudaEmbeddingTest, CapturedGradientReplaysWithNewIndices) {
  SKIP_WITHOUT_GPU();
  const Stream stream = new_stream(kGpu);
  const StreamGuard guard(stream);
  const std::int64_t features = 5;
  for (const auto& [rows, count] : {std::pair<std::int64_t, std::int64_t>{300, 6}, {5000, 1000}}) {
    std::mt19937 engine(static_cast<unsigned>(rows));
    auto draw = [&] {
      std::uniform_int_distribution<std::int64_t> pick(0, rows - 1);
      std::vector<std::int64_t> values(static_cast<std::size_t>(count));
      for (std::int64_t& value : values) value = pick(engine) % 4 == 0 ? rows - 1 : pick(engine);
      return from_vector(values);
    };
    const std::string what = std::to_string(rows) + " rows, " + std::to_string(count) + " indices";
    const Tensor indices = draw();
    const Tensor grad = testing::random_tensor({count, features}, DType::Float32, -2.0, 2.0, 9);
    const Tensor gpu_indices = indices.to(kGpu);
    const Tensor gpu_grad = grad.to(kGpu);
    (void)embedding_backward(gpu_grad, gpu_indices, rows);  // eager warm-up
    synchronize(stream);
    DeviceGraph graph(kGpu);
    graph.begin_capture(stream);
    const Tensor out = embedding_backward(gpu_grad, gpu_indices, rows);
    graph.end_capture();
    graph.replay();
    expect_exact(embedding_backward(grad, indices, rows), out, "first replay, " + what);
    const Tensor indices2 = draw();
    const Tensor grad2 = testing::random_tensor({count, features}, DType::Float32, -2.0, 2.0, 10);
    gpu_indices.copy_(indices2);
    gpu_grad.copy_(grad2);
    graph.replay();
    expect_exact(embedding_backward(grad2, indices2, rows), out, "second replay, " + what);
  }
}

// The sort path (1,000 indices) treats a bad index as the scan path does: reported once, and NaN
// over the whole gradient.
TEST(CudaEmbeddingTest, BadIndexOnTheSortPathIsReportedAndGivesNaN) {
  SKIP_WITHOUT_GPU();
  std::vector<std::int64_t> values(1000, 3);
  values[17] = 5000;
  const Tensor grad = testing::random_tensor({1000, 2}, DType::Float32, -2.0, 2.0, 11).to(kGpu);
  const Tensor result = embedding_backward(grad, from_vector(values).to(kGpu), 5000);
  try {
    synchronize(current_stream(kGpu));
    ADD_FAILURE() << "synchronize did not throw DeviceCheckError";
  } catch (const DeviceCheckError& error) {
    EXPECT_NE(error.message().find("embedding_backward: index 5000 at position 17"),
              std::string::npos)
        << error.message();
    EXPECT_EQ(error.message().find("more report"), std::string::npos) << error.message();
  }
  for (double value : testing::elements(result.to(kCPU))) EXPECT_TRUE(std::isnan(value));
}

// The CPU throws for an index outside [0, rows); the GPU reports it at the next synchronisation,
// and until then the gather's row for it is NaN and the gradient is NaN everywhere. See
// Note [Out-of-range indices on the GPU].
TEST(CudaEmbeddingTest, OutOfRangeIndicesGiveNaNAndAreReported) {
  SKIP_WITHOUT_GPU();
  const Tensor weight = testing::random_tensor({4, 3}, DType::Float32, -1.0, 1.0, 3).to(kGpu);
  for (std::int64_t bad : {std::int64_t{4}, std::int64_t{-1}, std::int64_t{1} << 40}) {
    const Tensor indices = from_vector(std::vector<std::int64_t>{0, bad, 3}).to(kGpu);
    const Tensor gathered_on_gpu = embedding(weight, indices);
    EXPECT_THROW(synchronize(current_stream(kGpu)), DeviceCheckError) << "index " << bad;
    const std::vector<double> gathered = testing::elements(gathered_on_gpu.to(kCPU));
    for (std::size_t i = 0; i < gathered.size(); ++i) {
      EXPECT_EQ(std::isnan(gathered[i]), i / 3 == 1) << "index " << bad << " element " << i;
    }
    const Tensor grad = testing::random_tensor({3, 3}, DType::Float32, -1.0, 1.0, 4).to(kGpu);
    const Tensor grad_weight = embedding_backward(grad, indices, 4);
    EXPECT_THROW(synchronize(current_stream(kGpu)), DeviceCheckError) << "index " << bad;
    for (double value : testing::elements(grad_weight.to(kCPU))) {
      EXPECT_TRUE(std::isnan(value)) << "index " << bad;
    }
  }
}

}  // namespace
}  // namespace grove::ops
