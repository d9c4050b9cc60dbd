// Misuse of the op functions, op by op (first part; ops_shape_misuse_test.cpp has the rest):
// matmul, linear and bmm shapes that do not fit, losses with targets out of range (negative and
// too large), softmax and layer_norm dims and shapes, and every other op that takes indices. Dtype
// and arity misuse of every op is driven over the op table in op_table_misuse_test.cpp; these are
// the rules specific to each op.
#include <cstdint>
#include <limits>

#include "ops/collective.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/layer_norm.h"
#include "ops/linalg.h"
#include "ops/pool.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/softmax.h"
#include "tests/ops/loopback_collectives.h"
#include "tests/misuse/misuse_case.h"

namespace grove::misuse {
namespace {

using namespace grove::ops;
using test_engines::loopback_group;

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor targets(std::vector<std::int64_t> values) {
  return from_vector(values);
}

std::vector<MisuseCase> linalg_cases() {
  return {
      {"MatmulInnerSizesDiffer",
       [] {
         matmul(zeros({2, 3}), zeros({4, 5}));
       },
       {"matmul", "[2, 3]", "[4, 5]"}},
      {"MatmulOfAZeroDimTensor", [] { matmul(zeros({}), zeros({3})); }, {"matmul"}},
      {"MatmulBatchSizesDoNotBroadcast",
       [] {
         matmul(zeros({2, 2, 3}), zeros({3, 3, 4}));
       },
       {"matmul", "[2, 2, 3]", "[3, 3, 4]"}},
      {"BmmOfTwoDimTensors",
       [] {
         bmm(zeros({2, 3}), zeros({3, 4}));
       },
       {"bmm", "[2, 3]"}},
      {"BmmBatchesDiffer",
       [] {
         bmm(zeros({2, 2, 3}), zeros({3, 3, 4}));
       },
       {"bmm", "[2, 2, 3]", "[3, 3, 4]"}},
      {"BmmInnerSizesDiffer",
       [] {
         bmm(zeros({2, 2, 3}), zeros({2, 4, 4}));
       },
       {"bmm"}},
      {"LinearWeightInFeaturesDiffer",
       [] {
         linear(zeros({2, 3}), zeros({4, 5}));
       },
       {"linear", "[2, 3]", "[4, 5]"}},
      {"LinearBiasOfTheWrongSize",
       [] {
         linear(zeros({2, 3}), zeros({4, 3}), zeros({3}));
       },
       {"linear", "[3]"}},
      {"LinearOneDimWeight",
       [] {
         linear(zeros({2, 3}), zeros({3}));
       },
       {"linear", "[3]"}},
      {"MatmulIntegerOperands",
       [] {
         matmul(zeros({2, 2}, DType::Int64), zeros({2, 2}, DType::Int64));
       },
       {"matmul", "int64"}},
  };
}

std::vector<MisuseCase> loss_cases() {
  return {
      {"CrossEntropyTargetTooLarge",
       [] {
         cross_entropy(zeros({2, 3}), targets({0, 3}));
       },
       {"cross_entropy", "3"}},
      {"CrossEntropyNegativeTarget",
       [] {
         cross_entropy(zeros({2, 3}), targets({-1, 0}));
       },
       {"cross_entropy", "-1"}},
      {"CrossEntropyInt64MinTarget",
       [] {
         cross_entropy(zeros({2, 3}), targets({0, kMin}));
       },
       {"cross_entropy"}},
      {"CrossEntropyTargetCountDiffers",
       [] {
         cross_entropy(zeros({2, 3}), targets({0}));
       },
       {"cross_entropy", "[2, 3]", "[1]"}},
      {"CrossEntropyFloatTargets",
       [] {
         cross_entropy(zeros({2, 3}), zeros({2}));
       },
       {"cross_entropy", "int64"}},
      {"CrossEntropyOneDimLogits",
       [] { cross_entropy(zeros({3}), targets({0})); },
       {"cross_entropy", "[3]"}},
      {"CrossEntropyNoClasses",
       [] {
         cross_entropy(zeros({2, 0}), targets({0, 0}));
       },
       {"cross_entropy", "[2, 0]"}},
      {"NllLossTargetTooLarge",
       [] {
         nll_loss(zeros({2, 3}), targets({5, 0}));
       },
       {"nll_loss", "5"}},
      {"NllLossNegativeTarget",
       [] {
         nll_loss(zeros({2, 3}), targets({0, -7}));
       },
       {"nll_loss", "-7"}},
      {"NllLossTwoDimTargets",
       [] {
         nll_loss(zeros({2, 3}), zeros({2, 1}, DType::Int64));
       },
       {"nll_loss", "[2, 1]"}},
      {"CrossEntropyBackwardGradNotZeroDim",
       [] {
         cross_entropy_backward(zeros({2}), zeros({2, 3}), targets({0, 1}), zeros({2}));
       },
       {"cross_entropy_backward", "[2]"}},
      {"NllLossBackwardTargetOutOfRange",
       [] {
         nll_loss_backward(ones({}), zeros({2, 3}), targets({0, 9}));
       },
       {"nll_loss_backward", "9"}},
  };
}

std::vector<MisuseCase> softmax_and_norm_cases() {
  return {
      {"SoftmaxDimOutOfRange",
       [] {
         softmax(zeros({2, 3}), 2);
       },
       {"softmax", "2"}},
      {"SoftmaxInt64MinDim",
       [] {
         softmax(zeros({2, 3}), kMin);
       },
       {"softmax"}},
      {"LogSoftmaxDimOutOfRange",
       [] {
         log_softmax(zeros({2, 3}), -3);
       },
       {"log_softmax", "-3"}},
      {"SoftmaxOfIntegers", [] { softmax(zeros({2}, DType::Int64), 0); }, {"softmax", "int64"}},
      {"LayerNormShapeDoesNotEndTheInput",
       [] {
         layer_norm(zeros({2, 3}), {2});
       },
       {"layer_norm", "[2]", "[2, 3]"}},
      {"LayerNormShapeLongerThanInput",
       [] {
         layer_norm(zeros({3}), {2, 3});
       },
       {"layer_norm", "[2, 3]"}},
      {"LayerNormWeightOfTheWrongShape",
       [] {
         layer_norm(zeros({2, 3}), {3}, zeros({2}));
       },
       {"layer_norm", "weight", "[2]"}},
      {"LayerNormBiasOfTheWrongShape",
       [] {
         layer_norm(zeros({2, 3}), {3}, zeros({3}), zeros({4}));
       },
       {"layer_norm", "bias", "[4]"}},
      {"LayerNormNegativeEps",
       [] {
         layer_norm(zeros({2, 3}), {3}, {}, {}, -1.0);
       },
       {"layer_norm", "eps", "-1"}},
      {"LayerNormNaNEps",
       [] {
         layer_norm(zeros({2, 3}), {3}, {}, {}, kNaN);
       },
       {"layer_norm", "eps", "nan"}},
      {"LayerNormEmptyShape",
       [] {
         layer_norm(zeros({2, 3}), {});
       },
       {"layer_norm"}},
      {"LayerNormBackwardStatsOfTheWrongShape",
       [] {
         layer_norm_backward(zeros({2, 3}), zeros({2, 3}), zeros({3, 1}), zeros({2, 1}), {3});
       },
       {"layer_norm_backward", "mean", "[3, 1]"}},
  };
}

std::vector<MisuseCase> index_cases() {
  return {
      {"EmbeddingIndexInt64Max",
       [] {
         embedding(zeros({4, 2}), targets({kMax}));
       },
       {"embedding", "9223372036854775807"}},
      {"EmbeddingOfAnEmptyTable",
       [] {
         embedding(zeros({0, 2}), targets({0}));
       },
       {"embedding", "0"}},
      {"EmbeddingBackwardIndexOutOfRange",
       [] {
         embedding_backward(zeros({2, 3}), targets({1, 5}), 5);
       },
       {"embedding_backward", "5"}},
      {"EmbeddingBackwardNegativeIndex",
       [] {
         embedding_backward(zeros({2, 3}), targets({-1, 0}), 5);
       },
       {"embedding_backward", "-1"}},
      {"EmbeddingBackwardNegativeRows",
       [] {
         embedding_backward(zeros({1, 3}), targets({0}), -2);
       },
       {"embedding_backward", "-2"}},
      {"OneHotNegativeIndex",
       [] {
         one_hot(targets({0, -1}), 3);
       },
       {"one_hot", "-1"}},
      {"OneHotIndexTooLarge",
       [] {
         one_hot(targets({0, 3}), 3);
       },
       {"one_hot", "3"}},
      {"OneHotNegativeClasses", [] { one_hot(targets({0}), -4); }, {"one_hot", "-4"}},
      {"OneHotOfFloats", [] { one_hot(zeros({2}), 3); }, {"one_hot", "float32"}},
      {"MaxPoolBackwardIndexOutOfRange",
       [] {
         max_pool2d_backward(zeros({1, 1, 1, 1}), full({1, 1, 1, 1}, 7, DType::Int64),
                             {1, 1, 2, 2});
       },
       {"max_pool2d_backward", "7"}},
      {"MaxPoolBackwardNegativeIndex",
       [] {
         max_pool2d_backward(zeros({1, 1, 1, 1}), full({1, 1, 1, 1}, -1, DType::Int64),
                             {1, 1, 2, 2});
       },
       {"max_pool2d_backward", "-1"}},
  };
}

// Collectives, on a one-process loopback group (tests/ops/loopback_collectives.h).
std::vector<MisuseCase> collective_cases() {
  return {
      {"AllReduceWithoutAProcessGroup",
       [] { all_reduce_(zeros({2}), ReduceOp::kSum, loopback_group() + 1000); },
       {"all_reduce_", "no process group", "init_process_group"}},
      {"BroadcastRootOutsideTheGroup",
       [] { broadcast_(zeros({2}), 3, loopback_group()); },
       {"broadcast_", "root", "3"}},
      {"BroadcastNegativeRoot",
       [] { broadcast_(zeros({2}), -1, loopback_group()); },
       {"broadcast_", "root", "-1"}},
      {"AllReduceNonContiguous",
       [] {
         all_reduce_(zeros({3, 2}).t(), ReduceOp::kSum, loopback_group());
       },
       {"all_reduce_", "contiguous"}},
      {"AllReduceMeanOfIntegers",
       [] { all_reduce_(zeros({2}, DType::Int64), ReduceOp::kMean, loopback_group()); },
       {"all_reduce_", "mean", "int64"}},
      {"AllGatherNonContiguous",
       [] {
         all_gather(zeros({3, 2}).t(), loopback_group());
       },
       {"all_gather", "contiguous"}},
  };
}

std::vector<MisuseCase> all_op_cases() {
  std::vector<MisuseCase> cases = linalg_cases();
  append(cases, loss_cases());
  append(cases, softmax_and_norm_cases());
  append(cases, index_cases());
  append(cases, collective_cases());
  return cases;
}

GROVE_MISUSE_SUITE(Ops, all_op_cases)

}  // namespace
}  // namespace grove::misuse
