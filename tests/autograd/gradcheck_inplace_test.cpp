// Gradcheck of the in-place ops (ops/inplace.h). A leaf that requires gradients cannot be written
// in place, so each function first makes a copy with history (mul(x, 1.0)) or a fresh tensor,
// and applies the op to that. Covers broadcast operands, Scalar and tensor forms, rules that need
// the target's old value (mul_, lerp_), chains of in-place ops, copy_ across dtypes, and the ops
// that overwrite (fill_, uniform_, normal_), whose target's old value gets no gradient.
// Adding a case is one table entry. See tests/autograd/gradcheck_cases.h.
#include "core/rng.h"
#include "gradcheck_cases.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"

namespace grove::autograd::testing {
namespace {

using namespace grove::ops;

// A copy of x with history, which may be written in place.
Tensor writable_copy(const Tensor& x) {
  return mul(x, 1.0);
}

Tensor fresh_float64(IntArrayRef sizes, double value = 0.0) {
  return full(sizes, value, TensorOptions(DType::Float64));
}

const std::vector<GradcheckCase> kCases = {
    // add_
    {"add_",
     {leaf({3, 4}), leaf({3, 4}, 2)},
     [](Inputs in) {
       Tensor y = writable_copy(in[0]);
       add_(y, in[1]);
       return y;
     }},
    {"add_alpha_broadcast",
     {leaf({3, 4}), leaf({4}, 2)},
     [](Inputs in) {
       Tensor y = writable_copy(in[0]);
       add_(y, in[1], -0.5);
       return y;
     }},
    {"add_into_fresh_tensor",
     {leaf({3, 1}, 2)},
     [](Inputs in) {
       Tensor y = fresh_float64({3, 4});
       add_(y, in[0], 2.0);
       return y;
     }},
    // mul_: the tensor form keeps the target's old value for the operand's gradient
    {"mul_",
     {leaf({3, 4}), leaf({3, 4}, 2)},
     [](Inputs in) {
       Tensor y = writable_copy(in[0]);
       mul_(y, in[1]);
       return y;
     }},
    {"mul_broadcast_operand",
     {leaf({3, 4}), strided_leaf({4}, 2)},
     [](Inputs in) {
       Tensor y = writable_copy(in[0]);
       mul_(y, in[1]);
       return y;
     }},
    {"mul_scalar",
     {leaf({3, 4})},
     [](Inputs in) {
       Tensor y = writable_copy(in[0]);
       mul_(y, 2.5);
       return y;
     }},
    {"mul_by_own_source",
     {leaf({3, 4})},  // y = x * x
     [](Inputs in) {
       Tensor y = writable_copy(in[0]);
       mul_(y, in[0]);
       return y;
     }},
    {"mul_into_fresh_tensor",
     {leaf({3, 4})},
     [](Inputs in) {
       Tensor y = fresh_float64({3, 4}, 2.0);
       mul_(y, in[0]);
       return y;
     }},
    // addcmul_, addcdiv_
    {"addcmul_",
     {leaf({3, 4}), leaf({3, 4}, 2), leaf({4}, 3)},
     [](Inputs in) {
       Tensor y = writable_copy(in[0]);
       addcmul_(y, in[1], in[2], 0.5);
       return y;
     }},
    {"addcmul_default_value",
     {leaf({2, 3}), leaf({1, 3}, 2), leaf({2, 1}, 3)},
     [](Inputs in) {
       Tensor y = writable_copy(in[0]);
       addcmul_(y, in[1], in[2]);
       return y;
     }},
    {"addcdiv_",
     {leaf({3, 4}), leaf({3, 4}, 2), positive_leaf({4}, 3)},
     [](Inputs in) {
       Tensor y = writable_copy(in[0]);
       addcdiv_(y, in[1], in[2], -0.7);
       return y;
     }},
    {"addcdiv_0d_operand_into_fresh",
     {leaf({}, 2), positive_leaf({2, 3}, 3)},
     [](Inputs in) {
       Tensor y = fresh_float64({2, 3});
       addcdiv_(y, in[0], in[1]);
       return y;
     }},
    // lerp_: scalar weights on both sides of 0.5 (two formulas), tensor weights (saved old self)
    {"lerp_scalar_weight",
     {leaf({3, 4}), leaf({3, 4}, 2)},
     [](Inputs in) {
       Tensor y = writable_copy(in[0]);
       lerp_(y, in[1], 0.3);
       return y;
     }},
    {"lerp_scalar_weight_above_half",
     {leaf({3, 4}), leaf({4}, 2)},
     [](Inputs in) {
       Tensor y = writable_copy(in[0]);
       lerp_(y, in[1], 0.8);
       return y;
     }},
    {"lerp_tensor_weight",
     {leaf({3, 4}), leaf({3, 4}, 2), leaf({3, 4}, 3, 0.0, 1.0)},
     [](Inputs in) {
       Tensor y = writable_copy(in[0]);
       lerp_(y, in[1], in[2]);
       return y;
     }},
    {"lerp_tensor_weight_broadcast",
     {leaf({3, 4}), leaf({1, 4}, 2), leaf({3, 1}, 3, 0.0, 1.0)},
     [](Inputs in) {
       Tensor y = writable_copy(in[0]);
       lerp_(y, in[1], in[2]);
       return y;
     }},
    {"lerp_only_weight_requires_grad",
     {leaf({3, 4}, 3, 0.0, 1.0)},
     [](Inputs in) {
       Tensor y = random_tensor({3, 4}, 4);
       lerp_(y, random_tensor({3, 4}, 5), in[0]);
       return y;
     }},
    // copy_: the target's old value gets no gradient; the source's is summed over broadcast dims
    {"copy_broadcast_into_fresh",
     {leaf({4})},
     [](Inputs in) {
       Tensor y = fresh_float64({3, 4});
       copy_(y, in[0]);
       return y;
     }},
    {"copy_over_history",
     {leaf({3, 4}), leaf({3, 1}, 2)},
     [](Inputs in) {
       Tensor y = writable_copy(in[0]);
       copy_(y, in[1]);
       return add(y, in[0]);  // x reaches the output only through add
     }},
    {"copy_to_float32",
     {dyadic_leaf({3, 4})},
     [](Inputs in) {
       Tensor y = zeros({3, 4}, TensorOptions(DType::Float32));
       copy_(y, in[0]);
       return y.to(DType::Float64);
     },
     kFloat32RoundTrip},
    {"copy_from_float32_broadcast",
     {dyadic_leaf({4})},
     [](Inputs in) {
       Tensor y = fresh_float64({2, 4});
       copy_(y, in[0].to(DType::Float32));
       return y;
     },
     kFloat32RoundTrip},
    // fill_, uniform_, normal_: the old value gets no gradient; y is a constant afterwards
    {"fill_",
     {leaf({3, 4})},
     [](Inputs in) {
       Tensor y = writable_copy(in[0]);
       fill_(y, 2.0);
       return mul(y, in[0]);
     }},
    {"uniform_",
     {leaf({3, 4})},
     [](Inputs in) {
       Generator generator(17);  // seeded on every call: the same numbers each time
       Tensor y = writable_copy(in[0]);
       uniform_(y, -1.0, 1.0, &generator);
       return mul(y, in[0]);
     }},
    {"normal_",
     {leaf({3, 4})},
     [](Inputs in) {
       Generator generator(18);
       Tensor y = writable_copy(in[0]);
       normal_(y, 0.5, 2.0, &generator);
       return mul(y, in[0]);
     }},
    // several in-place ops on one tensor: each rebases its history on the previous one
    {"chain",
     {leaf({3, 4}), leaf({4}, 2), positive_leaf({3, 1}, 3)},
     [](Inputs in) {
       Tensor y = writable_copy(in[0]);
       mul_(y, in[1]);
       add_(y, in[0], 0.5);
       addcdiv_(y, in[1], in[2], 0.25);
       lerp_(y, in[0], mul(in[2], 0.3));
       return y;
     }},
};

class InplaceGradcheck : public ::testing::TestWithParam<GradcheckCase> {};

TEST_P(InplaceGradcheck, MatchesFiniteDifferences) {
  expect_gradcheck(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Inplace, InplaceGradcheck, ::testing::ValuesIn(kCases), CaseName());

}  // namespace

const std::vector<GradcheckCase>& inplace_gradcheck_cases() {
  return kCases;
}

}  // namespace grove::autograd::testing
