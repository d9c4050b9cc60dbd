// embedding against a naive reference (a gather is exact, so results must be equal): every dtype
// of weight, indices of several shapes and layouts, a non-contiguous weight, size-0 shapes; and
// the index checks of Note [Index checks during capture]: on the host in eager mode, in the
// kernel when a captured graph replays with a bad index. embedding_backward against a naive
// scatter-add (repeated indices, every index layout, non-contiguous grad), by central differences
// against embedding, and its errors and index checks.
#include "ops/embedding.h"

#include "core/device_graph.h"
#include "op_test_util.h"
#include "ops/inplace.h"

namespace grove::ops {
namespace {

using testing::element;
using testing::elements;
using testing::error_of;
using testing::expect_close;
using testing::expect_gradient;
using ::testing::HasSubstr;
using testing::non_contiguous;
using testing::random_integers;
using testing::random_tensor;
using testing::relative_tolerance;

// output[i, :] = weight[indices[i], :] for each flat index position i.
void check_embedding(const Tensor& weight, const Tensor& indices, const std::string& what) {
  Tensor output = embedding(weight, indices);
  DimVector sizes(indices.sizes());
  sizes.push_back(weight.size(1));
  EXPECT_EQ(output.sizes(), IntArrayRef(sizes)) << what;
  EXPECT_EQ(output.dtype(), weight.dtype()) << what;
  EXPECT_TRUE(output.is_contiguous()) << what;
  const std::int64_t features = weight.size(1);
  std::vector<double> expected;
  for (double index : elements(indices)) {
    for (std::int64_t f = 0; f < features; ++f) {
      expected.push_back(element(weight, static_cast<std::int64_t>(index) * features + f));
    }
  }
  EXPECT_EQ(elements(output), expected) << what;
}

class EmbeddingTest : public ::testing::TestWithParam<DType> {};

TEST_P(EmbeddingTest, GathersRowsInEveryLayout) {
  const DType dtype = GetParam();
  Tensor weight = random_tensor({7, 5}, DType::Float64, -3, 3, 1).to(dtype);
  check_embedding(weight, random_integers({4}, 0, 7, 2), "1-d indices");
  check_embedding(weight, random_integers({2, 3}, 0, 7, 3), "2-d indices");
  check_embedding(weight, random_integers({2, 3, 2}, 0, 7, 4).transpose(0, 2),
                  "transposed indices");
  check_embedding(weight, non_contiguous(random_integers({3, 4}, 0, 7, 5)),
                  "non-contiguous indices");
  check_embedding(weight, random_integers({1}, 0, 7, 6).expand({3}), "expanded indices");
  check_embedding(weight, full({}, std::int64_t{6}), "0-d index");
  check_embedding(non_contiguous(weight), random_integers({2, 3}, 0, 7, 7),
                  "non-contiguous weight");
  check_embedding(weight.t().contiguous().t(), random_integers({5}, 0, 7, 8),
                  "column-major weight");
  check_embedding(weight, zeros({2, 0}, DType::Int64), "no indices");
  check_embedding(zeros({3, 0}, dtype), random_integers({4}, 0, 3, 9), "no features");
  check_embedding(weight.narrow(0, 6, 1), zeros({3}, DType::Int64), "one row");
}

INSTANTIATE_TEST_SUITE_P(Ops, EmbeddingTest,
                         ::testing::Values(DType::Float32, DType::Float64, DType::Int64,
                                           DType::Int32, DType::Bool),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(Embedding, OutOfRangeIndexNamesTheIndexAndItsPosition) {
  Tensor weight = zeros({5, 3});
  Tensor indices = from_vector(std::vector<std::int64_t>{0, 1, 2, 4, 7, 1}, {2, 3});
  EXPECT_THAT(error_of([&] { embedding(weight, indices); }),
              HasSubstr("embedding: index 7 at position [1, 1] of the indices of shape [2, 3] is "
                        "out of range for the weight's rows (expected 0 <= index < 5) (inputs: "
                        "float32[5, 3], int64[2, 3])"));
  Tensor negative = from_vector(std::vector<std::int64_t>{0, -1});
  EXPECT_THAT(error_of([&] { embedding(weight, negative); }),
              HasSubstr("index -1 at position [1] of the indices of shape [2] is out of range"));
  // Position is in the logical (row-major) order of a transposed view.
  EXPECT_THAT(error_of([&] { embedding(weight, indices.t()); }),
              HasSubstr("index 7 at position [1, 1] of the indices of shape [3, 2]"));
  EXPECT_THAT(error_of([&] {
                embedding(zeros({0, 3}), zeros({1}, DType::Int64));
              }),
              HasSubstr("index 0 at position [0] of the indices of shape [1] is out of range for "
                        "the weight's rows (expected 0 <= index < 0)"));
}

TEST(Embedding, ShapeAndDtypeErrorsNameOpShapesAndDtypes) {
  EXPECT_THAT(error_of([] { embedding(zeros({5}), zeros({2}, DType::Int64)); }),
              HasSubstr("embedding: expected a 2-d weight (rows, features), but got 1 dims "
                        "(inputs: float32[5], int64[2])"));
  EXPECT_THAT(error_of([] {
                embedding(zeros({5, 3}), zeros({2}, DType::Int32));
              }),
              HasSubstr("embedding: expected int64 indices, but got int32; convert them with "
                        "to(int64) (inputs: float32[5, 3], int32[2])"));
  EXPECT_THAT(error_of([] {
                embedding(zeros({5, 3}), Tensor());
              }),
              HasSubstr("embedding: input 1 is undefined"));
}

Stream capture_stream() {
  static const Stream stream = new_stream(kCPU);
  return stream;
}

TEST(EmbeddingCaptureTest, TheKernelChecksIndicesWhenACapturedGraphReplays) {
  Tensor weight = random_tensor({5, 3}, DType::Float32, -1, 1, 1);
  Tensor indices = zeros({2, 3}, DType::Int64);  // the graph's input buffer
  DeviceGraph graph(kCPU);
  Tensor output;
  {
    StreamGuard guard(capture_stream());
    graph.begin_capture(capture_stream());
    // No host read during capture: this must not throw "operation not permitted when stream is
    // capturing", although the indices are not readable yet.
    EXPECT_NO_THROW(output = embedding(weight, indices));
    graph.end_capture();
  }
  copy_(indices, from_vector(std::vector<std::int64_t>{4, 3, 2, 1, 0, 4}, {2, 3}));
  graph.replay();
  check_embedding(weight, indices, "replay");
  EXPECT_EQ(output.to_vector<float>(), embedding(weight, indices).to_vector<float>());

  copy_(indices, from_vector(std::vector<std::int64_t>{4, 3, 2, 1, 9, 4}, {2, 3}));
  EXPECT_THAT(error_of([&] { graph.replay(); }),
              HasSubstr("embedding: index 9 at position [1, 1] of the indices of shape [2, 3] is "
                        "out of range for the weight's rows (expected 0 <= index < 5); found by "
                        "the kernel"));
}

// --- embedding_backward ---

// out[r, :] = sum of grad[i, :] over the flat index positions i with indices[i] == r.
void check_embedding_backward(const Tensor& grad, const Tensor& indices, std::int64_t rows,
                              const std::string& what) {
  const Tensor out = embedding_backward(grad, indices, rows);
  const std::int64_t features = grad.size(-1);
  EXPECT_EQ(out.sizes(), IntArrayRef({rows, features})) << what;
  EXPECT_EQ(out.dtype(), grad.dtype()) << what;
  std::vector<double> expected(static_cast<std::size_t>(rows * features), 0.0);
  const std::vector<double> g = elements(grad), index = elements(indices);
  for (std::size_t i = 0; i < index.size(); ++i) {
    for (std::int64_t f = 0; f < features; ++f) {
      expected[static_cast<std::size_t>(static_cast<std::int64_t>(index[i]) * features + f)] +=
          g[i * static_cast<std::size_t>(features) + static_cast<std::size_t>(f)];
    }
  }
  // float32 sums up to a dozen terms of |g| <= 2 in float: a few ulps of the largest partial sum,
  // hence the absolute floor; float64 adds in the reference's order but may round differently
  // from the double reference only through float64 itself.
  const double rtol = relative_tolerance(grad.dtype());
  expect_close(out, expected, rtol, rtol * 10, what);
}

class EmbeddingBackwardTest : public ::testing::TestWithParam<DType> {};

TEST_P(EmbeddingBackwardTest, AddsRepeatedRowsInEveryLayout) {
  const DType dtype = GetParam();
  const Tensor repeated = from_vector(std::vector<std::int64_t>{3, 1, 3, 3, 0, 1}, {2, 3});
  check_embedding_backward(random_tensor({2, 3, 5}, dtype, -2, 2, 1), repeated, 6,
                           "repeated indices, unused rows");
  check_embedding_backward(random_tensor({4, 70}, dtype, -2, 2, 2), random_integers({4}, 0, 3, 3),
                           3, "more than one column block");
  check_embedding_backward(non_contiguous(random_tensor({2, 3, 5}, dtype, -2, 2, 4)), repeated, 4,
                           "non-contiguous grad");
  check_embedding_backward(random_tensor({5, 2, 3}, dtype, -2, 2, 5).transpose(0, 1),
                           random_integers({2, 5}, 0, 4, 6), 4, "transposed grad");
  check_embedding_backward(random_tensor({3, 2, 4}, dtype, -2, 2, 7),
                           random_integers({2, 3}, 0, 5, 8).t(), 5, "transposed indices");
  check_embedding_backward(random_tensor({3, 4}, dtype, -2, 2, 9),
                           random_integers({1}, 0, 5, 10).expand({3}), 5, "expanded indices");
  check_embedding_backward(random_tensor({4}, dtype, -2, 2, 11), full({}, std::int64_t{2}), 3,
                           "0-d index");
  check_embedding_backward(zeros({2, 0, 3}, dtype), zeros({2, 0}, DType::Int64), 4, "no indices");
  check_embedding_backward(zeros({3, 0}, dtype), random_integers({3}, 0, 2, 12), 2, "no features");
  check_embedding_backward(zeros({0, 3}, dtype), zeros({0}, DType::Int64), 0, "no rows");
  // Many indices on few rows (above the threshold for splitting columns over threads).
  check_embedding_backward(random_tensor({600, 130}, dtype, -2, 2, 13),
                           random_integers({600}, 0, 7, 14), 7, "threaded");
}

INSTANTIATE_TEST_SUITE_P(Ops, EmbeddingBackwardTest,
                         ::testing::Values(DType::Float32, DType::Float64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(EmbeddingBackward, IsTheDerivativeOfEmbedding) {
  const Tensor weight = random_tensor({5, 3}, DType::Float64, -1, 1, 15);
  const Tensor indices = from_vector(std::vector<std::int64_t>{4, 0, 4, 2, 4, 0, 1, 1}, {2, 4});
  const Tensor grad = random_tensor({2, 4, 3}, DType::Float64, -2, 2, 16);
  expect_gradient(
      embedding_backward(grad, indices, 5), [&](const Tensor& w) { return embedding(w, indices); },
      weight, grad, "embedding weight");
}

TEST(EmbeddingBackward, ShapeDtypeAndIndexErrors) {
  const Tensor indices = from_vector(std::vector<std::int64_t>{0, 4, 1});
  EXPECT_THAT(error_of([&] {
                embedding_backward(zeros({3, 2}), indices, 4);
              }),
              HasSubstr("embedding_backward: index 4 at position [1] of the indices of shape [3] "
                        "is out of range for num_weights (expected 0 <= index < 4) (inputs: "
                        "float32[3, 2], int64[3])"));
  EXPECT_THAT(error_of([&] {
                embedding_backward(zeros({2, 2}), indices, 5);
              }),
              HasSubstr("embedding_backward: expected grad of shape (*indices' shape [3], "
                        "features), but got [2, 2]"));
  EXPECT_THAT(error_of([&] { embedding_backward(zeros({3}), indices, 5); }),
              HasSubstr("expected grad of shape (*indices' shape [3], features), but got [3]"));
  EXPECT_THAT(error_of([&] {
                embedding_backward(zeros({3, 2}, DType::Int64), indices, 5);
              }),
              HasSubstr("embedding_backward: expected a floating-point grad, but got int64"));
  EXPECT_THAT(error_of([&] {
                embedding_backward(zeros({3, 2}), zeros({3}, DType::Int32), 5);
              }),
              HasSubstr("embedding_backward: expected int64 indices, but got int32"));
  EXPECT_THAT(error_of([&] {
                embedding_backward(zeros({3, 2}), indices, -1);
              }),
              HasSubstr("embedding_backward: expected num_weights >= 0, but got -1"));
}

TEST(EmbeddingBackwardCaptureTest, TheKernelChecksIndicesWhenACapturedGraphReplays) {
  const Tensor grad = random_tensor({2, 3, 4}, DType::Float32, -1, 1, 17);
  Tensor indices = zeros({2, 3}, DType::Int64);  // the graph's input buffer
  DeviceGraph graph(kCPU);
  Tensor output;
  {
    StreamGuard guard(capture_stream());
    graph.begin_capture(capture_stream());
    EXPECT_NO_THROW(output = embedding_backward(grad, indices, 5));
    graph.end_capture();
  }
  copy_(indices, from_vector(std::vector<std::int64_t>{4, 3, 4, 1, 0, 4}, {2, 3}));
  graph.replay();
  EXPECT_EQ(output.to_vector<float>(), embedding_backward(grad, indices, 5).to_vector<float>());
  copy_(indices, from_vector(std::vector<std::int64_t>{4, 3, 2, 1, 5, 4}, {2, 3}));
  EXPECT_THAT(error_of([&] { graph.replay(); }),
              HasSubstr("embedding_backward: index 5 at position [1, 1] of the indices of shape "
                        "[2, 3] is out of range for num_weights (expected 0 <= index < 5); found "
                        "by the kernel"));
}

}  // namespace
}  // namespace grove::ops
