// Tests of views: view (with -1 inference and on non-contiguous tensors), reshape (a view when
// the strides allow, a copy otherwise), transpose/t/permute, slice (steps, negative and clamped
// bounds), narrow, select, expand, squeeze/unsqueeze, as_strided and chains of them.
//
// Each view is checked against a plain reference: an index function, written with ordinary index
// arithmetic on the row-major base, that says which base element each view element must be.
// check_view() compares every element read through the view with the base at that position,
// then writes distinct values through the view and checks, element by element, that exactly
// the referenced base elements changed (so aliasing is tested both ways).
//
// Values are small integers stored in float32, so all comparisons are exact.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <vector>

#include "core/tensor.h"

namespace grove {
namespace {

using Shape = std::vector<std::int64_t>;
using Index = std::vector<std::int64_t>;
// Maps an index of the view to the row-major flat index of the base element it must alias.
using BaseIndexFn = std::function<std::int64_t(const Index&)>;

// Calls fn(index) for every index of `sizes` in row-major order.
void for_each_index(const Shape& sizes, const std::function<void(const Index&)>& fn) {
  for (std::int64_t size : sizes) {
    if (size == 0) return;
  }
  Index index(sizes.size(), 0);
  while (true) {
    fn(index);
    std::size_t d = sizes.size();
    while (d > 0) {
      --d;
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
      if (d == 0) return;
    }
    if (sizes.empty()) return;
  }
}

// A float32 base 0, 1, 2, ... of the given shape.
Tensor make_base(const Shape& sizes) {
  std::int64_t numel = 1;
  for (std::int64_t size : sizes) numel *= size;
  return arange(static_cast<double>(numel)).view(sizes);
}

// See the comment at the top. `base` must be a fresh make_base() tensor.
void check_view(const Tensor& base, const Tensor& view, const BaseIndexFn& base_index,
                bool writable = true) {
  ASSERT_TRUE(view.is_alias_of(base));
  const std::vector<float> before = base.to_vector<float>();
  const std::vector<float> seen = view.to_vector<float>();
  std::int64_t flat = 0;
  std::map<std::int64_t, float> written;  // base flat index -> value written through the view
  for_each_index(view.sizes().vec(), [&](const Index& index) {
    const std::int64_t at = base_index(index);
    EXPECT_EQ(seen[static_cast<std::size_t>(flat)], before[static_cast<std::size_t>(at)])
        << "view element " << ::testing::PrintToString(index) << " should be base element " << at;
    written[at] = static_cast<float>(1000 + flat);
    ++flat;
  });
  ASSERT_EQ(flat, view.numel());
  if (!writable) return;

  std::vector<float> fresh(static_cast<std::size_t>(view.numel()));
  for (std::size_t i = 0; i < fresh.size(); ++i) fresh[i] = static_cast<float>(1000 + i);
  view.copy_(from_vector(fresh, view.dim() == 0 ? IntArrayRef{} : view.sizes()).view(view.sizes()));
  const std::vector<float> after = base.to_vector<float>();
  for (std::size_t at = 0; at < after.size(); ++at) {
    auto found = written.find(static_cast<std::int64_t>(at));
    const float expected = found == written.end() ? before[at] : found->second;
    EXPECT_EQ(after[at], expected) << "base element " << at << " after writing through the view";
  }
}

// --- view ---

TEST(ViewOp, ViewOfAContiguousTensorSharesItsData) {
  Tensor base = make_base({24});
  Tensor v = base.view({2, 3, 4});
  EXPECT_EQ(v.sizes().vec(), Shape({2, 3, 4}));
  EXPECT_EQ(v.strides().vec(), Shape({12, 4, 1}));
  EXPECT_EQ(v.data_ptr(), base.data_ptr());
  check_view(base, v, [](const Index& i) { return i[0] * 12 + i[1] * 4 + i[2]; });
}

TEST(ViewOp, InfersOneMinusOneSize) {
  Tensor base = make_base({24});
  EXPECT_EQ(base.view({-1, 6}).sizes().vec(), Shape({4, 6}));
  EXPECT_EQ(base.view({2, -1, 3}).sizes().vec(), Shape({2, 4, 3}));
  EXPECT_EQ(base.view({-1}).sizes().vec(), Shape({24}));
  Tensor v = base.view({3, -1});
  check_view(base, v, [](const Index& i) { return i[0] * 8 + i[1]; });
}

TEST(ViewOp, ViewOfOneElementAsZeroDimensionalAndBack) {
  Tensor base = make_base({1});
  Tensor scalar = base.view({});
  EXPECT_EQ(scalar.dim(), 0);
  EXPECT_EQ(scalar.view({1, 1, 1}).sizes().vec(), Shape({1, 1, 1}));
  check_view(base, scalar, [](const Index&) { return 0; });
}

TEST(ViewOp, SplittingADimensionOfATransposedTensorIsAView) {
  Tensor base = make_base({4, 6});
  Tensor t = base.t();  // (6, 4) with strides (1, 6)
  Tensor v = t.view({2, 3, 4});
  EXPECT_EQ(v.strides().vec(), Shape({3, 1, 6}));
  // v[a][b][c] = t[3a + b][c] = base[c][3a + b]
  check_view(base, v, [](const Index& i) { return i[2] * 6 + i[0] * 3 + i[1]; });
}

TEST(ViewOp, MergingDimensionsThatAreContiguousTogetherIsAView) {
  Tensor base = make_base({2, 3, 4});
  Tensor p = base.permute({1, 2, 0});  // (3, 4, 2), strides (4, 1, 12)
  Tensor v = p.view({12, 2});          // dims 0 and 1 of p are contiguous together
  EXPECT_EQ(v.strides().vec(), Shape({1, 12}));
  // v[m][c] = p[m / 4][m % 4][c] = base[c][m / 4][m % 4]
  check_view(base, v, [](const Index& i) { return i[1] * 12 + i[0]; });
}

TEST(ViewOp, MergingDimensionsThatAreNotContiguousIsAnError) {
  Tensor base = make_base({4, 6});
  EXPECT_THROW(base.t().view({24}), Error);
  EXPECT_THROW(make_base({2, 3, 4}).transpose(1, 2).view({2, 12}), Error);
  EXPECT_THROW(base.slice(1, 0, 3).view({12}), Error);  // rows with gaps
}

TEST(ViewOp, ViewKeepsTheStorageOffset) {
  Tensor base = make_base({4, 6});
  Tensor rows = base.slice(0, 1, 3);  // whole rows 1 and 2: contiguous, offset 6
  Tensor v = rows.view({3, 4});
  EXPECT_EQ(v.storage_offset(), 6);
  check_view(base, v, [](const Index& i) { return 6 + i[0] * 4 + i[1]; });
}

// --- reshape ---

TEST(ReshapeOp, IsAViewWhenTheStridesAllow) {
  Tensor base = make_base({4, 6});
  Tensor r = base.reshape({2, -1});
  EXPECT_TRUE(r.is_alias_of(base));
  EXPECT_EQ(r.sizes().vec(), Shape({2, 12}));
  check_view(base, r, [](const Index& i) { return i[0] * 12 + i[1]; });
  Tensor split = base.t().reshape({2, 3, 4});  // splitting a dim of a transpose is a view too
  EXPECT_TRUE(split.is_alias_of(base));
}

TEST(ReshapeOp, OfAnExpandedTensorCopiesTheBroadcastValues) {
  Tensor base = make_base({3, 1});
  Tensor r = base.expand({3, 2}).reshape({6});
  EXPECT_FALSE(r.is_alias_of(base));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{0, 0, 1, 1, 2, 2}));
  // Splitting an expanded dim needs no copy.
  Tensor split = base.expand({3, 4}).reshape({3, 2, 2});
  EXPECT_TRUE(split.is_alias_of(base));
  EXPECT_EQ(split.strides().vec(), Shape({1, 0, 0}));
}

