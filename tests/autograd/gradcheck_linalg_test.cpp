// Gradcheck of matmul, linear and bmm (ops/linalg.h): every operand rank matmul accepts (1-d
// operands, batches broadcast on either or both sides), linear with and without bias and with
// 1-d and 3-d inputs, and transposed (non-contiguous) operands, which the kernels read in place.
// Adding a case is one table entry. See tests/autograd/gradcheck_cases.h.
#include "gradcheck_cases.h"
#include "ops/linalg.h"

namespace grove::autograd::testing {
namespace {

using namespace grove::ops;

Tensor matmul_of(Inputs in) {
  return matmul(in[0], in[1]);
}
Tensor linear_of(Inputs in) {
  return linear(in[0], in[1], in.size() > 2 ? in[2] : Tensor());
}
Tensor bmm_of(Inputs in) {
  return bmm(in[0], in[1]);
}

const std::vector<GradcheckCase> kCases = {
    // matmul
    {"matmul_2d_2d", {leaf({3, 4}), leaf({4, 2}, 2)}, matmul_of},
    {"matmul_1d_1d", {leaf({4}), leaf({4}, 2)}, matmul_of},
    {"matmul_1d_2d", {leaf({4}), leaf({4, 3}, 2)}, matmul_of},
    {"matmul_2d_1d", {leaf({3, 4}), leaf({4}, 2)}, matmul_of},
    {"matmul_1d_3d", {leaf({4}), leaf({2, 4, 3}, 2)}, matmul_of},
    {"matmul_3d_1d", {leaf({2, 3, 4}), leaf({4}, 2)}, matmul_of},
    {"matmul_3d_2d", {leaf({2, 3, 4}), leaf({4, 2}, 2)}, matmul_of},
    {"matmul_2d_3d", {leaf({3, 4}), leaf({2, 4, 2}, 2)}, matmul_of},
    {"matmul_3d_3d", {leaf({2, 3, 4}), leaf({2, 4, 2}, 2)}, matmul_of},
    {"matmul_batch_broadcast_both", {leaf({2, 1, 3, 4}), leaf({3, 4, 2}, 2)}, matmul_of},
    {"matmul_batch_broadcast_size_1", {leaf({1, 3, 4}), leaf({2, 4, 2}, 2)}, matmul_of},
    {"matmul_expanded_operand",
     {leaf({3, 4}), leaf({4, 2}, 2)},
     [](Inputs in) {
       return matmul(in[0].expand({2, 3, 4}), in[1]);
     }},
    {"matmul_transposed_operands",
     {transposed_leaf({3, 4}), transposed_leaf({4, 2}, 2)},
     matmul_of},
    {"matmul_strided_batched", {strided_leaf({2, 3, 4}), transposed_leaf({2, 4, 2}, 2)}, matmul_of},
    {"matmul_one_operand_constant", {constant({3, 4}), leaf({4, 2}, 2)}, matmul_of},
    {"matmul_same_input_twice",
     {leaf({3, 3})},  // x x^T
     [](Inputs in) { return matmul(in[0], in[0].t()); }},
    {"matmul_transposed_output",
     {leaf({2, 3, 4}), leaf({4, 2}, 2)},  // a strided gradient
     [](Inputs in) { return matmul(in[0], in[1]).transpose(0, 2); }},
    // linear: x (..., in), weight (out, in), bias (out)
    {"linear_bias", {leaf({3, 4}), leaf({5, 4}, 2), leaf({5}, 3)}, linear_of},
    {"linear_no_bias", {leaf({3, 4}), leaf({5, 4}, 2)}, linear_of},
    {"linear_3d_input", {leaf({2, 3, 4}), leaf({5, 4}, 2), leaf({5}, 3)}, linear_of},
    {"linear_3d_input_no_bias", {leaf({2, 3, 4}), leaf({5, 4}, 2)}, linear_of},
    {"linear_1d_input", {leaf({4}), leaf({5, 4}, 2), leaf({5}, 3)}, linear_of},
    {"linear_transposed_weight",  // a weight stored (in, out), as after weight tying
     {strided_leaf({3, 4}), transposed_leaf({5, 4}, 2), leaf({5}, 3)},
     linear_of},
    {"linear_constant_input", {constant({3, 4}), leaf({2, 4}, 2)}, linear_of},
    {"linear_same_input_twice",
     {leaf({3, 4})},  // x x^T through linear
     [](Inputs in) { return linear(in[0], in[0]); }},
    // bmm
    {"bmm", {leaf({2, 3, 4}), leaf({2, 4, 5}, 2)}, bmm_of},
    {"bmm_transposed_operands",
     {transposed_leaf({2, 3, 4}), transposed_leaf({2, 4, 2}, 2)},
     bmm_of},
};

class LinalgGradcheck : public ::testing::TestWithParam<GradcheckCase> {};

TEST_P(LinalgGradcheck, MatchesFiniteDifferences) {
  expect_gradcheck(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Linalg, LinalgGradcheck, ::testing::ValuesIn(kCases), CaseName());

}  // namespace

const std::vector<GradcheckCase>& linalg_gradcheck_cases() {
  return kCases;
}

}  // namespace grove::autograd::testing
