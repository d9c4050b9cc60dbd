// Gradcheck of the reductions (ops/reduce.h): sum, mean, var and max over every dim, one dim,
// several dims, negative dims, with and without keepdim, on contiguous and non-contiguous
// leaves. max's ties cannot be checked by central differences (its one-sided derivatives differ
// there), so two tests give the expected gradient of a tie explicitly.
// Adding a case is one table entry. See tests/autograd/gradcheck_cases.h.
#include "gradcheck_cases.h"
#include "ops/reduce.h"

namespace grove::autograd::testing {
namespace {

using namespace grove::ops;

const std::vector<GradcheckCase> kCases = {
    // sum
    {"sum_all", {leaf({2, 3, 4})}, [](Inputs in) { return sum(in[0]); }},
    {"sum_dim0", {leaf({2, 3, 4})}, [](Inputs in) { return sum(in[0], {0}); }},
    {"sum_dim_neg1_keepdim",
     {leaf({2, 3, 4})},
     [](Inputs in) { return sum(in[0], {-1}, /*keepdim=*/true); }},
    {"sum_dims_0_2",
     {leaf({2, 3, 4})},
     [](Inputs in) {
       return sum(in[0], {0, 2});
     }},
    {"sum_dims_neg_unsorted_keepdim",
     {leaf({2, 3, 4})},
     [](Inputs in) {
       return sum(in[0], {-1, 0}, /*keepdim=*/true);
     }},
    {"sum_every_dim_listed",
     {leaf({2, 3})},
     [](Inputs in) {
       return sum(in[0], {0, 1});
     }},
    {"sum_empty_dims_keepdim",
     {leaf({2, 3})},  // {} means every dim
     [](Inputs in) { return sum(in[0], {}, /*keepdim=*/true); }},
    {"sum_size_1_dim", {leaf({3, 1})}, [](Inputs in) { return sum(in[0], {1}); }},
    {"sum_transposed", {transposed_leaf({3, 4})}, [](Inputs in) { return sum(in[0], {1}); }},
    // mean
    {"mean_all", {leaf({2, 3, 4})}, [](Inputs in) { return mean(in[0]); }},
    {"mean_dim1", {leaf({2, 3, 4})}, [](Inputs in) { return mean(in[0], {1}); }},
    {"mean_dim_neg2_keepdim",
     {leaf({2, 3, 4})},
     [](Inputs in) { return mean(in[0], {-2}, /*keepdim=*/true); }},
    {"mean_dims_neg_keepdim",
     {leaf({2, 3, 4})},
     [](Inputs in) {
       return mean(in[0], {-1, -3}, /*keepdim=*/true);
     }},
    {"mean_empty_dims", {leaf({3, 4})}, [](Inputs in) { return mean(in[0], {}); }},
    {"mean_empty_dims_keepdim",
     {leaf({2, 3})},
     [](Inputs in) { return mean(in[0], {}, /*keepdim=*/true); }},
    {"mean_strided", {strided_leaf({3, 4})}, [](Inputs in) { return mean(in[0], {0}); }},
    // var (unbiased and biased)
    {"var_all", {leaf({3, 4})}, [](Inputs in) { return var(in[0]); }},
    {"var_all_biased",
     {leaf({3, 4})},
     [](Inputs in) { return var(in[0], {}, /*unbiased=*/false); }},
    {"var_dim0", {leaf({3, 4})}, [](Inputs in) { return var(in[0], {0}); }},
    {"var_dim_neg1_biased_keepdim",
     {leaf({2, 3, 4})},
     [](Inputs in) { return var(in[0], {-1}, /*unbiased=*/false, /*keepdim=*/true); }},
    {"var_dims_0_2",
     {leaf({2, 3, 4})},
     [](Inputs in) {
       return var(in[0], {0, 2});
     }},
    {"var_dims_neg_keepdim",
     {leaf({2, 3, 4})},
     [](Inputs in) {
       return var(in[0], {2, -3}, /*unbiased=*/true, /*keepdim=*/true);
     }},
    {"var_empty_dims_keepdim",
     {leaf({2, 3})},
     [](Inputs in) { return var(in[0], {}, /*unbiased=*/true, /*keepdim=*/true); }},
    {"var_transposed", {transposed_leaf({3, 4})}, [](Inputs in) { return var(in[0], {1}); }},
    // max (random values: no ties within a row)
    {"max_all", {leaf({3, 4})}, [](Inputs in) { return max(in[0]); }},
    {"max_dim1", {leaf({2, 3, 4})}, [](Inputs in) { return max(in[0], 1).values; }},
    {"max_dim_neg1_keepdim",
     {leaf({2, 3, 4})},
     [](Inputs in) { return max(in[0], -1, /*keepdim=*/true).values; }},
    {"max_dim0_transposed",
     {transposed_leaf({3, 4})},
     [](Inputs in) { return max(in[0], 0).values; }},
    {"max_size_1_dim", {leaf({3, 1})}, [](Inputs in) { return max(in[0], -1).values; }},
    // 0-d inputs: reductions accept dim 0 and -1 for them, and are the identity
    {"sum_0d_dim0", {leaf({})}, [](Inputs in) { return sum(in[0], {0}); }},
    {"mean_0d_dim_neg1_keepdim",
     {leaf({})},
     [](Inputs in) { return mean(in[0], {-1}, /*keepdim=*/true); }},
    {"var_0d_biased",
     {leaf({})},  // always 0
     [](Inputs in) { return var(in[0], {0}, /*unbiased=*/false); }},
    {"max_0d_dim0", {leaf({})}, [](Inputs in) { return max(in[0], 0).values; }},
    {"max_0d_all", {leaf({})}, [](Inputs in) { return max(in[0]); }},
};

class ReduceGradcheck : public ::testing::TestWithParam<GradcheckCase> {};

TEST_P(ReduceGradcheck, MatchesFiniteDifferences) {
  expect_gradcheck(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Reduce, ReduceGradcheck, ::testing::ValuesIn(kCases), CaseName());

// max along a dim with ties: the whole gradient goes to the position the index output names
// (the first of the tied elements).
TEST(ReduceTies, MaxAlongDimSendsTheGradientToTheIndexedElement) {
  // rows: ties at positions 1 and 3; all equal; tie at 0 and 2
  const Tensor x = from_vector<double>({0.0, 2.0, 1.0, 2.0,  //
                                        5.0, 5.0, 5.0, 5.0,  //
                                        3.0, -1.0, 3.0, 0.0},
                                       {3, 4})
                       .requires_grad_();
  const MaxResult result = max(x, 1);
  EXPECT_EQ(result.indices.to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 0, 0}));
  result.values.backward(from_vector<double>({10.0, 20.0, 30.0}));
  const std::vector<double> expected = {0.0,  10.0, 0.0, 0.0,  //
                                        20.0, 0.0,  0.0, 0.0,  //
                                        30.0, 0.0,  0.0, 0.0};
  EXPECT_EQ(x.grad().to_vector<double>(), expected);
}

// max over every element with ties: the gradient is shared evenly among the maxima.
TEST(ReduceTies, MaxOfEveryElementSharesTheGradientAmongTies) {
  const Tensor x = from_vector<double>({1.0, 4.0, -2.0, 4.0, 0.0, 4.0}, {2, 3}).requires_grad_();
  max(x).backward(full({}, 3.0, TensorOptions(DType::Float64)));
  const std::vector<double> expected = {0.0, 1.0, 0.0, 1.0, 0.0, 1.0};
  EXPECT_EQ(x.grad().to_vector<double>(), expected);
}

}  // namespace

const std::vector<GradcheckCase>& reduce_gradcheck_cases() {
  return kCases;
}

}  // namespace grove::autograd::testing
