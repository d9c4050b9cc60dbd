// Tests of Tensor itself: factories and the dtypes they give, metadata (sizes, strides, numel,
// contiguity), host reads (item, to_vector), copies (clone, contiguous, copy_ with broadcasting,
// dtype conversion and overlapping operands, to), fill_, version counters, detach and
// requires_grad_, printing, and tensors with size-0 dimensions.
//
// Not here: view semantics (view_test.cpp), error messages (errors_test.cpp), storage and
// reference counting (storage_test.cpp).
//
// Every value compared here is exactly representable in the dtype involved (small integers,
// binary fractions), so comparisons are exact; no tolerances are needed.
#include <gtest/gtest.h>

#include <cmath>

#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace grove {
namespace {

using Shape = std::vector<std::int64_t>;

std::string to_text(const Tensor& tensor) {
  std::ostringstream out;
  out << tensor;
  return out.str();
}

// --- factories ---

TEST(TensorFactories, EmptyHasShapeDtypeDeviceAndRowMajorStrides) {
  Tensor x = empty({2, 3, 4});
  EXPECT_EQ(x.dim(), 3);
  EXPECT_EQ(x.sizes().vec(), Shape({2, 3, 4}));
  EXPECT_EQ(x.strides().vec(), Shape({12, 4, 1}));
  EXPECT_EQ(x.numel(), 24);
  EXPECT_EQ(x.nbytes(), 24u * 4u);
  EXPECT_EQ(x.storage_offset(), 0);
  EXPECT_EQ(x.dtype(), DType::Float32);
  EXPECT_EQ(x.device(), kCPU);
  EXPECT_TRUE(x.is_contiguous());
  EXPECT_FALSE(x.requires_grad());
  EXPECT_GE(x.storage()->nbytes(), x.nbytes());
}

TEST(TensorFactories, EmptyHonoursTheDtypeOption) {
  Tensor x = empty({5}, DType::Int32);
  EXPECT_EQ(x.dtype(), DType::Int32);
  EXPECT_EQ(x.nbytes(), 20u);
  Tensor y = empty({5}, TensorOptions().dtype(DType::Float64));
  EXPECT_EQ(y.dtype(), DType::Float64);
  EXPECT_EQ(y.nbytes(), 40u);
}

TEST(TensorFactories, ZerosAndOnesFillEveryElement) {
  EXPECT_EQ(zeros({2, 3}).to_vector<float>(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(zeros({2, 3}).dtype(), DType::Float32);
  Tensor ones_int = ones({4}, DType::Int64);
  EXPECT_EQ(ones_int.dtype(), DType::Int64);
  EXPECT_EQ(ones_int.to_vector<std::int64_t>(), std::vector<std::int64_t>(4, 1));
  EXPECT_EQ(ones({3}, DType::Bool).to_vector<bool>(), std::vector<bool>(3, true));
}

// Scalar.h promises that full() without a dtype takes the scalar's kind: int64 for integers,
// float32 for floating-point values, bool for booleans (as PyTorch's torch.full does).
TEST(TensorFactories, FullWithIntegerScalarGivesInt64) {
  Tensor x = full({3}, 7);
  EXPECT_EQ(x.dtype(), DType::Int64);
  EXPECT_EQ(x.to_vector<std::int64_t>(), std::vector<std::int64_t>(3, 7));
}

TEST(TensorFactories, FullWithFloatingScalarGivesFloat32) {
  Tensor x = full({2, 2}, 2.5);
  EXPECT_EQ(x.dtype(), DType::Float32);
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(4, 2.5f));
}

TEST(TensorFactories, FullWithBoolScalarGivesBool) {
  Tensor x = full({2}, true);
  EXPECT_EQ(x.dtype(), DType::Bool);
  EXPECT_EQ(x.to_vector<bool>(), std::vector<bool>(2, true));
}

// A value the dtype holds exactly converts (a whole 2.0 into int64); one it does not is refused
// (TensorFill.RefusesAValueTheDtypeCannotHold).
TEST(TensorFactories, FullWithExplicitDtypeConvertsTheScalar) {
  Tensor whole = full({2}, 2.0, DType::Int64);
  EXPECT_EQ(whole.dtype(), DType::Int64);
  EXPECT_EQ(whole.to_vector<std::int64_t>(), std::vector<std::int64_t>(2, 2));
  Tensor widened = full({2}, 3, DType::Float64);
  EXPECT_EQ(widened.dtype(), DType::Float64);
  EXPECT_EQ(widened.to_vector<double>(), std::vector<double>(2, 3.0));
  Tensor as_float = full({1}, 4, DType::Float32);
  EXPECT_EQ(as_float.dtype(), DType::Float32);
  EXPECT_EQ(full({2}, 1.0, DType::Bool).to_vector<bool>(), std::vector<bool>(2, true));
}

TEST(TensorFactories, FactoriesHonourRequiresGrad) {
  TensorOptions options = TensorOptions().requires_grad(true);
  EXPECT_TRUE(empty({2}, options).requires_grad());
  EXPECT_TRUE(zeros({2}, options).requires_grad());
  EXPECT_TRUE(ones({2}, options).requires_grad());
  EXPECT_TRUE(full({2}, 1.5, options).requires_grad());
  EXPECT_TRUE(empty_strided({2, 2}, {1, 2}, options).requires_grad());
  EXPECT_FALSE(zeros({2}).requires_grad());
}

TEST(TensorFactories, ArangeWithEndOnlyCountsFromZero) {
  Tensor x = arange(5);
  EXPECT_EQ(x.dtype(), DType::Float32);
  EXPECT_EQ(x.sizes().vec(), Shape({5}));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(2.5).to_vector<float>(), (std::vector<float>{0, 1, 2}));
  Tensor ints = arange(4, DType::Int64);
  EXPECT_EQ(ints.dtype(), DType::Int64);
  EXPECT_EQ(ints.to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 1, 2, 3}));
}

