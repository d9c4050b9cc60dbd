// Gradcheck of the shape ops (ops/shape.h: cat, stack, split, chunk, flatten, tril, triu),
// dropout (ops/random.h), and core's views and copies, which autograd records as DerivedNodes
// (view, reshape, transpose, t, permute, slice, narrow, select, expand, squeeze, unsqueeze,
// clone, contiguous, to(dtype)). Views of non-contiguous leaves and chains of views are included.
// Adding a case is one table entry. See tests/autograd/gradcheck_cases.h.
#include "core/rng.h"
#include "gradcheck_cases.h"
#include "ops/random.h"
#include "ops/shape.h"

namespace grove::autograd::testing {
namespace {

using namespace grove::ops;

const std::vector<GradcheckCase> kCases = {
    // cat, stack
    {"cat_dim0",
     {leaf({2, 3}), leaf({1, 3}, 2)},
     [](Inputs in) {
       return cat({in[0], in[1]}, 0);
     }},
    {"cat_dim_neg1_with_constant",
     {leaf({2, 3}), constant({2, 1}, 2), transposed_leaf({2, 2}, 3)},
     [](Inputs in) {
       return cat({in[0], in[1], in[2]}, -1);
     }},
    {"cat_same_input_twice",
     {leaf({2, 3})},
     [](Inputs in) {
       return cat({in[0], in[0]}, 1);
     }},
    {"cat_empty_piece",
     {leaf({2, 3}), leaf({0, 3}, 2)},
     [](Inputs in) {
       return cat({in[1], in[0]}, 0);
     }},
    {"stack_dim0",
     {leaf({2, 3}), leaf({2, 3}, 2)},
     [](Inputs in) {
       return stack({in[0], in[1]}, 0);
     }},
    {"stack_dim_neg1",
     {strided_leaf({2, 3}), leaf({2, 3}, 2)},
     [](Inputs in) {
       return stack({in[0], in[1]}, -1);
     }},
    {"stack_one_tensor", {leaf({2, 3})}, [](Inputs in) { return stack({in[0]}, 2); }},
    // split, chunk: views; pieces left out get zero gradients
    {"split",
     {leaf({3, 5})},
     [](Inputs in) {
       const std::vector<Tensor> pieces = split(in[0], 2, 1);  // widths 2, 2, 1
       return cat({pieces[2], pieces[0]}, 1);
     }},
    {"split_one_piece", {leaf({5, 2})}, [](Inputs in) { return split(in[0], 3, 0)[1]; }},
    {"chunk",
     {transposed_leaf({5, 2})},
     [](Inputs in) {
       const std::vector<Tensor> pieces = chunk(in[0], 3, 0);  // heights 2, 2, 1
       return cat({pieces[1], pieces[2]}, 0);
     }},
    // flatten: a view when the strides allow, a copy otherwise
    {"flatten", {leaf({2, 3, 4})}, [](Inputs in) { return flatten(in[0], 1); }},
    {"flatten_middle", {leaf({2, 3, 2, 2})}, [](Inputs in) { return flatten(in[0], 1, 2); }},
    {"flatten_transposed_copies",
     {transposed_leaf({2, 3, 4})},
     [](Inputs in) { return flatten(in[0]); }},
    {"flatten_0d", {leaf({})}, [](Inputs in) { return flatten(in[0]); }},
    // tril, triu
    {"tril", {leaf({4, 4})}, [](Inputs in) { return tril(in[0]); }},
    {"tril_above_batched", {leaf({2, 3, 4})}, [](Inputs in) { return tril(in[0], 1); }},
    {"tril_below_transposed", {transposed_leaf({4, 3})}, [](Inputs in) { return tril(in[0], -1); }},
    {"tril_keeps_everything", {leaf({3, 4})}, [](Inputs in) { return tril(in[0], 5); }},
    {"triu", {leaf({4, 4})}, [](Inputs in) { return triu(in[0]); }},
    {"triu_below_batched", {leaf({2, 4, 3})}, [](Inputs in) { return triu(in[0], -1); }},
    {"triu_above_strided", {strided_leaf({3, 4})}, [](Inputs in) { return triu(in[0], 2); }},
    // dropout: the generator is re-seeded on every call, so the mask is the same each time
    {"dropout",
     {leaf({4, 5})},
     [](Inputs in) {
       Generator generator(42);
       return dropout(in[0], 0.3, /*train=*/true, &generator);
     }},
    {"dropout_transposed",
     {transposed_leaf({2, 3, 4})},
     [](Inputs in) {
       Generator generator(43);
       return dropout(in[0], 0.5, /*train=*/true, &generator);
     }},
    {"dropout_eval_returns_input",
     {leaf({3, 4})},
     [](Inputs in) { return dropout(in[0], 0.5, /*train=*/false); }},
    {"dropout_p0_returns_input", {leaf({3, 4})}, [](Inputs in) { return dropout(in[0], 0.0); }},
    // views
    {"view",
     {leaf({2, 3, 4})},
     [](Inputs in) {
       return in[0].view({6, 4});
     }},
    {"reshape_view",
     {leaf({2, 3, 4})},
     [](Inputs in) {
       return in[0].reshape({4, -1});
     }},
    {"reshape_copies", {transposed_leaf({3, 4})}, [](Inputs in) { return in[0].reshape({12}); }},
    {"reshape_to_0d", {leaf({1, 1})}, [](Inputs in) { return in[0].reshape({}); }},
    {"transpose", {leaf({2, 3, 4})}, [](Inputs in) { return in[0].transpose(0, 2); }},
    {"transpose_negative_dims",
     {leaf({2, 3, 4})},
     [](Inputs in) { return in[0].transpose(-1, -3); }},
    {"t", {strided_leaf({3, 4})}, [](Inputs in) { return in[0].t(); }},
    {"t_1d_is_itself", {leaf({3})}, [](Inputs in) { return in[0].t(); }},
    {"permute",
     {leaf({2, 3, 4})},
     [](Inputs in) {
       return in[0].permute({2, 0, 1});
     }},
    {"permute_negative_dims",
     {leaf({2, 3, 4})},
     [](Inputs in) {
       return in[0].permute({-1, 0, -2});
     }},
    {"slice_step", {leaf({3, 7})}, [](Inputs in) { return in[0].slice(1, 1, 7, 2); }},
    {"slice_negative_bounds", {leaf({5, 3})}, [](Inputs in) { return in[0].slice(0, -4, -1); }},
    {"slice_negative_dim", {leaf({3, 5})}, [](Inputs in) { return in[0].slice(-1, 2, 9); }},
    {"narrow", {transposed_leaf({3, 5})}, [](Inputs in) { return in[0].narrow(1, 1, 3); }},
    {"select", {leaf({3, 4})}, [](Inputs in) { return in[0].select(0, 1); }},
    {"select_negative_dim", {leaf({2, 3, 4})}, [](Inputs in) { return in[0].select(-1, 2); }},
    {"select_negative_index", {leaf({3, 4})}, [](Inputs in) { return in[0].select(0, -1); }},
    {"expand",
     {leaf({3, 1})},
     [](Inputs in) {
       return in[0].expand({2, 3, 4});
     }},
    {"expand_keep_sizes",
     {leaf({1, 4})},
     [](Inputs in) {
       return in[0].expand({3, -1});
     }},
    {"expand_0d",
     {leaf({})},
     [](Inputs in) {
       return in[0].expand({2, 3});
     }},
    {"squeeze", {leaf({1, 3, 1, 2})}, [](Inputs in) { return in[0].squeeze(); }},
    {"squeeze_dim", {leaf({3, 1, 2})}, [](Inputs in) { return in[0].squeeze(1); }},
    {"unsqueeze", {leaf({3, 2})}, [](Inputs in) { return in[0].unsqueeze(0); }},
    {"unsqueeze_neg1", {strided_leaf({3, 2})}, [](Inputs in) { return in[0].unsqueeze(-1); }},
    {"chain_of_views",
     {transposed_leaf({4, 5})},
     [](Inputs in) {
       return in[0].slice(0, 1, 4).t().unsqueeze(0).expand({2, 5, 3}).select(2, 1);
     }},
    // copies
    {"clone", {transposed_leaf({3, 4})}, [](Inputs in) { return in[0].clone(); }},
    {"contiguous", {transposed_leaf({3, 4})}, [](Inputs in) { return in[0].contiguous(); }},
    {"contiguous_is_itself", {leaf({3, 4})}, [](Inputs in) { return in[0].contiguous(); }},
    {"to_float32_and_back",
     {dyadic_leaf({3, 4})},
     [](Inputs in) { return in[0].to(DType::Float32).to(DType::Float64); },
     kFloat32RoundTrip},
    {"to_same_dtype_is_itself", {leaf({3, 4})}, [](Inputs in) { return in[0].to(DType::Float64); }},
};

class ShapeGradcheck : public ::testing::TestWithParam<GradcheckCase> {};

TEST_P(ShapeGradcheck, MatchesFiniteDifferences) {
  expect_gradcheck(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Shape, ShapeGradcheck, ::testing::ValuesIn(kCases), CaseName());

}  // namespace

const std::vector<GradcheckCase>& shape_gradcheck_cases() {
  return kCases;
}

}  // namespace grove::autograd::testing
