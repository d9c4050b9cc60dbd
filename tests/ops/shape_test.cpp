// Shape ops against naive references (all copies, so results must be exact): cat and stack over
// every dim with non-contiguous and size-0 inputs; split, chunk and flatten as views; tril and
// triu with several diagonals, batches and layouts; one_hot; and the error paths.
#include "ops/shape.h"

#include "op_test_util.h"

namespace grove::ops {
namespace {

using testing::element;
using testing::elements;
using testing::error_of;
using ::testing::HasSubstr;
using testing::non_contiguous;
using testing::random_integers;
using testing::random_tensor;

// The coordinates of flat index i in a tensor of `sizes`.
DimVector unravel(std::int64_t i, IntArrayRef sizes) {
  DimVector coordinates(sizes.size());
  for (std::size_t d = sizes.size(); d-- > 0;) {
    coordinates[d] = i % sizes[d];
    i /= sizes[d];
  }
  return coordinates;
}

std::int64_t ravel(IntArrayRef coordinates, IntArrayRef sizes) {
  std::int64_t i = 0;
  for (std::size_t d = 0; d < sizes.size(); ++d) i = i * sizes[d] + coordinates[d];
  return i;
}

// out[..., j, ...] comes from the input whose range along dim holds j.
std::vector<double> reference_cat(const std::vector<Tensor>& inputs, std::int64_t dim,
                                  IntArrayRef out_sizes) {
  std::vector<double> result;
  for (std::int64_t i = 0; i < product(out_sizes); ++i) {
    DimVector at = unravel(i, out_sizes);
    for (const Tensor& input : inputs) {
      if (at[static_cast<std::size_t>(dim)] < input.size(dim)) {
        result.push_back(element(input, ravel(at, input.sizes())));
        break;
      }
      at[static_cast<std::size_t>(dim)] -= input.size(dim);
    }
  }
  return result;
}

class ShapeCatTest : public ::testing::TestWithParam<DType> {};

TEST_P(ShapeCatTest, CatMatchesReferenceAlongEveryDim) {
  const DType dtype = GetParam();
  for (std::int64_t dim = 0; dim < 3; ++dim) {
    DimVector sizes_a{2, 3, 4}, sizes_b{2, 3, 4}, sizes_c{2, 3, 4};
    sizes_b[static_cast<std::size_t>(dim)] = 1;
    sizes_c[static_cast<std::size_t>(dim)] = 0;
    const std::vector<Tensor> inputs = {random_tensor(sizes_a, dtype, -2, 2, 1),
                                        non_contiguous(random_tensor(sizes_b, dtype, -2, 2, 2)),
                                        random_tensor(sizes_c, dtype, -2, 2, 3),
                                        random_tensor(sizes_a, dtype, -2, 2, 4)};
    Tensor out = cat(inputs, dim - 3);  // negative dims too
    DimVector expected_sizes = sizes_a;
    expected_sizes[static_cast<std::size_t>(dim)] = 2 * sizes_a[static_cast<std::size_t>(dim)] + 1;
    ASSERT_EQ(out.sizes(), IntArrayRef(expected_sizes)) << "dim " << dim;
    EXPECT_EQ(elements(out), reference_cat(inputs, dim, out.sizes())) << "dim " << dim;
  }
  Tensor single = random_tensor({3, 2}, dtype, -2, 2, 5).t();
  EXPECT_EQ(elements(cat({single}, 1)), elements(single));
  EXPECT_EQ(cat({zeros({0, 2}, dtype), zeros({0, 2}, dtype)}, 0).sizes(), IntArrayRef({0, 2}));
}

TEST_P(ShapeCatTest, StackAddsADim) {
  const DType dtype = GetParam();
  Tensor a = random_tensor({2, 3}, dtype, -2, 2, 6);
  Tensor b = random_tensor({3, 2}, dtype, -2, 2, 7).t();
  for (std::int64_t dim : {0, 1, 2, -1}) {
    Tensor out = stack({a, b}, dim);
    const std::int64_t d = dim < 0 ? dim + 3 : dim;
    DimVector sizes{2, 3};
    sizes.insert(static_cast<std::size_t>(d), 2);
    ASSERT_EQ(out.sizes(), IntArrayRef(sizes)) << dim;
    for (std::int64_t i = 0; i < out.numel(); ++i) {
      DimVector at = unravel(i, out.sizes());
      const Tensor& source = at[static_cast<std::size_t>(d)] == 0 ? a : b;
      at.erase(static_cast<std::size_t>(d));
      EXPECT_EQ(element(out, i), element(source, ravel(at, {2, 3}))) << dim << " " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, ShapeCatTest,
                         ::testing::Values(DType::Float32, DType::Float64, DType::Int64,
                                           DType::Bool),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(Shape, SplitAndChunkAreViews) {
  Tensor x = random_tensor({7, 3}, DType::Float64, -2, 2, 8);
  std::vector<Tensor> pieces = split(x, 3);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].sizes(), IntArrayRef({3, 3}));
  EXPECT_EQ(pieces[2].sizes(), IntArrayRef({1, 3}));
  EXPECT_TRUE(pieces[1].is_alias_of(x));
  EXPECT_EQ(pieces[1].storage_offset(), 9);
  EXPECT_EQ(elements(cat(pieces, 0)), elements(x));
  EXPECT_EQ(split(x, 3, -1).size(), 1u);
  EXPECT_EQ(split(x, 10).size(), 1u);
  EXPECT_EQ(split(zeros({0, 3}), 0).size(), 1u);

  // chunk: ceil(5 / 4) = 2 per piece gives 2, 2, 1 (three pieces, as PyTorch).
  std::vector<Tensor> chunks = chunk(random_tensor({2, 5}), 4, 1);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[2].sizes(), IntArrayRef({2, 1}));
  EXPECT_EQ(chunk(x, 7).size(), 7u);
  EXPECT_EQ(chunk(zeros({0}), 3).size(), 3u);
  Tensor strided = x.t();
  std::vector<Tensor> columns = chunk(strided, 3, 0);
  EXPECT_EQ(elements(columns[1]), elements(x.select(1, 1).unsqueeze(0)));
}

TEST(Shape, FlattenMergesDims) {
  Tensor x = random_tensor({2, 3, 4, 5});
  EXPECT_EQ(flatten(x).sizes(), IntArrayRef({120}));
  EXPECT_EQ(flatten(x, 1).sizes(), IntArrayRef({2, 60}));
  EXPECT_EQ(flatten(x, 1, 2).sizes(), IntArrayRef({2, 12, 5}));
  EXPECT_EQ(flatten(x, -2, -2).sizes(), IntArrayRef({2, 3, 4, 5}));
  EXPECT_TRUE(flatten(x, 1).is_alias_of(x));
  EXPECT_EQ(flatten(full({}, 2.0f)).sizes(), IntArrayRef({1}));
  EXPECT_EQ(flatten(zeros({2, 0, 3}), 0, 1).sizes(), IntArrayRef({0, 3}));
  Tensor transposed = x.transpose(0, 3);  // not viewable: a copy with the same values
  EXPECT_EQ(elements(flatten(transposed)), elements(transposed));
}

class ShapeTriangleTest : public ::testing::TestWithParam<std::tuple<bool, std::int64_t>> {};

TEST_P(ShapeTriangleTest, TrilAndTriuMatchReference) {
  const auto& [lower, diagonal] = GetParam();
  auto check = [&, lower = lower, diagonal = diagonal](const Tensor& x, const std::string& what) {
    Tensor out = lower ? tril(x, diagonal) : triu(x, diagonal);
    EXPECT_EQ(out.sizes(), x.sizes()) << what;
    EXPECT_EQ(out.dtype(), x.dtype()) << what;
    std::vector<double> expected;
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      const DimVector at = unravel(i, x.sizes());
      const std::int64_t offset = at[at.size() - 1] - at[at.size() - 2];
      const bool keep = lower ? offset <= diagonal : offset >= diagonal;
      expected.push_back(keep ? element(x, i) : 0.0);
    }
    EXPECT_EQ(elements(out), expected) << what;
  };
  check(random_tensor({4, 5}, DType::Float32, 1, 2, 1), "square-ish");
  check(random_tensor({2, 3, 5, 4}, DType::Float64, 1, 2, 2), "batched");
  check(non_contiguous(random_tensor({3, 4, 4}, DType::Float32, 1, 2, 3)), "non-contiguous");
  check(random_tensor({3, 4, 5}, DType::Float32, 1, 2, 4).transpose(0, 2), "transposed");
  check(random_integers({3, 3}, 1, 9, 5), "int64");
  check(random_tensor({1, 6}, DType::Float32, 1, 2, 6), "one row");
  check(random_tensor({2, 0, 3}, DType::Float32, 1, 2, 7), "size-0");
  check(random_tensor({3, 3}, DType::Float32, 1, 2, 8).to(DType::Bool), "bool");
}

INSTANTIATE_TEST_SUITE_P(Ops, ShapeTriangleTest,
                         ::testing::Combine(::testing::Bool(), ::testing::Values(-2, -1, 0, 1, 5)),
                         [](const auto& info) {
                           const std::int64_t diagonal = std::get<1>(info.param);
                           return std::string(std::get<0>(info.param) ? "tril" : "triu") + "_" +
                                  (diagonal < 0 ? "minus" : "") +
                                  std::to_string(std::abs(diagonal));
                         });

TEST(Shape, OneHotMatchesReference) {
  Tensor indices = random_integers({2, 3}, 0, 4, 9).t();  // non-contiguous (3, 2)
  Tensor out = one_hot(indices, 4);
  ASSERT_EQ(out.sizes(), IntArrayRef({3, 2, 4}));
  EXPECT_EQ(out.dtype(), DType::Int64);
  std::vector<double> expected;
  for (double index : elements(indices)) {
    for (int c = 0; c < 4; ++c) expected.push_back(c == index ? 1.0 : 0.0);
  }
  EXPECT_EQ(elements(out), expected);
  EXPECT_EQ(one_hot(full({}, std::int64_t{2}), 3).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{0, 0, 1}));
  EXPECT_EQ(one_hot(zeros({0}, DType::Int64), 0).sizes(), IntArrayRef({0, 0}));
}