TEST(TensorFactories, ArangeWithStartEndAndStep) {
  EXPECT_EQ(arange(2, 6).to_vector<float>(), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(arange(1, 2, 0.25).to_vector<float>(), (std::vector<float>{1, 1.25, 1.5, 1.75}));
  // The end is exclusive even when the step does not divide the range.
  EXPECT_EQ(arange(0, 10, 4, DType::Int64).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{0, 4, 8}));
}

TEST(TensorFactories, ArangeWithNegativeStepCountsDown) {
  EXPECT_EQ(arange(5, 0, -1.5).to_vector<float>(), (std::vector<float>{5, 3.5, 2, 0.5}));
  EXPECT_EQ(arange(10, 0, -3, DType::Int64).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{10, 7, 4, 1}));
  EXPECT_EQ(arange(-1, -4, -1).to_vector<float>(), (std::vector<float>{-1, -2, -3}));
}

TEST(TensorFactories, ArangeOfAnEmptyRangeHasNoElements) {
  Tensor x = arange(3, 3);
  EXPECT_EQ(x.sizes().vec(), Shape({0}));
  EXPECT_TRUE(x.to_vector<float>().empty());
}

// from_vector for every dtype: the dtype follows the C++ type and the values round-trip.
template <typename T>
std::vector<T> sample_values() {
  if constexpr (std::is_same_v<T, bool>) {
    return {true, false, false, true, true, false};
  } else {
    return {T(1), T(-2), T(3), T(0), T(5), T(-6)};
  }
}

template <typename T>
class TensorFromVector : public ::testing::Test {};
using AllTypes = ::testing::Types<float, double, std::int64_t, std::int32_t, bool>;
TYPED_TEST_SUITE(TensorFromVector, AllTypes);

TYPED_TEST(TensorFromVector, GivesTheMatchingDtypeAndValues) {
  const std::vector<TypeParam> values = sample_values<TypeParam>();
  Tensor x = from_vector(values, {2, 3});
  EXPECT_EQ(x.dtype(), dtype_of<TypeParam>);
  EXPECT_EQ(x.sizes().vec(), Shape({2, 3}));
  EXPECT_TRUE(x.is_contiguous());
  EXPECT_EQ(x.to_vector<TypeParam>(), values);
  // Element (1, 2) is the last value, read through item() of a view.
  EXPECT_EQ(x.select(0, 1).select(0, 2).template item<TypeParam>(), values[5]);
}

TYPED_TEST(TensorFromVector, WithoutSizesIsOneDimensional) {
  const std::vector<TypeParam> values = sample_values<TypeParam>();
  Tensor x = from_vector(values);
  EXPECT_EQ(x.sizes().vec(), Shape({6}));
  EXPECT_EQ(x.to_vector<TypeParam>(), values);
}

TYPED_TEST(TensorFromVector, OfNoValuesIsEmpty) {
  Tensor x = from_vector(std::vector<TypeParam>{});
  EXPECT_EQ(x.dtype(), dtype_of<TypeParam>);
  EXPECT_EQ(x.sizes().vec(), Shape({0}));
  EXPECT_EQ(x.numel(), 0);
  EXPECT_TRUE(x.to_vector<TypeParam>().empty());
}

TEST(TensorFactories, EmptyStridedUsesTheGivenStrides) {
  // Column-major 2x3: element (i, j) lives at storage index i + 2 * j.
  Tensor x = empty_strided({2, 3}, {1, 2});
  EXPECT_EQ(x.sizes().vec(), Shape({2, 3}));
  EXPECT_EQ(x.strides().vec(), Shape({1, 2}));
  EXPECT_FALSE(x.is_contiguous());
  EXPECT_EQ(x.storage()->nbytes(), 6u * 4u);
  x.copy_(arange(6).view({2, 3}));
  const float* raw = static_cast<const float*>(x.storage()->data());
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) EXPECT_EQ(raw[i + 2 * j], static_cast<float>(3 * i + j));
  }
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

