// Device-side error reports (Note [Device-side error reports] in core/cuda/device_errors.h): a
// CUDA kernel that finds an index or target out of range does not use it, and the next
// synchronisation throws DeviceCheckError naming the op, the value, its position and the valid
// range. The CUDA context stays usable afterwards, the report is cleared once thrown, and
// replays of captured graphs report the same way. Every test skips without a CUDA device (CTest
// label `gpu`).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/device_graph.h"
#include "core/error.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "ops/embedding.h"
#include "ops/pool.h"
#include "ops/shape.h"
#include "ops/softmax.h"
#include "tests/ops/cuda_test_util.h"

namespace grove::ops {
namespace {

using testing::kGpu;

Tensor indices_on_gpu(const std::vector<std::int64_t>& values) {
  return from_vector(values).to(kGpu);
}

// The message of the DeviceCheckError that synchronising the current stream throws ("" and a
// test failure if none).
std::string report_at_synchronize() {
  try {
    synchronize(current_stream(kGpu));
  } catch (const DeviceCheckError& error) {
    return error.message();
  }
  ADD_FAILURE() << "synchronize did not throw DeviceCheckError";
  return "";
}

void expect_contains(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << "expected \"" << part << "\" in: " << message;
}

// A test that fails between a bad launch and its synchronisation leaves a report behind; draining
// it here keeps it from surfacing in the next test when the binary runs all tests in one process.
class CudaDeviceErrorsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (!cuda_is_available()) return;
    try {
      synchronize(current_stream(kGpu));
    } catch (const DeviceCheckError&) {
    }
  }
};

TEST_F(CudaDeviceErrorsTest, BadEmbeddingIndexIsReportedWithOpValuePositionAndRange) {
  SKIP_WITHOUT_GPU();
  const Tensor weight = testing::random_tensor({4, 3}, DType::Float32, -1.0, 1.0, 1).to(kGpu);
  const Tensor out = embedding(weight, indices_on_gpu({0, 3, 7, 1}));
  const std::string message = report_at_synchronize();
  expect_contains(message, "embedding: index 7 at position 2 is out of range");
  expect_contains(message, "expected 0 <= index < 4");
  expect_contains(message, "here: synchronize");
  // Thrown once: the record is cleared, so the next synchronisation is quiet.
  EXPECT_NO_THROW(synchronize(current_stream(kGpu)));
  // The good rows were written; the bad one is NaN.
  const std::vector<double> values = testing::elements(out.to(kCPU));
  const std::vector<double> table = testing::elements(weight.to(kCPU));
  for (std::size_t f = 0; f < 3; ++f) {
    EXPECT_EQ(values[f], table[f]);
    EXPECT_EQ(values[3 + f], table[9 + f]);
    EXPECT_TRUE(std::isnan(values[6 + f]));
    EXPECT_EQ(values[9 + f], table[3 + f]);
  }
}

TEST_F(CudaDeviceErrorsTest, ReadingAResultOnTheHostReportsToo) {
  SKIP_WITHOUT_GPU();
  const Tensor weight = testing::random_tensor({4, 3}, DType::Float32, -1.0, 1.0, 2).to(kGpu);
  const Tensor out = embedding(weight, indices_on_gpu({-2}));
  try {
    (void)out.to(kCPU);
    ADD_FAILURE() << "to(kCPU) did not throw DeviceCheckError";
  } catch (const DeviceCheckError& error) {
    expect_contains(error.message(), "embedding: index -2 at position 0");
    expect_contains(error.message(), "copy to the host");
  }
  EXPECT_NO_THROW(synchronize(current_stream(kGpu)));
}

