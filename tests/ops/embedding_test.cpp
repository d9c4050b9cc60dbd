// embedding against a naive reference (a gather is exact, so results must be equal): every dtype
// of weight, indices of several shapes and layouts, a non-contiguous weight, size-0 shapes; and
// the index checks of Note [Index checks during capture]: on the host in eager mode, in the
// kernel when a captured graph replays with a bad index.
#include "ops/embedding.h"

#include "core/device_graph.h"
#include "op_test_util.h"
#include "ops/inplace.h"

namespace grove::ops {
namespace {

using testing::element;
using testing::elements;
using testing::error_of;
using ::testing::HasSubstr;
using testing::non_contiguous;
using testing::random_integers;
using testing::random_tensor;

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

}  // namespace
}  // namespace grove::ops
