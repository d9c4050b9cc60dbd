// Parity of the CUDA embedding and embedding_backward kernels (ops/cuda/embedding.cu) with the
// CPU kernels (ops/cpu/embedding.cpp), the reference: contiguous, transposed and strided tables,
// indices of several shapes (0-d, empty, strided, the GPT batch of 2048), heavily repeated
// indices in the gradient, integer tables; and out-of-range indices, which are reported at the
// next synchronisation and give NaN in the meantime (Note [Out-of-range indices on the GPU]; more
// in cuda_device_errors_test.cpp). Every test skips without a CUDA device (CTest label `gpu`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/device.h"
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

// Indices in [0, rows) (or [0, 3) when repeated), on `device`.
Tensor make_indices(const IndexCase& c, std::int64_t rows, unsigned seed, Device device) {
  const std::int64_t high = c.repeated ? std::min<std::int64_t>(3, rows) : rows;
  if (!c.strided) return testing::random_integers(c.sizes, 0, high, seed).to(device);
  DimVector doubled(c.sizes);
  doubled[doubled.size() - 1] *= 2;
  const Tensor base = testing::random_integers(doubled, 0, high, seed).to(device);
  return base.slice(-1, 0, doubled.back(), 2);
}

TEST(CudaEmbeddingTest, GatherAndGradientMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  const std::vector<testing::Layout> tables = {
      {"gpt table", {128, 128}, [](const Tensor& t) { return t; }},
      {"transposed table", {24, 50}, [](const Tensor& t) { return t.transpose(0, 1); }},
      {"strided table", {50, 70}, [](const Tensor& t) { return t.slice(1, 1, 70, 3); }},
      {"wide rows", {6, 300}, [](const Tensor& t) { return t; }},
  };
  const std::vector<IndexCase> index_cases = {
      {"gpt batch (8, 256)", {8, 256}, false, false},
      {"repeated", {3, 77}, false, true},
      {"strided", {5, 9}, true, false},
      {"0-d", {}, false, false},
      {"empty", {0, 4}, false, false},
  };
  unsigned seed = 1;
  for (const testing::Layout& table : tables) {
    for (DType dtype : {DType::Float32, DType::Float64, DType::Int64}) {
      const Tensor base = testing::random_quarters(table.base, dtype, seed++);
      const Tensor weight = table.view(base);
      const Tensor gpu_weight = table.view(base.to(kGpu));
      const std::int64_t rows = weight.size(0), features = weight.size(1);
      for (const IndexCase& c : index_cases) {
        const Tensor indices = make_indices(c, rows, seed, kCPU);
        const Tensor gpu_indices = make_indices(c, rows, seed++, kGpu);
        const std::string what = table.name + " " + std::string(dtype_name(dtype)) + ", " + c.name;
        expect_exact(embedding(weight, indices), embedding(gpu_weight, gpu_indices),
                     "embedding " + what);
        if (dtype == DType::Int64) continue;  // gradients are floating point
        DimVector grad_sizes(indices.sizes());
        grad_sizes.push_back(features);
        const Tensor grad = testing::random_tensor(grad_sizes, dtype, -2.0, 2.0, seed++);
        expect_exact(embedding_backward(grad, indices, rows),
                     embedding_backward(strided_on_gpu(grad), gpu_indices, rows),
                     "embedding_backward " + what);
        // More weight rows than any index picks: the rows nobody picks are 0.
        expect_exact(embedding_backward(grad, indices, rows + 5),
                     embedding_backward(grad.to(kGpu), gpu_indices, rows + 5),
                     "embedding_backward, unpicked rows, " + what);
      }
    }
  }
}

// The CPU throws for an index outside [0, rows); the GPU reports it at the next synchronisation,
// and until then the gather's row for it is NaN and the gradient is NaN everywhere. See Note
// [Out-of-range indices on the GPU].
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
