// Gradcheck on a CUDA device: a subset of the CPU tables (gradcheck_<family>_test.cpp) that
// covers every family, with the inputs made as on the CPU and moved to cuda(0) keeping their
// layout (transposed and strided leaves stay non-contiguous). The function, its backward and
// the finite differences all run on the GPU in float64; gradcheck copies the values to the host
// to compare. Tolerances are gradcheck's defaults, as on the CPU: the GPU kernels compute in
// float64 too, so central differences have the same accuracy there.
//
// Cases whose op has no CUDA kernel yet fail with "there is no kernel for ..."; they stay in
// the table so that they pass once the kernel lands.
#include "core/rng.h"
#include "gradcheck_cases.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/layer_norm.h"
#include "ops/linalg.h"
#include "ops/pool.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "ops/softmax.h"

namespace grove::autograd::testing {
namespace {

using namespace grove::ops;

const Device kGpu = cuda(0);

// The tensor `make` gives, on the GPU, with the same sizes and strides and requires_grad.
MakeInput on_gpu(MakeInput make) {
  return [make = std::move(make)] {
    const Tensor cpu = make();
    const Tensor gpu =
        empty_strided(cpu.sizes(), cpu.strides(), TensorOptions(cpu.dtype()).device(kGpu));
    gpu.copy_(cpu.detach());
    if (cpu.requires_grad()) gpu.requires_grad_();
    return gpu;
  };
}

// A case whose inputs are all moved to the GPU.
GradcheckCase gpu_case(const char* name, std::vector<MakeInput> inputs, GradcheckFn fn) {
  for (MakeInput& input : inputs) input = on_gpu(std::move(input));
  return {name, std::move(inputs), std::move(fn)};
}

const std::vector<GradcheckCase>
    kCases =
        {
            // elementwise: broadcasting, 0-d, non-contiguous
            gpu_case("add_broadcast_both", {leaf({3, 1}), leaf({1, 4}, 2)},
                     [](Inputs in) { return add(in[0], in[1]); }),
            gpu_case("add_non_contiguous", {transposed_leaf({3, 4}), strided_leaf({3, 4})},
                     [](Inputs in) { return add(in[0], in[1]); }),
            gpu_case("mul_broadcast_rank", {leaf({2, 3, 4}), leaf({4}, 2)},
                     [](Inputs in) { return mul(in[0], in[1]); }),
            gpu_case("mul_0d_left", {leaf({}), leaf({2, 3}, 2)},
                     [](Inputs in) { return mul(in[0], in[1]); }),
            gpu_case("div_broadcast_both", {leaf({3, 1}), positive_leaf({1, 4}, 2)},
                     [](Inputs in) { return div(in[0], in[1]); }),
            gpu_case("div_non_contiguous",
                     {strided_leaf({3, 4}), transposed_leaf({3, 4}, 2, 0.5, 2.0)},
                     [](Inputs in) { return div(in[0], in[1]); }),
            gpu_case("exp", {leaf({3, 4})}, [](Inputs in) { return exp(in[0]); }),
            gpu_case("tanh_transposed", {transposed_leaf({3, 4})},
                     [](Inputs in) { return tanh(in[0]); }),
            gpu_case("gelu", {leaf({3, 4})}, [](Inputs in) { return gelu(in[0]); }),
            gpu_case("gelu_tanh_approximation", {leaf({3, 4})},
                     [](Inputs in) { return gelu(in[0], /*approximate=*/true); }),
            // reductions
            gpu_case("sum_all", {leaf({2, 3, 4})}, [](Inputs in) { return sum(in[0]); }),
            gpu_case("sum_dims_0_2", {strided_leaf({2, 3, 4})},
                     [](Inputs in) {
                       return sum(in[0], {0, 2});
                     }),
            gpu_case("mean_dim_neg1_keepdim", {leaf({2, 3, 4})},
                     [](Inputs in) { return mean(in[0], {-1}, /*keepdim=*/true); }),
            gpu_case("var_dim1", {leaf({3, 5})}, [](Inputs in) { return var(in[0], {1}); }),
            gpu_case("var_biased_dims_0_1_transposed", {transposed_leaf({3, 4})},
                     [](Inputs in) {
                       return var(in[0], {0, 1}, /*unbiased=*/false);
                     }),
            // softmax, log_softmax
            gpu_case("softmax_dim1", {leaf({3, 5})}, [](Inputs in) { return softmax(in[0], 1); }),
            gpu_case("softmax_dim0_3d", {leaf({3, 2, 4})},
                     [](Inputs in) { return softmax(in[0], 0); }),
            gpu_case("log_softmax_dim_neg2_strided", {strided_leaf({2, 3, 4})},
                     [](Inputs in) { return log_softmax(in[0], -2); }),
            // matmul, linear
            gpu_case("matmul_2d_2d", {leaf({3, 4}), leaf({4, 2}, 2)},
                     [](Inputs in) { return matmul(in[0], in[1]); }),
            gpu_case("matmul_batch_broadcast", {leaf({2, 1, 3, 4}), leaf({3, 4, 2}, 2)},
                     [](Inputs in) { return matmul(in[0], in[1]); }),
            gpu_case("matmul_transposed_operands",
                     {transposed_leaf({3, 4}), transposed_leaf({4, 2}, 2)},
                     [](Inputs in) { return matmul(in[0], in[1]); }),
            gpu_case("linear_bias_3d_input", {leaf({2, 3, 4}), leaf({5, 4}, 2), leaf({5}, 3)},
                     [](Inputs in) { return linear(in[0], in[1], in[2]); }),
            // cross_entropy: logits (N, C), targets (N) with an ignored row
            gpu_case("cross_entropy", {leaf({4, 5}), int64_tensor({1, 0, 4, 1})},
                     [](Inputs in) { return cross_entropy(in[0], in[1]); }),
            gpu_case("cross_entropy_ignored_rows",
                     {leaf({5, 3}), int64_tensor({2, -100, 0, -100, 1})},
                     [](Inputs in) { return cross_entropy(in[0], in[1]); }),
            // layer_norm
            gpu_case("layer_norm_weight_bias", {leaf({3, 4}), leaf({4}, 2), leaf({4}, 3)},
                     [](Inputs in) { return layer_norm(in[0], {4}, in[1], in[2]); }),
            gpu_case("layer_norm_two_dims", {leaf({2, 3, 4}), leaf({3, 4}, 2), leaf({3, 4}, 3)},
                     [](Inputs in) {
                       return layer_norm(in[0], {3, 4}, in[1], in[2]);
                     }),
            // embedding: repeated indices (their gradients add up)
            gpu_case("embedding_repeated_indices",
                     {leaf({5, 3}), int64_tensor({1, 3, 1, 0, 3, 3}, {2, 3})},
                     [](Inputs in) { return embedding(in[0], in[1]); }),
            // conv2d
            gpu_case("conv2d_bias", {leaf({2, 2, 4, 4}), leaf({3, 2, 2, 2}, 2), leaf({3}, 3)},
                     [](Inputs in) { return conv2d(in[0], in[1], in[2]); }),
            gpu_case("conv2d_stride_padding_dilation_groups",
                     {strided_leaf({2, 4, 5, 4}), leaf({6, 2, 3, 2}, 2), leaf({6}, 3)},
                     [](Inputs in) {
                       return conv2d(in[0], in[1], in[2], {2, 1}, {1, 1}, {1, 2}, 2);
                     }),
            // pooling (random values: no ties within a max window)
            gpu_case("max_pool2d_padding_stride", {leaf({2, 1, 5, 4})},
                     [](Inputs in) {
                       return max_pool2d(in[0], {3, 2}, {2, 1}, {1, 1});
                     }),
            gpu_case("avg_pool2d_padding", {leaf({1, 2, 5, 5})},
                     [](Inputs in) {
                       return avg_pool2d(in[0], {3, 3}, {2, 2}, {1, 1});
                     }),
            // dropout: the generator is re-seeded on every call, so the mask is the same each time
            gpu_case("dropout", {leaf({4, 5})},
                     [](Inputs in) {
                       Generator generator(42);
                       return dropout(in[0], 0.3, /*train=*/true, &generator);
                     }),
};

class CudaGradcheck : public ::testing::TestWithParam<GradcheckCase> {
 protected:
  void SetUp() override {
    if (!cuda_is_available()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_P(CudaGradcheck, MatchesFiniteDifferences) {
  const GradcheckCase& c = GetParam();
  const std::vector<Tensor> inputs = make_inputs(c);
  for (const Tensor& input : inputs) ASSERT_EQ(input.device(), kGpu);
  const GradcheckResult result = gradcheck(c.fn, inputs, c.options);
  EXPECT_TRUE(result.ok) << c.name << ":\n" << result.report;
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaGradcheck, ::testing::ValuesIn(kCases), CaseName());

}  // namespace
}  // namespace grove::autograd::testing