TEST(ReshapeOp, CopiesOnlyWhenItMust) {
  Tensor base = make_base({2, 3});
  Tensor r = base.t().reshape({6});
  EXPECT_FALSE(r.is_alias_of(base));
  EXPECT_TRUE(r.is_contiguous());
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  r.fill_(-1);  // the copy is independent
  EXPECT_EQ(base.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

// --- transpose, t, permute ---

TEST(TransposeOp, SwapsSizesAndStrides) {
  Tensor base = make_base({2, 3, 4});
  Tensor v = base.transpose(0, 2);
  EXPECT_EQ(v.sizes().vec(), Shape({4, 3, 2}));
  EXPECT_EQ(v.strides().vec(), Shape({1, 4, 12}));
  check_view(base, v, [](const Index& i) { return i[2] * 12 + i[1] * 4 + i[0]; });
}

TEST(TransposeOp, AcceptsNegativeDims) {
  Tensor base = make_base({2, 3, 4});
  Tensor v = base.transpose(-1, -2);
  EXPECT_EQ(v.sizes().vec(), Shape({2, 4, 3}));
  check_view(base, v, [](const Index& i) { return i[0] * 12 + i[2] * 4 + i[1]; });
  EXPECT_EQ(base.transpose(1, 1).strides().vec(), Shape({12, 4, 1}));
}

TEST(TransposeOp, TOfAMatrixAndOfSmallerTensors) {
  Tensor base = make_base({3, 5});
  check_view(base, base.t(), [](const Index& i) { return i[1] * 5 + i[0]; });
  Tensor vector = make_base({4});
  EXPECT_EQ(vector.t().sizes().vec(), Shape({4}));
  EXPECT_TRUE(vector.t().is_alias_of(vector));
  EXPECT_EQ(full({}, 1.0).t().dim(), 0);
}

TEST(PermuteOp, ReordersDimensions) {
  Tensor base = make_base({2, 3, 4});
  Tensor v = base.permute({2, 0, 1});
  EXPECT_EQ(v.sizes().vec(), Shape({4, 2, 3}));
  EXPECT_EQ(v.strides().vec(), Shape({1, 12, 4}));
  // v[a][b][c] = base[b][c][a]
  check_view(base, v, [](const Index& i) { return i[1] * 12 + i[2] * 4 + i[0]; });
}

TEST(PermuteOp, AcceptsNegativeDims) {
  Tensor base = make_base({2, 3, 4});
  Tensor v = base.permute({-1, -3, 1});
  EXPECT_EQ(v.sizes().vec(), Shape({4, 2, 3}));
  check_view(base, v, [](const Index& i) { return i[1] * 12 + i[2] * 4 + i[0]; });
}

// --- slice and narrow ---

TEST(SliceOp, TakesEveryStepthElement) {
  Tensor base = make_base({10});
  Tensor v = base.slice(0, 1, 8, 3);  // 1, 4, 7
  EXPECT_EQ(v.sizes().vec(), Shape({3}));
  EXPECT_EQ(v.strides().vec(), Shape({3}));
  EXPECT_EQ(v.storage_offset(), 1);
  EXPECT_EQ(base.slice(0, 0, 10, 4).to_vector<float>(), (std::vector<float>{0, 4, 8}));
  EXPECT_EQ(base.slice(0, 2, 3, 100).to_vector<float>(), (std::vector<float>{2}));
  check_view(base, v, [](const Index& i) { return 1 + 3 * i[0]; });
}

TEST(SliceOp, AHugeStepTakesOnlyTheFirstElement) {
  // (end - start + step - 1) / step would overflow int64 here.
  Tensor base = make_base({6});
  const std::int64_t huge = std::numeric_limits<std::int64_t>::max();
  Tensor v = base.slice(0, 2, huge, huge);
  EXPECT_EQ(v.sizes().vec(), Shape({1}));
  check_view(base, v, [](const Index&) { return 2; });
}

TEST(SliceOp, SlicesAnInnerDimensionWithAStep) {
  Tensor base = make_base({3, 7});
  Tensor v = base.slice(1, 1, 7, 2);  // columns 1, 3, 5
  EXPECT_EQ(v.sizes().vec(), Shape({3, 3}));
  check_view(base, v, [](const Index& i) { return i[0] * 7 + 1 + 2 * i[1]; });
}

TEST(SliceOp, NegativeBoundsCountFromTheEnd) {
  Tensor base = make_base({6});
  EXPECT_EQ(base.slice(0, -3, -1).to_vector<float>(), (std::vector<float>{3, 4}));
  Tensor v = base.slice(-1, -5, 6, 2);  // negative dim too: 1, 3, 5
  check_view(base, v, [](const Index& i) { return 1 + 2 * i[0]; });
}

TEST(SliceOp, OutOfRangeBoundsAreClamped) {
  Tensor base = make_base({6});
  EXPECT_EQ(base.slice(0, -100, 100).numel(), 6);
  EXPECT_EQ(base.slice(0, 4, 100).to_vector<float>(), (std::vector<float>{4, 5}));
  EXPECT_EQ(base.slice(0, 10, 20).numel(), 0);
  EXPECT_EQ(base.slice(0, 4, 2).numel(), 0);  // end before start
  EXPECT_EQ(base.slice(0, -100, -50).numel(), 0);
  EXPECT_EQ(base.slice(0, -100, 2).to_vector<float>(), (std::vector<float>{0, 1}));
}

TEST(NarrowOp, TakesLengthElementsFromStart) {
  Tensor base = make_base({4, 5});
  Tensor v = base.narrow(1, 1, 3);
  EXPECT_EQ(v.sizes().vec(), Shape({4, 3}));
  check_view(base, v, [](const Index& i) { return i[0] * 5 + 1 + i[1]; });
  Tensor from_end = base.narrow(0, -2, 2);  // rows 2 and 3
  check_view(base, from_end, [](const Index& i) { return (2 + i[0]) * 5 + i[1]; });
  EXPECT_EQ(base.narrow(0, 4, 0).numel(), 0);
}

// --- select ---

TEST(SelectOp, RemovesTheDimension) {
  Tensor base = make_base({3, 4, 5});
  Tensor v = base.select(1, 2);
  EXPECT_EQ(v.sizes().vec(), Shape({3, 5}));
  EXPECT_EQ(v.strides().vec(), Shape({20, 1}));
  EXPECT_EQ(v.storage_offset(), 10);
  check_view(base, v, [](const Index& i) { return i[0] * 20 + 2 * 5 + i[1]; });
}

TEST(SelectOp, NegativeIndexAndDimCountFromTheEnd) {
  Tensor base = make_base({3, 4});
  Tensor last_column = base.select(-1, -1);
  EXPECT_EQ(last_column.sizes().vec(), Shape({3}));
  check_view(base, last_column, [](const Index& i) { return i[0] * 4 + 3; });
  Tensor element = base.select(0, -3).select(0, 1);  // base[0][1], 0-d
  EXPECT_EQ(element.dim(), 0);
  check_view(base, element, [](const Index&) { return 1; });
}

// --- expand ---

TEST(ExpandOp, BroadcastsSizeOneDimsWithStrideZero) {
  Tensor base = make_base({3, 1});
  Tensor v = base.expand({3, 4});
  EXPECT_EQ(v.sizes().vec(), Shape({3, 4}));
  EXPECT_EQ(v.strides().vec(), Shape({1, 0}));
  check_view(
      base, v, [](const Index& i) { return i[0]; }, /*writable=*/false);
}

TEST(ExpandOp, AddsNewLeadingDims) {
  Tensor base = make_base({3});
  Tensor v = base.expand({2, 2, 3});
  EXPECT_EQ(v.sizes().vec(), Shape({2, 2, 3}));
  EXPECT_EQ(v.strides().vec(), Shape({0, 0, 1}));
  check_view(
      base, v, [](const Index& i) { return i[2]; }, /*writable=*/false);
  EXPECT_EQ(full({}, 7.0).expand({2}).to_vector<float>(), (std::vector<float>{7, 7}));
}

TEST(ExpandOp, MinusOneKeepsASize) {
  Tensor base = make_base({3, 1});
  Tensor v = base.expand({2, -1, 5});
  EXPECT_EQ(v.sizes().vec(), Shape({2, 3, 5}));
  EXPECT_EQ(v.strides().vec(), Shape({0, 1, 0}));
  check_view(
      base, v, [](const Index& i) { return i[1]; }, /*writable=*/false);
}

TEST(ExpandOp, WritesThroughTheBaseAreSeenInTheExpansion) {
  Tensor base = make_base({1, 3});
  Tensor v = base.expand({2, 3});
  base.select(1, 1).fill_(9);
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{0, 9, 2, 0, 9, 2}));
}