TEST(TensorFactories, EmptyStridedAllocatesOnlyTheElementsItReaches) {
  // Rows 5 elements apart with 3 used: the last element is at 1 * 5 + 2 = 7, so 8 elements.
  EXPECT_EQ(empty_strided({2, 3}, {5, 1}, DType::Float64).storage()->nbytes(), 8u * 8u);
  EXPECT_EQ(empty_strided({3, 0}, {4, 1}).storage()->nbytes(), 0u);
  EXPECT_EQ(empty_strided({}, {}).numel(), 1);
}

TEST(TensorFactories, EmptyLikeAndZerosLikeCopyShapeDtypeAndDeviceNotData) {
  Tensor base = arange(6, DType::Int32).view({2, 3}).t();  // non-contiguous (3, 2)
  Tensor e = empty_like(base);
  EXPECT_EQ(e.sizes().vec(), Shape({3, 2}));
  EXPECT_EQ(e.dtype(), DType::Int32);
  EXPECT_EQ(e.device(), kCPU);
  EXPECT_TRUE(e.is_contiguous());
  EXPECT_FALSE(e.is_alias_of(base));
  Tensor z = zeros_like(base);
  EXPECT_EQ(z.sizes().vec(), Shape({3, 2}));
  EXPECT_EQ(z.dtype(), DType::Int32);
  EXPECT_FALSE(z.is_alias_of(base));
  EXPECT_EQ(z.to_vector<std::int32_t>(), std::vector<std::int32_t>(6, 0));
}

// --- metadata ---

TEST(TensorMetadata, DTypeNamesAndElementSizes) {
  EXPECT_EQ(dtype_name(DType::Float32), "float32");
  EXPECT_EQ(dtype_name(DType::Float64), "float64");
  EXPECT_EQ(dtype_name(DType::Int64), "int64");
  EXPECT_EQ(dtype_name(DType::Int32), "int32");
  EXPECT_EQ(dtype_name(DType::Bool), "bool");
  EXPECT_EQ(element_size(DType::Float32), 4u);
  EXPECT_EQ(element_size(DType::Float64), 8u);
  EXPECT_EQ(element_size(DType::Int64), 8u);
  EXPECT_EQ(element_size(DType::Int32), 4u);
  EXPECT_EQ(element_size(DType::Bool), 1u);
  EXPECT_TRUE(is_floating_point(DType::Float64));
  EXPECT_FALSE(is_floating_point(DType::Int32));
}

TEST(TensorMetadata, SizeAndStrideAcceptNegativeDims) {
  Tensor x = empty({2, 3, 4});
  EXPECT_EQ(x.size(0), 2);
  EXPECT_EQ(x.size(-1), 4);
  EXPECT_EQ(x.size(-3), 2);
  EXPECT_EQ(x.stride(1), 4);
  EXPECT_EQ(x.stride(-1), 1);
  EXPECT_EQ(x.stride(-3), 12);
}

TEST(TensorMetadata, ZeroDimensionalTensorHasOneElement) {
  Tensor x = full({}, 2.5);
  EXPECT_EQ(x.dim(), 0);
  EXPECT_EQ(x.numel(), 1);
  EXPECT_TRUE(x.sizes().empty());
  EXPECT_TRUE(x.is_contiguous());
  EXPECT_EQ(x.item<float>(), 2.5f);
}

TEST(TensorMetadata, ContiguityFollowsTheLayout) {
  Tensor x = empty({3, 4});
  EXPECT_TRUE(x.is_contiguous());
  EXPECT_FALSE(x.t().is_contiguous());
  EXPECT_FALSE(x.slice(1, 0, 2).is_contiguous());  // rows with gaps
  EXPECT_TRUE(x.slice(0, 1, 3).is_contiguous());   // whole rows, offset 4
  // Strides of size-1 dims do not matter.
  EXPECT_TRUE(x.slice(0, 0, 1).t().t().is_contiguous());
  EXPECT_TRUE(empty({4, 1}).t().is_contiguous());
}

// --- host reads ---

TEST(TensorHostReads, ItemConvertsToTheRequestedType) {
  Tensor x = from_vector<float>({2.75f});
  EXPECT_EQ(x.item<float>(), 2.75f);
  EXPECT_EQ(x.item<double>(), 2.75);
  EXPECT_EQ(x.item<std::int64_t>(), 2);  // truncation toward zero
  EXPECT_EQ(from_vector<float>({-2.75f}).item<std::int32_t>(), -2);
  EXPECT_TRUE(x.item<bool>());
  EXPECT_FALSE(from_vector<std::int64_t>({0}).item<bool>());
  EXPECT_EQ(from_vector<bool>({true}).item<float>(), 1.0f);
  EXPECT_EQ(from_vector<std::int64_t>({-7}).item<double>(), -7.0);
}

