// sgd_ and adamw_ over lists of parameters on the CPU (Note [One update over many parameters]
// in ops/optim.h): bit for bit one call per parameter, and the checks of the lists.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/attributes.h"
#include "ops/dispatch.h"
#include "ops/op_table.h"
#include "tests/ops/optim_lists_cases.h"

namespace grove::ops::testing {
namespace {

using List = std::vector<Tensor>;

TEST(OptimLists, OneCallEqualsOneCallPerParameterBitForBit) {
  expect_lists_equal_one_call_per_parameter(kCPU, 7);
}

TEST(OptimLists, RefusesBadListsNamingTheTensorAndItsParameter) {
  const std::vector<Tensor> params = {zeros({4}), zeros({2, 3})};
  const std::vector<Tensor> grads = {zeros({4}), zeros({2, 3})};
  const Tensor lr = full({}, 0.1);
  const SgdHyperparameters momentum{0.1, 0.9};
  EXPECT_THAT(error_of([&] { sgd_(params, List{grads[0]}, List{}, lr, {}); }),
              ::testing::HasSubstr("sgd_: expected one gradient for each of the 2 parameters, "
                                   "but got 1"));
  EXPECT_THAT(error_of([&] { sgd_(List{}, List{}, List{}, lr, {}); }),
              ::testing::HasSubstr("expected at least one parameter"));
  EXPECT_THAT(error_of([&] { sgd_(params, grads, List{}, lr, momentum); }),
              ::testing::HasSubstr("expected one velocity for each of the 2 parameters"));
  EXPECT_THAT(error_of([&] { sgd_(params, grads, grads, lr, {}); }),
              ::testing::HasSubstr("velocities are for momentum != 0"));
  EXPECT_THAT(error_of([&] {
                sgd_(params, List{grads[0], zeros({3, 2})}, List{}, lr, {});
              }),
              ::testing::HasSubstr("expected grad 1 to have the parameter's sizes [2, 3], but "
                                   "got [3, 2]"));
  EXPECT_THAT(error_of([&] {
                sgd_(List{params[0], zeros({2, 3}, TensorOptions(DType::Float64))},
                     List{grads[0], zeros({2, 3}, TensorOptions(DType::Float64))}, List{}, lr, {});
              }),
              ::testing::HasSubstr("expected param 1 to have param 0's dtype float32, but got "
                                   "float64 (one call updates parameters of one dtype)"));
  // Memory shared across parameters is found too, and named by tensor and parameter.
  const Tensor buffer = zeros({10});
  EXPECT_THAT(error_of([&] {
                sgd_(List{buffer.slice(0, 0, 4), params[1]},
                     List{grads[0], buffer.slice(0, 3, 9).view({2, 3})}, List{}, lr, {});
              }),
              ::testing::HasSubstr("param 0 and grad 1 share memory"));
  EXPECT_THAT(error_of([&] {
                adamw_(params, grads, List{zeros({4}), zeros({2, 3})},
                       List{params[0], zeros({2, 3})}, ones({}), lr, {});
              }),
              ::testing::HasSubstr("param 0 and exp_avg_sq 0 share memory"));
  // Halves of one buffer may serve as two parameters.
  EXPECT_EQ(error_of([&] {
              sgd_(List{buffer.slice(0, 0, 4), buffer.slice(0, 4, 10).view({2, 3})}, grads, List{},
                   lr, {});
            }),
            "");
  // The second parameter is checked as dispatch checks the first.
  EXPECT_THAT(error_of([&] {
                sgd_(List{params[0], zeros({1, 3}).expand({2, 3})}, grads, List{}, lr, {});
              }),
              ::testing::HasSubstr("cannot write in place into a broadcast (expanded) view: "
                                   "input 1, dimension 0 has stride 0"));
  // A count the lists do not have, through dispatch itself.
  SgdAttributes bad;
  bad.params = 0;
  EXPECT_THAT(error_of([&] {
                dispatch(op_entry(OpKind::SgdStep), {params[0], grads[0]}, bad.to_attributes());
              }),
              ::testing::HasSubstr("expected params (the number of parameters the call updates) "
                                   "in [1, "));
  bad.params = 3;
  EXPECT_THAT(error_of([&] {
                dispatch(op_entry(OpKind::SgdStep), {params[0], params[1], grads[0], grads[1]},
                         bad.to_attributes());
              }),
              ::testing::HasSubstr("expected 6 tensor inputs, but got 4"));
  EXPECT_EQ(in_place_writes(OpKind::SgdStep, bad.to_attributes()), 3u);
  EXPECT_EQ(in_place_writes(OpKind::AddInplace, {}), 1u);
}

}  // namespace
}  // namespace grove::ops::testing