TEST(Shape, ErrorsNameOpShapesAndDtypes) {
  EXPECT_THAT(error_of([] {
                cat({zeros({2, 3}), zeros({2, 4})}, 0);
              }),
              HasSubstr("cat: sizes must match except in dimension 0, but tensor 0 has shape "
                        "[2, 3] and tensor 1 has shape [2, 4] (inputs: float32[2, 3], "
                        "float32[2, 4])"));
  EXPECT_THAT(error_of([] {
                cat({zeros({2}), zeros({2}, DType::Int64)});
              }),
              HasSubstr("cat: expected tensors of one dtype, but tensor 0 is float32 and tensor 1 "
                        "is int64"));
  EXPECT_THAT(error_of([] {
                cat({zeros({2}), zeros({1, 2})});
              }),
              HasSubstr("cat: expected tensors of 1 dims, but tensor 1 has shape [1, 2]"));
  EXPECT_THAT(error_of([] {
                cat({zeros({2}), zeros({2})}, 1);
              }),
              HasSubstr("cat: dimension 1 is out of range for tensors of 1 dims (expected a value "
                        "in [-1, 0]) (inputs: float32[2], float32[2])"));
  EXPECT_THAT(error_of([] { cat(std::vector<Tensor>{}); }),
              HasSubstr("cat: expected at least one tensor"));
  EXPECT_THAT(error_of([] { cat({full({}, 1.0f)}); }), HasSubstr("cat: cannot concatenate 0-d"));
  EXPECT_THAT(error_of([] {
                stack({zeros({2}), zeros({3})});
              }),
              HasSubstr("stack: expected tensors of one shape, but tensor 0 is float32[2] and "
                        "tensor 1 is float32[3]"));
  EXPECT_THAT(error_of([] { stack({zeros({2})}, 2); }),
              HasSubstr("stack: dimension 2 is out of range for stacking tensors of 1 dims"));
  EXPECT_THAT(error_of([] {
                split(zeros({4, 2}), 0);
              }),
              HasSubstr("split: expected split_size > 0 (or 0 for an empty dimension), but got 0 "
                        "for dimension 0 of float32[4, 2]"));
  EXPECT_THAT(error_of([] { split(full({}, 1.0f), 1); }),
              HasSubstr("split: cannot split a 0-d tensor (float32[])"));
  EXPECT_THAT(error_of([] { chunk(full({}, 1.0f), 2); }),
              HasSubstr("chunk: cannot chunk a 0-d tensor (float32[])"));
  EXPECT_THAT(error_of([] { chunk(zeros({4}), 0); }),
              HasSubstr("chunk: expected chunks > 0, but got 0 (input float32[4])"));
  EXPECT_THAT(error_of([] {
                flatten(zeros({2, 3, 4}), 2, 1);
              }),
              HasSubstr("flatten: start_dim 2 comes after end_dim 1 for float32[2, 3, 4]"));
  EXPECT_THAT(error_of([] { tril(zeros({3})); }),
              HasSubstr("tril: expected a tensor of at least 2 dims (..., rows, columns), but got "
                        "1 dims (inputs: float32[3])"));
  EXPECT_THAT(error_of([] { one_hot(zeros({2}), 3); }),
              HasSubstr("one_hot: expected int64 indices, but got float32"));
  EXPECT_THAT(error_of([] { one_hot(zeros({2}, DType::Int64), -1); }),
              HasSubstr("one_hot: expected num_classes >= 0, but got -1"));
  EXPECT_THAT(error_of([] { one_hot(zeros({2}, DType::Int64), 0); }),
              HasSubstr("one_hot: num_classes 0 leaves no valid index for 2 indices"));
  Tensor indices = from_vector(std::vector<std::int64_t>{0, 3, 1});
  EXPECT_THAT(error_of([&] { one_hot(indices, 3); }),
              HasSubstr("one_hot: index 3 at position [1] of the indices of shape [3] is out of "
                        "range for num_classes (expected 0 <= index < 3) (inputs: int64[3])"));
}

}  // namespace
}  // namespace grove::ops