TEST(TensorHostReads, ItemReadsAViewAtItsOffset) {
  Tensor x = arange(6).view({2, 3});
  EXPECT_EQ(x.select(0, 1).select(0, 2).item<float>(), 5.0f);
  EXPECT_EQ(x.t().slice(0, 1, 2).slice(1, 1, 2).item<float>(), 4.0f);  // x[1][1]
}

TEST(TensorHostReads, ToVectorIsRowMajorForNonContiguousTensors) {
  Tensor x = arange(6).view({2, 3});
  EXPECT_EQ(x.t().to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(x.slice(1, 0, 3, 2).to_vector<float>(), (std::vector<float>{0, 2, 3, 5}));
}

TEST(TensorHostReads, ToVectorConvertsTheDtype) {
  Tensor x = from_vector<float>({1.5f, -2.5f, 0.0f});
  EXPECT_EQ(x.to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, -2, 0}));
  EXPECT_EQ(x.to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1.5, -2.5, 0.0}));
}

// --- clone, contiguous, to ---

TEST(TensorCopies, CloneIsAnIndependentCopy) {
  Tensor x = arange(4);
  Tensor c = x.clone();
  EXPECT_FALSE(c.is_alias_of(x));
  EXPECT_EQ(c.to_vector<float>(), x.to_vector<float>());
  c.fill_(9);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
  x.fill_(-1);
  EXPECT_EQ(c.to_vector<float>(), std::vector<float>(4, 9.0f));
}

TEST(TensorCopies, CloneOfANonContiguousViewIsContiguous) {
  Tensor x = arange(12, DType::Int64).view({3, 4});
  Tensor view = x.t().slice(0, 1, 4, 2);  // (2, 3): columns 1 and 3 of x
  Tensor c = view.clone();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.sizes().vec(), Shape({2, 3}));
  EXPECT_EQ(c.strides().vec(), Shape({3, 1}));
  EXPECT_EQ(c.storage_offset(), 0);
  EXPECT_EQ(c.dtype(), DType::Int64);
  EXPECT_EQ(c.to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 5, 9, 3, 7, 11}));
}

TEST(TensorCopies, ContiguousReturnsTheSameTensorWhenAlreadyContiguous) {
  Tensor x = arange(6).view({2, 3});
  Tensor c = x.contiguous();
  EXPECT_EQ(c.impl(), x.impl());
}

TEST(TensorCopies, ContiguousCopiesANonContiguousTensor) {
  Tensor x = arange(6).view({2, 3});
  Tensor c = x.t().contiguous();
  EXPECT_NE(c.impl(), x.impl());
  EXPECT_FALSE(c.is_alias_of(x));
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(TensorCopies, ToAnotherDtypeConverts) {
  Tensor x = from_vector<float>({1.75f, -1.75f, 0.0f});
  Tensor y = x.to(DType::Int32);
  EXPECT_EQ(y.dtype(), DType::Int32);
  EXPECT_FALSE(y.is_alias_of(x));
  EXPECT_EQ(y.to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, -1, 0}));
  EXPECT_EQ(x.to(DType::Bool).to_vector<bool>(), (std::vector<bool>{true, true, false}));
}

TEST(TensorCopies, ToTheSameDtypeOrDeviceReturnsTheSameTensor) {
  Tensor x = arange(3);
  EXPECT_EQ(x.to(DType::Float32).impl(), x.impl());
  EXPECT_EQ(x.to(kCPU).impl(), x.impl());
}

// --- copy_ ---

TEST(TensorCopyInto, ManyNonMergeableDims) {
  // 8 dims of size 2, reversed: no neighbours can be merged, so the kernel walks all 8 (and
  // the shape is longer than a DimVector stores inline). Reversing the dims reverses the bits
  // of each flat index, which is the reference.
  std::vector<std::int64_t> sizes(8, 2), reversed(8);
  for (int d = 0; d < 8; ++d) reversed[static_cast<std::size_t>(d)] = 7 - d;
  Tensor x = arange(256, DType::Int64).view(sizes).permute(reversed);
  const std::vector<std::int64_t> values = x.clone().to_vector<std::int64_t>();
  for (std::int64_t i = 0; i < 256; ++i) {
    std::int64_t bit_reversed = 0;
    for (int b = 0; b < 8; ++b) bit_reversed |= ((i >> b) & 1) << (7 - b);
    EXPECT_EQ(values[static_cast<std::size_t>(i)], bit_reversed) << "at " << i;
  }
}