TEST(ExpandOp, CopyIntoAnExpandedTensorIsAnError) {
  Tensor base = zeros({3, 1});
  Tensor v = base.expand({3, 4});
  const std::uint64_t version = base.version();
  EXPECT_THROW(v.copy_(ones({3, 4})), Error);
  EXPECT_EQ(base.to_vector<float>(), std::vector<float>(3, 0.0f));
  EXPECT_EQ(base.version(), version);
  // Expanding a size-1 dim to size 1 is not a broadcast: writing is fine.
  base.expand({3, 1}).copy_(ones({3, 1}));
  EXPECT_EQ(base.to_vector<float>(), std::vector<float>(3, 1.0f));
}

TEST(ExpandOp, FillOfAnExpandedTensorIsAnError) {
  Tensor base = zeros({3, 1});
  EXPECT_THROW(base.expand({3, 4}).fill_(1), Error);
  EXPECT_THROW(base.expand({2, 3, 1}).zero_(), Error);
}

// --- squeeze and unsqueeze ---

TEST(SqueezeOp, DropsEverySizeOneDim) {
  Tensor base = make_base({1, 3, 1, 2});
  Tensor v = base.squeeze();
  EXPECT_EQ(v.sizes().vec(), Shape({3, 2}));
  EXPECT_EQ(v.strides().vec(), Shape({2, 1}));
  check_view(base, v, [](const Index& i) { return i[0] * 2 + i[1]; });
  EXPECT_EQ(make_base({1, 1}).squeeze().dim(), 0);
}

