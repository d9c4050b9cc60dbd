// Misuse of the op functions, op by op (second part; the first is ops_misuse_test.cpp): conv and
// pool geometry out of range, reductions over empty tensors and dims that do not exist, shape
// ops (cat, stack, split, chunk, flatten, tril) with bad arguments, and random ops with bad
// sizes, ranges and probabilities.
#include <cstdint>
#include <limits>

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
#include "tests/misuse/misuse_case.h"

namespace grove::misuse {
namespace {

using namespace grove::ops;

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<MisuseCase> conv_and_pool_cases() {
  return {
      {"Conv2dThreeDimWeight",
       [] {
         conv2d(zeros({1, 2, 5, 5}), zeros({3, 2, 3}));
       },
       {"conv2d", "[3, 2, 3]"}},
      {"Conv2dChannelsDiffer",
       [] {
         conv2d(zeros({1, 2, 5, 5}), zeros({3, 4, 3, 3}));
       },
       {"conv2d", "[1, 2, 5, 5]", "[3, 4, 3, 3]"}},
      {"Conv2dKernelLargerThanInput",
       [] {
         conv2d(zeros({1, 1, 2, 2}), zeros({1, 1, 3, 3}));
       },
       {"conv2d"}},
      {"Conv2dZeroStride",
       [] {
         conv2d(zeros({1, 1, 5, 5}), zeros({1, 1, 3, 3}), {}, {0});
       },
       {"conv2d", "stride"}},
      {"Conv2dHugePadding",
       [] {
         conv2d(zeros({1, 1, 5, 5}), zeros({1, 1, 3, 3}), {}, {1}, {kMax / 2});
       },
       {"conv2d", "padding"}},
      {"Conv2dGroupsDoNotDivideChannels",
       [] {
         conv2d(zeros({1, 3, 5, 5}), zeros({2, 1, 3, 3}), {}, {1}, {0}, {1}, 2);
       },
       {"conv2d", "groups"}},
      {"Conv2dBackwardInputSizesWrongLength",
       [] {
         conv2d_backward_input(zeros({1, 1, 3, 3}), zeros({1, 1, 3, 3}), {5, 5});
       },
       {"conv2d_backward_input", "[5, 5]"}},
      {"Conv2dBackwardWeightNegativeSizes",
       [] {
         conv2d_backward_weight(zeros({1, 1, 3, 3}), zeros({1, 1, 5, 5}), {1, 1, -3, 3});
       },
       {"conv2d_backward_weight", "-3"}},
      {"MaxPoolZeroKernel",
       [] {
         max_pool2d(zeros({1, 1, 4, 4}), {0});
       },
       {"max_pool2d", "kernel"}},
      {"MaxPoolPaddingThatWouldOverflow",
       [] {
         max_pool2d(zeros({1, 1, 4, 4}), {kMax}, {1}, {kMax / 2});
       },
       {"max_pool2d", "padding", "int64"}},
      {"MaxPoolPaddingWhoseDoubleOverflows",
       [] {
         max_pool2d(zeros({1, 1, 4, 4}), {4}, {1}, {kMax / 2 + 1});
       },
       {"max_pool2d", "padding"}},
      {"Conv2dHugeDilation",
       [] {
         conv2d(zeros({1, 1, 5, 5}), zeros({1, 1, 3, 3}), {}, {1}, {0}, {kMax / 2 + 1});
       },
       {"conv2d", "dilation", "int64"}},
      {"MaxPoolNegativeStride",
       [] {
         max_pool2d(zeros({1, 1, 4, 4}), {2}, {-1});
       },
       {"max_pool2d", "stride"}},
      {"MaxPoolPaddingOverHalfTheKernel",
       [] {
         max_pool2d(zeros({1, 1, 4, 4}), {2}, {2}, {2});
       },
       {"max_pool2d", "padding"}},
      {"MaxPoolKernelOfThreeValues",
       [] {
         max_pool2d(zeros({1, 1, 4, 4}), {2, 2, 2});
       },
       {"max_pool2d", "kernel"}},
      {"MaxPoolTwoDimInput",
       [] {
         max_pool2d(zeros({4, 4}), {2});
       },
       {"max_pool2d", "[4, 4]"}},
      {"AvgPoolKernelLargerThanInput",
       [] {
         avg_pool2d(zeros({1, 1, 2, 2}), {3});
       },
       {"avg_pool2d"}},
      {"AvgPoolBackwardGradOfTheWrongShape",
       [] {
         avg_pool2d_backward(zeros({1, 1, 3, 3}), {1, 1, 4, 4}, {2});
       },
       {"avg_pool2d_backward", "[1, 1, 3, 3]"}},
  };
}

std::vector<MisuseCase> reduce_and_shape_cases() {
  return {
      {"MaxOfAnEmptyTensor", [] { max(zeros({0})); }, {"max", "[0]"}},
      {"MaxAlongAnEmptyDim",
       [] {
         max(zeros({2, 0}), 1);
       },
       {"max", "[2, 0]"}},
      {"ArgmaxOfAnEmptyTensor",
       [] {
         argmax(zeros({3, 0}));
       },
       {"argmax", "[3, 0]"}},
      {"ArgmaxAlongAnEmptyDim",
       [] {
         argmax(zeros({0, 3}), 0);
       },
       {"argmax", "[0, 3]"}},
      {"SumDimOutOfRange",
       [] {
         sum(zeros({2, 3}), {2});
       },
       {"sum", "2"}},
      {"SumRepeatedDim",
       [] {
         sum(zeros({2, 3}), {1, -1});
       },
       {"sum"}},
      {"MeanOfIntegers", [] { mean(zeros({2}, DType::Int64)); }, {"mean", "int64"}},
      {"VarDimOutOfRange",
       [] {
         var(zeros({2, 3}), {kMin});
       },
       {"var"}},
      {"MaxDimOutOfRange",
       [] {
         max(zeros({2, 3}), 5);
       },
       {"max", "5"}},
      {"CatDimOutOfRange",
       [] {
         cat({zeros({2}), zeros({2})}, 1);
       },
       {"cat", "1"}},
      {"CatOfNothing",
       [] { cat(std::span<const Tensor>()); },
       {"cat", "expected at least one tensor"}},
      {"CatSizesDiffer",
       [] {
         cat({zeros({2, 3}), zeros({2, 4})}, 0);
       },
       {"cat", "[2, 3]", "[2, 4]"}},
      {"CatOfZeroDimTensors",
       [] {
         cat({zeros({}), zeros({})});
       },
       {"cat", "0-d"}},
      {"StackOfNothing", [] { stack(std::span<const Tensor>()); }, {"stack", "at least one"}},
      {"StackShapesDiffer",
       [] {
         stack({zeros({2}), zeros({3})});
       },
       {"stack", "[2]", "[3]"}},
      {"StackDimOutOfRange",
       [] {
         stack({zeros({2}), zeros({2})}, 3);
       },
       {"stack", "3"}},
      {"SplitNegativeSize", [] { split(zeros({4}), -1); }, {"split", "-1"}},
      {"SplitZeroSize", [] { split(zeros({4}), 0); }, {"split", "0"}},
      {"SplitOfZeroDim", [] { split(zeros({}), 1); }, {"split", "0-d"}},
      {"ChunkZeroChunks", [] { chunk(zeros({4}), 0); }, {"chunk", "0"}},
      {"ChunkNegativeChunks", [] { chunk(zeros({4}), kMin); }, {"chunk"}},
      {"FlattenStartAfterEnd",
       [] {
         flatten(zeros({2, 3, 4}), 2, 1);
       },
       {"flatten", "2", "1"}},
      {"FlattenDimOutOfRange",
       [] {
         flatten(zeros({2, 3}), 0, 2);
       },
       {"flatten", "2"}},
      {"TrilOfOneDim", [] { tril(zeros({3})); }, {"tril", "[3]"}},
      {"TriuOfZeroDim", [] { triu(zeros({})); }, {"triu"}},
  };
}

std::vector<MisuseCase> random_cases() {
  return {
      {"RandNegativeSize",
       [] {
         rand({2, -1});
       },
       {"rand", "[2, -1]"}},
      {"RandnOverflowingSizes",
       [] {
         randn({kMax, 2});
       },
       {"randn", "more elements"}},
      {"RandOfIntegers", [] { rand({2}, DType::Int64); }, {"rand", "int64"}},
      {"RandintLowNotBelowHigh", [] { randint(5, 5, {2}); }, {"randint", "5"}},
      {"RandintNegativeSize", [] { randint(kMin, kMax, {-2}); }, {"randint", "[-2]"}},
      {"RandintHugeSizes",
       [] {
         randint(0, 5, {kMax, kMax});
       },
       {"randint", "more elements"}},
      {"DropoutProbabilityAboveOne", [] { dropout(zeros({4}), 1.5); }, {"dropout", "1.5"}},
      {"DropoutNegativeProbability", [] { dropout(zeros({4}), -0.1); }, {"dropout", "-0.1"}},
      {"DropoutNaNProbability", [] { dropout(zeros({4}), kNaN); }, {"dropout", "nan"}},
      {"DropoutOfIntegers", [] { dropout(zeros({4}, DType::Int64), 0.5); }, {"dropout", "int64"}},
  };
}

std::vector<MisuseCase> all_shape_op_cases() {
  std::vector<MisuseCase> cases = conv_and_pool_cases();
  append(cases, reduce_and_shape_cases());
  append(cases, random_cases());
  return cases;
}

GROVE_MISUSE_SUITE(ShapeOps, all_shape_op_cases)

// chunk() into more chunks than elements: one chunk per element, no overflow of the size
// arithmetic (ceil(size / chunks) was computed as (size + chunks - 1) / chunks).
TEST(OpsMisuse, ChunkIntoAHugeNumberOfChunksGivesOnePerElement) {
  const std::vector<Tensor> pieces = chunk(arange(4), kMax);
  ASSERT_EQ(pieces.size(), 4u);
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    EXPECT_EQ(pieces[i].to_vector<float>(), std::vector<float>{static_cast<float>(i)});
  }
}

}  // namespace
}  // namespace grove::misuse