TEST(TensorCopyInto, CopiesEqualShapes) {
  Tensor dst = zeros({2, 3});
  Tensor src = arange(6).view({2, 3});
  EXPECT_EQ(&dst.copy_(src), &dst);
  EXPECT_EQ(dst.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_FALSE(dst.is_alias_of(src));
}

TEST(TensorCopyInto, BroadcastsARowOverRows) {
  Tensor dst = zeros({3, 4});
  dst.copy_(arange(4));
  EXPECT_EQ(dst.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
}

TEST(TensorCopyInto, BroadcastsAColumnOverColumns) {
  Tensor dst = zeros({3, 2}, DType::Int64);
  dst.copy_(from_vector<std::int64_t>({7, 8, 9}, {3, 1}));
  EXPECT_EQ(dst.to_vector<std::int64_t>(), (std::vector<std::int64_t>{7, 7, 8, 8, 9, 9}));
}

TEST(TensorCopyInto, BroadcastsAZeroDimensionalSource) {
  Tensor dst = zeros({2, 2});
  dst.copy_(full({}, 1.25));
  EXPECT_EQ(dst.to_vector<float>(), std::vector<float>(4, 1.25f));
}

TEST(TensorCopyInto, ConvertsFloatToInt64ByTruncation) {
  Tensor dst = zeros({5}, DType::Int64);
  dst.copy_(from_vector<float>({1.9f, -1.9f, 2.5f, -0.5f, 7.0f}));
  EXPECT_EQ(dst.to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, -1, 2, 0, 7}));
}

TEST(TensorCopyInto, ConvertsIntToBoolAsNonZero) {
  Tensor dst = zeros({4}, DType::Bool);
  dst.copy_(from_vector<std::int64_t>({0, 2, -3, 0}));
  EXPECT_EQ(dst.to_vector<bool>(), (std::vector<bool>{false, true, true, false}));
}

TEST(TensorCopyInto, ConvertsBoolToFloatAsZeroOrOne) {
  Tensor dst = full({3}, 5.0);
  dst.copy_(from_vector<bool>({true, false, true}));
  EXPECT_EQ(dst.to_vector<float>(), (std::vector<float>{1, 0, 1}));
}

TEST(TensorCopyInto, WritesIntoANonContiguousDestination) {
  Tensor x = zeros({3, 3});
  x.select(1, 1).copy_(from_vector<float>({4, 5, 6}));  // column 1
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 4, 0, 0, 5, 0, 0, 6, 0}));
}

// For copies between views of one storage the result must equal copying from a snapshot of the
// source taken before the copy.
TEST(TensorCopyInto, OverlappingViewsShiftRightAsIfFromASnapshot) {
  Tensor x = arange(6);
  x.slice(0, 1, 5).copy_(x.slice(0, 0, 4));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 0, 1, 2, 3, 5}));
}

TEST(TensorCopyInto, OverlappingViewsShiftLeftAsIfFromASnapshot) {
  Tensor x = arange(6);
  x.slice(0, 0, 4).copy_(x.slice(0, 1, 5));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 4, 5}));
}

TEST(TensorCopyInto, CopyFromOwnTransposeGivesTheTransposedSnapshot) {
  Tensor x = arange(9).view({3, 3});
  x.copy_(x.t());
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 3, 6, 1, 4, 7, 2, 5, 8}));
}

TEST(TensorCopyInto, InterleavedViewsOfOneStorage) {
  // Odd elements into even positions: the byte ranges overlap, the elements do not.
  Tensor x = arange(8);
  x.slice(0, 0, 8, 2).copy_(x.slice(0, 1, 8, 2));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 1, 3, 3, 5, 5, 7, 7}));
}

TEST(TensorCopyInto, DisjointViewsOfOneStorage) {
  Tensor x = arange(6);
  x.slice(0, 0, 3).copy_(x.slice(0, 3, 6));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{3, 4, 5, 3, 4, 5}));
}

TEST(TensorCopyInto, CopyOntoItselfKeepsTheValues) {
  Tensor x = arange(5);
  x.copy_(x);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4}));
}

TEST(TensorCopyInto, BroadcastFromAnOverlappingRowOfTheSameTensor) {
  // Every row becomes the old row 1, even though row 1 itself is overwritten on the way.
  Tensor x = arange(6).view({3, 2});
  x.copy_(x.select(0, 1));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{2, 3, 2, 3, 2, 3}));
}

// --- fill_ ---

TEST(TensorFill, FillsOnlyTheElementsOfAStridedView) {
  Tensor x = zeros({4, 5});
  x.slice(1, 1, 5, 2).slice(0, 0, 4, 3).fill_(7);  // rows 0 and 3, columns 1 and 3
  std::vector<float> values = x.to_vector<float>();
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 5; ++j) {
      const bool inside = (i == 0 || i == 3) && (j == 1 || j == 3);
      EXPECT_EQ(values[static_cast<std::size_t>(i * 5 + j)], inside ? 7.0f : 0.0f)
          << "at (" << i << ", " << j << ")";
    }
  }
}

TEST(TensorFill, FillsATransposedView) {
  Tensor x = zeros({2, 3}, DType::Int32);
  x.t().select(0, 2).fill_(4);  // column 2 of x
  EXPECT_EQ(x.to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 0, 4, 0, 0, 4}));
}