TEST(SqueezeOp, DropsOneDimOnlyIfItsSizeIsOne) {
  Tensor base = make_base({1, 3, 1});
  EXPECT_EQ(base.squeeze(0).sizes().vec(), Shape({3, 1}));
  EXPECT_EQ(base.squeeze(-1).sizes().vec(), Shape({1, 3}));
  EXPECT_EQ(base.squeeze(1).sizes().vec(), Shape({1, 3, 1}));  // size 3: unchanged
  EXPECT_TRUE(base.squeeze(1).is_alias_of(base));
  check_view(base, base.squeeze(-3), [](const Index& i) { return i[0]; });
}

TEST(UnsqueezeOp, InsertsASizeOneDim) {
  Tensor base = make_base({2, 3});
  EXPECT_EQ(base.unsqueeze(0).sizes().vec(), Shape({1, 2, 3}));
  EXPECT_EQ(base.unsqueeze(1).sizes().vec(), Shape({2, 1, 3}));
  EXPECT_EQ(base.unsqueeze(1).strides().vec(), Shape({3, 3, 1}));
  EXPECT_EQ(base.unsqueeze(2).sizes().vec(), Shape({2, 3, 1}));
  EXPECT_EQ(base.unsqueeze(2).strides().vec(), Shape({3, 1, 1}));
  check_view(base, base.unsqueeze(1), [](const Index& i) { return i[0] * 3 + i[2]; });
}