// What trapped before (an integer table has no NaN) now gives zeros and a report, and the
// context keeps working: the next ops give exact results.
TEST_F(CudaDeviceErrorsTest, TheContextStaysUsableAfterABadIndexInAnIntegerKernel) {
  SKIP_WITHOUT_GPU();
  const Tensor table = arange(12.0).reshape({4, 3}).to(DType::Int64);
  const Tensor gathered = embedding(table.to(kGpu), indices_on_gpu({1, 9}));
  expect_contains(report_at_synchronize(), "embedding: index 9 at position 1");
  EXPECT_EQ(testing::elements(gathered.to(kCPU)), (std::vector<double>{3, 4, 5, 0, 0, 0}));

  const Tensor hot = one_hot(indices_on_gpu({2, 5, 0}), 3);
  const std::string message = report_at_synchronize();
  expect_contains(message, "one_hot: index 5 at position 1 is out of range");
  expect_contains(message, "expected 0 <= index < 3");
  EXPECT_EQ(testing::elements(hot.to(kCPU)), (std::vector<double>{0, 0, 1, 0, 0, 0, 1, 0, 0}));

  const Tensor indices = from_vector(std::vector<std::int64_t>{2, 0, 1});
  EXPECT_EQ(testing::elements(embedding(table.to(kGpu), indices.to(kGpu)).to(kCPU)),
            testing::elements(embedding(table, indices)));
  EXPECT_EQ(testing::elements(one_hot(indices.to(kGpu), 3).to(kCPU)),
            testing::elements(one_hot(indices, 3)));
}

TEST_F(CudaDeviceErrorsTest, BadMaxPoolIndexIsReportedAndAddsNothing) {
  SKIP_WITHOUT_GPU();
  // One 2 x 2 plane pooled to 1 x 2 (two outputs); the second index is outside the plane.
  const Tensor grad = from_vector(std::vector<float>{1.5f, 2.5f}).reshape({1, 1, 2}).to(kGpu);
  const Tensor indices = indices_on_gpu({3, 4}).reshape({1, 1, 2});
  const Tensor grad_input = max_pool2d_backward(grad, indices, {1, 2, 2});
  const std::string message = report_at_synchronize();
  expect_contains(message, "max_pool2d_backward: index 4 at position 1 is out of range");
  expect_contains(message, "expected 0 <= index < 4");
  EXPECT_EQ(testing::elements(grad_input.to(kCPU)), (std::vector<double>{0, 0, 0, 1.5}));
}

TEST_F(CudaDeviceErrorsTest, BadTargetIsReportedByTheLossAndItsGradient) {
  SKIP_WITHOUT_GPU();
  const Tensor scores = testing::random_tensor({3, 4}, DType::Float32, -1.0, 1.0, 3).to(kGpu);
  const Tensor targets = indices_on_gpu({1, 3, 4});
  (void)cross_entropy(scores, targets);
  std::string message = report_at_synchronize();
  expect_contains(message, "cross_entropy: target 4 at position 2 is out of range");
  expect_contains(message, "expected 0 <= target < 4 (the classes) or ignore_index");
  // ignore_index is not out of range.
  (void)nll_loss(scores, indices_on_gpu({1, -100, 0}));
  EXPECT_NO_THROW(synchronize(current_stream(kGpu)));
  // Two ops with the bad target before one synchronisation: the first is described, the second
  // counted.
  (void)nll_loss(scores, targets);
  (void)nll_loss_backward(full({}, 1.0, TensorOptions(kGpu)), scores, targets);
  message = report_at_synchronize();
  expect_contains(message, "nll_loss: target 4 at position 2");
  expect_contains(message, "1 more report came in");
}

// A captured kernel reports on every replay that meets a bad index, and only then.
TEST_F(CudaDeviceErrorsTest, ReplaysOfACapturedGraphReport) {
  SKIP_WITHOUT_GPU();
  const Stream stream = new_stream(kGpu);
  const StreamGuard guard(stream);
  const Tensor weight = testing::random_tensor({5, 2}, DType::Float32, -1.0, 1.0, 4).to(kGpu);
  const Tensor indices = indices_on_gpu({4, 0});
  synchronize(stream);
  DeviceGraph graph(kGpu);
  graph.begin_capture(stream);
  const Tensor out = embedding(weight, indices);
  graph.end_capture();

  graph.replay();
  EXPECT_NO_THROW(synchronize(stream));
  indices.copy_(from_vector(std::vector<std::int64_t>{4, 5}));
  graph.replay();
  expect_contains(report_at_synchronize(), "embedding: index 5 at position 1");
  indices.copy_(from_vector(std::vector<std::int64_t>{1, 2}));
  graph.replay();
  EXPECT_NO_THROW(synchronize(stream));
  const std::vector<double> table = testing::elements(weight.to(kCPU));
  EXPECT_EQ(testing::elements(out.to(kCPU)),
            (std::vector<double>{table[2], table[3], table[4], table[5]}));
}

}  // namespace
}  // namespace grove::ops