TEST(TensorFill, ConvertsAScalarTheDtypeHoldsExactly) {
  Tensor ints = zeros({2}, DType::Int64);
  ints.fill_(3.0);
  EXPECT_EQ(ints.to_vector<std::int64_t>(), (std::vector<std::int64_t>{3, 3}));
  Tensor flags = zeros({2}, DType::Bool);
  flags.fill_(1);
  EXPECT_EQ(flags.to_vector<bool>(), (std::vector<bool>{true, true}));
  Tensor floats = zeros({2});
  floats.fill_(true);
  EXPECT_EQ(floats.to_vector<float>(), (std::vector<float>{1, 1}));
}

// A value the dtype cannot hold exactly is refused, by fill_ and by full (which names itself):
// a fraction or NaN into an integer dtype (it was truncated, or undefined), 2 into a bool.
TEST(TensorFill, RefusesAValueTheDtypeCannotHold) {
  auto message_of = [](auto&& call) {
    try {
      call();
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string("(no error)");
  };
  const Tensor ints = zeros({2}, DType::Int64);
  EXPECT_NE(message_of([&] { ints.fill_(2.7); }).find("fill_: the value 2.7 does not fit a int64"),
            std::string::npos);
  EXPECT_NE(message_of([&] { ints.fill_(std::nan("")); }).find("whole numbers"), std::string::npos);
  EXPECT_EQ(ints.to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 0}));  // untouched
  const Tensor flags = zeros({2}, DType::Bool);
  EXPECT_NE(message_of([&] { flags.fill_(2); }).find("a bool holds 0 or 1"), std::string::npos);
  EXPECT_NE(message_of([&] { full({3}, 2.5, DType::Int32); }).find("full: the value 2.5"),
            std::string::npos);
  EXPECT_NE(message_of([&] { full({3}, 2, DType::Bool); }).find("full: the value 2"),
            std::string::npos);
}

// Note [Converting floating-point values to integers]: one rule, no undefined behaviour.
TEST(TensorCopy, FloatsConvertToIntegersBySaturatingAndNanBecomesZero) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> values = {std::nan(""), inf,          -inf,          1e30,
                                      -1e30,        2.9,          -2.9,          9.3e18,
                                      -9.3e18,      2147483647.5, -2147483648.0, -2147483649.0};
  const Tensor doubles = from_vector<double>(values);
  const std::int64_t max64 = std::numeric_limits<std::int64_t>::max();
  const std::int64_t min64 = std::numeric_limits<std::int64_t>::min();
  EXPECT_EQ(doubles.to(DType::Int64).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{0, max64, min64, max64, min64, 2, -2, max64, min64,
                                       2147483647, -2147483648LL, -2147483649LL}));
  const std::int32_t max32 = std::numeric_limits<std::int32_t>::max();
  const std::int32_t min32 = std::numeric_limits<std::int32_t>::min();
  EXPECT_EQ(doubles.to(DType::Int32).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{0, max32, min32, max32, min32, 2, -2, max32, min32, max32,
                                       min32, min32}));
  // float32 sources too, and copy_ into an existing tensor: the same rule.
  const Tensor floats = doubles.to(DType::Float32);
  const Tensor into = zeros({static_cast<std::int64_t>(values.size())}, DType::Int64);
  into.copy_(floats);
  EXPECT_EQ(into.to_vector<std::int64_t>()[0], 0);      // NaN
  EXPECT_EQ(into.to_vector<std::int64_t>()[1], max64);  // inf
  EXPECT_EQ(into.to_vector<std::int64_t>()[5], 2);      // 2.9f
  // To bool, anything but zero is true, NaN included.
  EXPECT_EQ(doubles.to(DType::Bool).to_vector<bool>()[0], true);
}

TEST(TensorFill, ZeroClearsEveryElement) {
  Tensor x = arange(1, 5, 1, DType::Int64);
  x.zero_();
  EXPECT_EQ(x.to_vector<std::int64_t>(), std::vector<std::int64_t>(4, 0));
}

// --- version counter ---

TEST(TensorVersion, CopyFillAndZeroBumpTheVersion) {
  Tensor x = zeros({3});
  const std::uint64_t start = x.version();
  x.fill_(1);
  EXPECT_EQ(x.version(), start + 1);
  x.copy_(arange(3));
  EXPECT_EQ(x.version(), start + 2);
  x.zero_();
  EXPECT_EQ(x.version(), start + 3);
}

TEST(TensorVersion, ReadsAndOutOfPlaceCopiesDoNotBumpTheVersion) {
  Tensor x = arange(3);
  const std::uint64_t start = x.version();
  (void)x.clone();
  (void)x.to_vector<float>();
  (void)x.select(0, 1).item<float>();
  (void)x.to(DType::Int64);
  Tensor dst = zeros({3});
  dst.copy_(x);  // x is only read
  EXPECT_EQ(x.version(), start);
}