TEST(UnsqueezeOp, NegativeDimsCountFromTheEndOfTheResult) {
  Tensor base = make_base({2, 3});
  EXPECT_EQ(base.unsqueeze(-1).sizes().vec(), Shape({2, 3, 1}));
  EXPECT_EQ(base.unsqueeze(-3).sizes().vec(), Shape({1, 2, 3}));
  EXPECT_EQ(base.unsqueeze(-2).sizes().vec(), Shape({2, 1, 3}));
  EXPECT_EQ(full({}, 1.0).unsqueeze(-1).sizes().vec(), Shape({1}));
  check_view(base, base.unsqueeze(-1), [](const Index& i) { return i[0] * 3 + i[1]; });
}

TEST(UnsqueezeOp, OfANonContiguousTensorKeepsItsLayout) {
  Tensor base = make_base({3, 4});
  Tensor v = base.t().unsqueeze(1);  // (4, 1, 3)
  EXPECT_EQ(v.sizes().vec(), Shape({4, 1, 3}));
  check_view(base, v, [](const Index& i) { return i[2] * 4 + i[0]; });
  EXPECT_EQ(v.squeeze(1).strides().vec(), base.t().strides().vec());
}

// --- as_strided ---

TEST(AsStridedOp, ReadsOverlappingWindows) {
  Tensor base = make_base({10});
  Tensor windows = base.as_strided({4, 3}, {2, 1}, 1);  // windows[i][j] = base[1 + 2i + j]
  EXPECT_EQ(windows.storage_offset(), 1);
  check_view(
      base, windows, [](const Index& i) { return 1 + 2 * i[0] + i[1]; },
      /*writable=*/false);
}

