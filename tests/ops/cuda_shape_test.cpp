// Parity of the CUDA kernels of the copying shape ops (ops/cuda/shape.cu) with the CPU kernels
// (ops/cpu/shape.cpp), the reference: cat along every dim of contiguous, transposed and strided
// inputs (empty ones among them) in every dtype; tril and triu over a range of diagonals on
// square, wide, tall, batched, transposed and empty matrices; one_hot of indices of several
// shapes, strided and empty. Every test skips without a CUDA device (CTest label `gpu`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/tensor.h"
#include "ops/shape.h"
#include "tests/ops/cuda_test_util.h"

namespace grove::ops {
namespace {

using testing::kGpu;

using testing::strided_on_gpu;

// Tolerance 0: these ops only move values (or write 0 and 1), so the results must be equal.
void expect_exact(const Tensor& cpu_result, const Tensor& gpu_result, const std::string& what) {
  testing::expect_device_parity(cpu_result, gpu_result, what, {0.0, 0.0, 0.0, 0.0});
}

const DType kDtypes[] = {DType::Float32, DType::Float64, DType::Int64, DType::Int32, DType::Bool};

TEST(CudaShapeTest, CatMatchesTheCpuAlongEveryDim) {
  SKIP_WITHOUT_GPU();
  unsigned seed = 1;
  for (DType dtype : kDtypes) {
    for (std::int64_t dim = -3; dim < 3; ++dim) {
      const std::int64_t d = dim < 0 ? dim + 3 : dim;
      // Three inputs of shape (4, 5, 6) except along d: 2, 0 (empty) and 3 elements; the first
      // contiguous, the second transposed, the third a strided slice.
      auto sizes_with = [&](std::int64_t length) {
        DimVector sizes{4, 5, 6};
        sizes[static_cast<std::size_t>(d)] = length;
        return sizes;
      };
      const Tensor a = testing::random_quarters(sizes_with(2), dtype, seed++);
      const Tensor b = testing::random_quarters(sizes_with(0), dtype, seed++);
      const Tensor c =
          testing::non_contiguous(testing::random_quarters(sizes_with(3), dtype, seed++));
      DimVector swapped = sizes_with(2);
      std::swap(swapped[0], swapped[2]);
      const Tensor a_base = testing::random_quarters(swapped, dtype, seed++);
      const Tensor a_t = a_base.transpose(0, 2);
      const std::string what = std::string(dtype_name(dtype)) + " dim " + std::to_string(dim);
      expect_exact(cat({a, b, c}, dim), cat({a.to(kGpu), b.to(kGpu), strided_on_gpu(c)}, dim),
                   "cat " + what);
      const Tensor gpu_c = strided_on_gpu(c);
      expect_exact(cat({a_t, c}, dim), cat({a_base.to(kGpu).transpose(0, 2), gpu_c}, dim),
                   "cat of a transposed input, " + what);
      expect_exact(stack({a, a_t}, dim), stack({a.to(kGpu), a_base.to(kGpu).transpose(0, 2)}, dim),
                   "stack " + what);
    }
  }
}

TEST(CudaShapeTest, TrilAndTriuMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  const std::vector<testing::Layout> layouts = {
      {"square", {6, 6}, [](const Tensor& t) { return t; }},
      {"wide", {4, 9}, [](const Tensor& t) { return t; }},
      {"tall", {9, 4}, [](const Tensor& t) { return t; }},
      {"batched", {3, 2, 5, 7}, [](const Tensor& t) { return t; }},
      {"transposed", {7, 5}, [](const Tensor& t) { return t.transpose(0, 1); }},
      {"transposed batch", {5, 3, 6}, [](const Tensor& t) { return t.transpose(0, 2); }},
      {"strided", {6, 14}, [](const Tensor& t) { return t.slice(1, 0, 14, 2); }},
      {"gpt mask", {256, 256}, [](const Tensor& t) { return t; }},
      {"empty", {0, 5}, [](const Tensor& t) { return t; }},
      {"empty batch", {0, 3, 3}, [](const Tensor& t) { return t; }},
  };
  unsigned seed = 1;
  for (const testing::Layout& layout : layouts) {
    for (DType dtype : kDtypes) {
      const Tensor base = testing::random_quarters(layout.base, dtype, seed++, 7);
      const Tensor x = layout.view(base);
      const Tensor gpu_x = layout.view(base.to(kGpu));
      for (std::int64_t diagonal : {-10, -2, -1, 0, 1, 3, 10}) {
        const std::string what = layout.name + " " + std::string(dtype_name(dtype)) + " diagonal " +
                                 std::to_string(diagonal);
        expect_exact(tril(x, diagonal), tril(gpu_x, diagonal), "tril " + what);
        expect_exact(triu(x, diagonal), triu(gpu_x, diagonal), "triu " + what);
      }
    }
  }
}

TEST(CudaShapeTest, OneHotMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  struct Case {
    std::string name;
    DimVector sizes;
    std::int64_t classes;
    bool strided;
  };
  const std::vector<Case> cases = {
      {"1-d", {17}, 5, false},
      {"2-d", {4, 33}, 10, false},
      {"0-d", {}, 3, false},
      {"strided", {6, 8}, 4, true},
      {"one class", {9}, 1, false},
      {"empty", {0}, 4, false},
      {"empty, no classes", {0, 2}, 0, false},
  };
  unsigned seed = 1;
  for (const Case& c : cases) {
    DimVector base_sizes(c.sizes);
    if (c.strided) base_sizes[base_sizes.size() - 1] *= 2;
    const Tensor base =
        testing::random_integers(base_sizes, 0, std::max<std::int64_t>(c.classes, 1), seed++);
    const Tensor indices = c.strided ? base.slice(-1, 0, base_sizes.back(), 2) : base;
    const Tensor gpu_indices =
        c.strided ? base.to(kGpu).slice(-1, 0, base_sizes.back(), 2) : base.to(kGpu);
    expect_exact(one_hot(indices, c.classes), one_hot(gpu_indices, c.classes), "one_hot " + c.name);
  }
}

}  // namespace
}  // namespace grove::ops