TEST(TensorVersion, IsSharedByViews) {
  Tensor base = zeros({2, 3});
  Tensor row = base.select(0, 1);
  Tensor col = base.t().select(0, 0);
  const std::uint64_t start = base.version();
  row.fill_(1);
  EXPECT_EQ(base.version(), start + 1);
  EXPECT_EQ(col.version(), start + 1);
  base.fill_(2);
  EXPECT_EQ(row.version(), start + 2);
  col.copy_(from_vector<float>({5, 6}));
  EXPECT_EQ(base.version(), start + 3);
  EXPECT_EQ(row.version(), start + 3);
  // A separate tensor has its own counter.
  Tensor other = zeros({2, 3});
  const std::uint64_t other_start = other.version();
  base.fill_(0);
  EXPECT_EQ(other.version(), other_start);
}

// --- detach and requires_grad ---

TEST(TensorAutogradFields, DetachSharesStorageAndDropsRequiresGrad) {
  Tensor x = ones({3}, TensorOptions().requires_grad(true));
  ASSERT_TRUE(x.requires_grad());
  Tensor d = x.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(x.requires_grad());
  EXPECT_NE(d.impl(), x.impl());
  EXPECT_TRUE(d.is_alias_of(x));
  EXPECT_EQ(d.sizes().vec(), x.sizes().vec());
  EXPECT_EQ(d.data_ptr(), x.data_ptr());
  const std::uint64_t start = x.version();
  d.fill_(4);
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(3, 4.0f));
  EXPECT_EQ(x.version(), start + 1);
}

TEST(TensorAutogradFields, DetachKeepsTheViewsLayout) {
  Tensor view = arange(12).view({3, 4}).t().slice(0, 1, 3);
  Tensor d = view.detach();
  EXPECT_EQ(d.sizes().vec(), view.sizes().vec());
  EXPECT_EQ(d.strides().vec(), view.strides().vec());
  EXPECT_EQ(d.storage_offset(), view.storage_offset());
  EXPECT_EQ(d.to_vector<float>(), view.to_vector<float>());
}

TEST(TensorAutogradFields, RequiresGradOnFloatingPointTensors) {
  Tensor x = zeros({2});
  EXPECT_FALSE(x.requires_grad());
  EXPECT_EQ(&x.requires_grad_(), &x);
  EXPECT_TRUE(x.requires_grad());
  x.requires_grad_(false);
  EXPECT_FALSE(x.requires_grad());
  EXPECT_TRUE(zeros({2}, DType::Float64).requires_grad_().requires_grad());
}

TEST(TensorAutogradFields, RequiresGradOnIntegerTensorsIsAnError) {
  Tensor x = zeros({2}, DType::Int64);
  EXPECT_THROW(x.requires_grad_(), Error);
  EXPECT_FALSE(x.requires_grad());
  EXPECT_THROW(zeros({2}, DType::Bool).requires_grad_(true), Error);
  x.requires_grad_(false);  // turning it off is always fine
  EXPECT_FALSE(x.requires_grad());
  EXPECT_THROW(zeros({2}, TensorOptions(DType::Int32).requires_grad(true)), Error);
}

// --- printing ---

TEST(TensorPrint, TwoByThreeFloat) {
  Tensor x = from_vector<float>({1.5f, -2.25f, 3.0f, 0.125f, 100.0f, -0.5f}, {2, 3});
  EXPECT_EQ(to_text(x),
            "tensor([[1.5000, -2.2500, 3.0000],\n"
            "        [0.1250, 100.0000, -0.5000]], dtype=float32, device=cpu)");
}

TEST(TensorPrint, Int64) {
  EXPECT_EQ(to_text(from_vector<std::int64_t>({3, -1, 42})),
            "tensor([3, -1, 42], dtype=int64, device=cpu)");
}

TEST(TensorPrint, Int64BeyondDoublePrecisionPrintsExactly) {
  // 2^53 + 1 and the int64 limits are not representable as doubles.
  Tensor x =
      from_vector<std::int64_t>({9007199254740993LL, std::numeric_limits<std::int64_t>::max(),
                                 std::numeric_limits<std::int64_t>::min()});
  EXPECT_EQ(to_text(x),
            "tensor([9007199254740993, 9223372036854775807, -9223372036854775808], "
            "dtype=int64, device=cpu)");
}

TEST(TensorPrint, NonFiniteFloats) {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = from_vector<double>({std::numeric_limits<double>::quiet_NaN(), inf, -inf, -1.0});
  EXPECT_EQ(to_text(x), "tensor([nan, inf, -inf, -1.0000], dtype=float64, device=cpu)");
}

TEST(TensorPrint, Bool) {
  Tensor x = from_vector<bool>({true, false, false, true}, {2, 2});
  EXPECT_EQ(to_text(x),
            "tensor([[True, False],\n"
            "        [False, True]], dtype=bool, device=cpu)");
}