TEST(AsStridedOp, WritesLandAtTheGivenStrides) {
  Tensor base = make_base({4, 5});
  Tensor v = base.as_strided({2, 2}, {10, 3}, 2);
  check_view(base, v, [](const Index& i) { return 2 + 10 * i[0] + 3 * i[1]; });
}

TEST(AsStridedOp, IgnoresTheViewsOwnLayout) {
  // as_strided addresses the storage directly, whatever view it is called on.
  Tensor base = make_base({12});
  Tensor v = base.slice(0, 5, 12).t().as_strided({3}, {4}, 0);
  check_view(base, v, [](const Index& i) { return 4 * i[0]; });
}

// --- chains ---

TEST(ChainedViews, ComposeInOrder) {
  Tensor base = make_base({4, 6, 5});
  // transpose -> (5, 6, 4); slice dim 1 rows 1, 3, 5 -> (5, 3, 4); select dim 0 index 3 ->
  // (3, 4); unsqueeze -> (3, 1, 4); narrow dim 2 from 1 length 2 -> (3, 1, 2).
  Tensor v = base.transpose(0, 2).slice(1, 1, 6, 2).select(0, 3).unsqueeze(1).narrow(2, 1, 2);
  EXPECT_EQ(v.sizes().vec(), Shape({3, 1, 2}));
  // v[a][0][c] = base[1 + c][1 + 2a][3]
  check_view(base, v, [](const Index& i) { return (1 + i[2]) * 30 + (1 + 2 * i[0]) * 5 + 3; });
}

TEST(ChainedViews, ViewOfASliceOfAPermute) {
  Tensor base = make_base({2, 3, 4});
  Tensor v = base.permute({2, 0, 1}).slice(0, 2, 4).view({2, 6});  // (2, 2, 3) -> (2, 6)
  // v[a][m] = base[m / 3][m % 3][2 + a]
  check_view(base, v, [](const Index& i) { return (i[1] / 3) * 12 + (i[1] % 3) * 4 + 2 + i[0]; });
}

TEST(ChainedViews, MoreDimensionsThanStoredInline) {
  // Ten dims exceeds the six a DimVector keeps inline, so the sizes spill to the heap.
  Tensor base = make_base({2, 3});
  Tensor v = base;
  for (int k = 0; k < 8; ++k) v = v.unsqueeze(k % 2 == 0 ? 0 : -1);
  EXPECT_EQ(v.sizes().vec(), Shape({1, 1, 1, 1, 2, 3, 1, 1, 1, 1}));
  Tensor t = v.transpose(4, 5);
  EXPECT_EQ(t.dim(), 10);
  check_view(base, t, [](const Index& i) { return i[5] * 3 + i[4]; });
  Tensor copy = t.clone();
  EXPECT_EQ(copy.sizes().vec(), t.sizes().vec());
  EXPECT_EQ(copy.squeeze().to_vector<float>(), base.t().to_vector<float>());
}

}  // namespace
}  // namespace grove
