// The NCCL engine on one GPU (world size 1): collectives on CUDA tensors through the ops, and an
// all-reduce captured into a CUDA graph and replayed with new values. Several GPUs: the same
// scenarios run through dist_worker (label multigpu, in dist_test.cpp's multi-GPU cases).
// Each test skips without a GPU or without NCCL in the build.
#include <gtest/gtest.h>

#include <vector>

#include "core/device_graph.h"
#include "core/stream.h"
#include "dist/process_group.h"
#include "ops/collective.h"

namespace grove::dist {
namespace {

#define SKIP_WITHOUT_NCCL_GPU()                                            \
  if (!cuda_is_available()) GTEST_SKIP() << "no CUDA device";              \
  if (!has_nccl()) GTEST_SKIP() << "this build has no NCCL"

ProcessGroupOptions one_gpu() {
  ProcessGroupOptions options;
  options.cuda = true;
  options.timeout = std::chrono::seconds(60);
  return options;
}

const Device kGpu = cuda(0);

TEST(Nccl, CollectivesOnOneGpuKeepOrGatherTheValues) {
  SKIP_WITHOUT_NCCL_GPU();
  ProcessGroup group(one_gpu());
  const Tensor x = from_vector<float>({1.5f, -2.0f, 3.0f}, {}, kGpu);
  ops::all_reduce_(x, ops::ReduceOp::kSum, group.id());
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1.5f, -2.0f, 3.0f}));
  ops::all_reduce_(x, ops::ReduceOp::kMean, group.id());
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1.5f, -2.0f, 3.0f}));
  const Tensor ints = from_vector<std::int64_t>({4, 5}, {}, kGpu);
  ops::broadcast_(ints, 0, group.id());
  EXPECT_EQ(ints.to_vector<std::int64_t>(), (std::vector<std::int64_t>{4, 5}));
  const Tensor gathered = ops::all_gather(x.view({1, 3}), group.id());
  EXPECT_EQ(gathered.sizes(), (DimVector{1, 3}));
  EXPECT_EQ(gathered.to_vector<float>(), x.to_vector<float>());
}

TEST(Nccl, ACapturedAllReduceReplaysInAGraph) {
  SKIP_WITHOUT_NCCL_GPU();
  ProcessGroup group(one_gpu());
  const Stream stream = new_stream(kGpu, "tests");
  const Tensor x = zeros({1024}, kGpu);
  const Tensor y = zeros({1024}, kGpu);
  {
    StreamGuard guard(stream);
    wait_stream(stream, default_stream(kGpu));
    DeviceGraph graph(kGpu);
    graph.begin_capture(stream);
    y.copy_(x);
    ops::all_reduce_(y, ops::ReduceOp::kMax, group.id());
    graph.end_capture();
    // The copy is one node; with one rank NCCL may add none (an in-place all-reduce of a single
    // rank has nothing to do), so the values below are the test.
    EXPECT_GE(graph.num_nodes(), 1u);
    for (float value : {2.0f, -7.0f}) {  // new values each replay: the graph reads x anew
      x.fill_(value);
      wait_stream(stream, default_stream(kGpu));
      graph.replay();
      synchronize(stream);
      for (float got : y.to_vector<float>()) ASSERT_EQ(got, value);
    }
  }
  release_stream(stream);
}

TEST(Nccl, BoolSumIsRefusedWithAHint) {
  SKIP_WITHOUT_NCCL_GPU();
  ProcessGroup group(one_gpu());
  const Tensor flags = ones({4}, TensorOptions(DType::Bool).device(kGpu));
  try {
    ops::all_reduce_(flags, ops::ReduceOp::kSum, group.id());
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.message()).find("max (any) and min (all)"), std::string::npos)
        << error.message();
  }
}

}  // namespace
}  // namespace grove::dist