TEST(TensorPrint, ZeroDimensional) {
  EXPECT_EQ(to_text(full({}, 2.5)), "tensor(2.5000, dtype=float32, device=cpu)");
  EXPECT_EQ(to_text(full({}, 4, DType::Int32)), "tensor(4, dtype=int32, device=cpu)");
}

TEST(TensorPrint, ThreeDimensionalSeparatesBlocksWithABlankLine) {
  Tensor x = arange(8, DType::Int64).view({2, 2, 2});
  EXPECT_EQ(to_text(x),
            "tensor([[[0, 1],\n"
            "         [2, 3]],\n"
            "\n"
            "        [[4, 5],\n"
            "         [6, 7]]], dtype=int64, device=cpu)");
}

TEST(TensorPrint, NonContiguousPrintsInLogicalOrder) {
  Tensor x = arange(6, DType::Int64).view({2, 3}).t();
  EXPECT_EQ(to_text(x),
            "tensor([[0, 3],\n"
            "        [1, 4],\n"
            "        [2, 5]], dtype=int64, device=cpu)");
}

TEST(TensorPrint, MoreThanAThousandElementsAreSummarised) {
  EXPECT_EQ(to_text(arange(1001, DType::Int64)),
            "tensor([0, 1, 2, ..., 998, 999, 1000], dtype=int64, device=cpu)");
  const std::string matrix = to_text(arange(2000, DType::Int64).view({40, 50}));
  EXPECT_EQ(matrix.rfind("tensor([[0, 1, 2, ..., 47, 48, 49],\n", 0), 0u) << matrix;
  EXPECT_NE(matrix.find("[1950, 1951, 1952, ..., 1997, 1998, 1999]]"), std::string::npos) << matrix;
  EXPECT_EQ(matrix.find("[150, "), std::string::npos) << "row 3 should be elided: " << matrix;
}

TEST(TensorPrint, AThousandElementsAreNotSummarised) {
  const std::string text = to_text(arange(1000, DType::Int64));
  EXPECT_EQ(text.find("..."), std::string::npos);
  EXPECT_NE(text.find(", 500, "), std::string::npos);
}

TEST(TensorPrint, EmptyTensorShowsItsSize) {
  EXPECT_EQ(to_text(zeros({0})), "tensor([], size=[0], dtype=float32, device=cpu)");
  EXPECT_NE(to_text(zeros({2, 0}, DType::Int64)).find("size=[2, 0], dtype=int64"),
            std::string::npos);
}

TEST(TensorPrint, RequiresGradAndUndefined) {
  EXPECT_EQ(to_text(ones({1}, TensorOptions().requires_grad(true))),
            "tensor([1.0000], dtype=float32, device=cpu, requires_grad=true)");
  EXPECT_EQ(to_text(Tensor()), "tensor(undefined)");
}

// --- size-0 dimensions ---

TEST(TensorZeroSize, HasNoElementsButKeepsItsShape) {
  Tensor x = empty({2, 0, 3});
  EXPECT_EQ(x.numel(), 0);
  EXPECT_EQ(x.nbytes(), 0u);
  EXPECT_EQ(x.sizes().vec(), Shape({2, 0, 3}));
  EXPECT_EQ(x.strides().vec(), Shape({3, 3, 1}));
  EXPECT_TRUE(x.is_contiguous());
  EXPECT_TRUE(x.to_vector<float>().empty());
}

TEST(TensorZeroSize, CopiesFillsAndClonesAreNoOps) {
  Tensor x = zeros({0, 4});
  x.fill_(3);
  x.copy_(arange(4));  // broadcasts a row over no rows
  Tensor c = x.clone();
  EXPECT_EQ(c.sizes().vec(), Shape({0, 4}));
  EXPECT_FALSE(c.is_alias_of(x));
  EXPECT_EQ(x.t().contiguous().sizes().vec(), Shape({4, 0}));
  EXPECT_EQ(x.to(DType::Int64).dtype(), DType::Int64);
}

TEST(TensorZeroSize, ViewsOfEmptyTensors) {
  Tensor x = zeros({3, 0});
  EXPECT_EQ(x.view({0, 5}).sizes().vec(), Shape({0, 5}));
  EXPECT_EQ(x.reshape({0}).sizes().vec(), Shape({0}));
  EXPECT_EQ(x.slice(0, 1, 2).sizes().vec(), Shape({1, 0}));
  EXPECT_EQ(x.select(0, 2).sizes().vec(), Shape({0}));
  EXPECT_EQ(x.unsqueeze(1).sizes().vec(), Shape({3, 1, 0}));
  EXPECT_EQ(arange(4).slice(0, 3, 1).numel(), 0);  // end before start: empty, not negative
  EXPECT_EQ(zeros({1, 3}).expand({0, 3}).numel(), 0);
}

}  // namespace
}  // namespace grove
