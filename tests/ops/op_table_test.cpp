// The op table (ops/op_table.h): every OpKind has exactly one entry, the kinds without a CUDA
// kernel are the ones written down here, and a call recorded by an observer replays through
// op_entry(kind) to the same values as the user function gave.
#include "ops/op_table.h"

#include <vector>

#include "op_test_util.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/layer_norm.h"
#include "ops/pool.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/softmax.h"

namespace grove::ops {
namespace {

using testing::elements;
using testing::random_integers;
using testing::random_tensor;

constexpr auto kNumOps = static_cast<std::size_t>(OpKind::Count);

OpKind op_kind(std::size_t i) {
  return static_cast<OpKind>(i);
}

TEST(OpTable, HasAnEntryForEveryOp) {
  for (std::size_t i = 0; i < kNumOps; ++i) {
    const OpKind kind = op_kind(i);
    try {
      const OpEntry& entry = op_entry(kind);
      EXPECT_EQ(entry.kind, kind) << "the entry for " << kind << " names another op";
      EXPECT_NE(entry.infer, nullptr) << kind;
      EXPECT_NE(entry.cpu, nullptr) << kind;
    } catch (const Error& error) {
      ADD_FAILURE() << kind << ": " << error.what();
    }
  }
}

TEST(OpTable, GivesTheSameEntryEveryTime) {
  EXPECT_EQ(&op_entry(OpKind::Add), &op_entry(OpKind::Add));
  EXPECT_NE(&op_entry(OpKind::Add), &op_entry(OpKind::Sub));
}

// The kinds that have no CUDA kernel. In a build with the CUDA backend this list is written down,
// so that adding an op without its CUDA kernel (or adding the kernel) means updating it here; in
// a build without it, no op has one.
std::vector<OpKind> kinds_without_cuda_kernel() {
  std::vector<OpKind> kinds;
  for (std::size_t i = 0; i < kNumOps; ++i) {
    if (op_entry(op_kind(i)).cuda == nullptr) kinds.push_back(op_kind(i));
  }
  return kinds;
}

TEST(OpTable, ListsTheOpsWithoutACudaKernel) {
#ifdef GROVE_HAS_CUDA
  // Every op has its CUDA kernel today. An op that lands without one goes here.
  const std::vector<OpKind> expected = {};
#else
  std::vector<OpKind> expected;
  for (std::size_t i = 0; i < kNumOps; ++i) expected.push_back(op_kind(i));
#endif
  EXPECT_EQ(kinds_without_cuda_kernel(), expected);
}

// What an interpreter has of a recorded node: its kind, inputs and attributes.
struct RecordedCall {
  OpKind kind;
  std::vector<Tensor> inputs;
  OpAttributes attributes;
  std::vector<Tensor> outputs;
};

class Recorder final : public OpObserver {
 public:
  void on_op(const OpCall& call, const OpOutputs& outputs) override {
    calls.push_back({call.kind,
                     {call.inputs.begin(), call.inputs.end()},
                     call.attributes,
                     {outputs.span().begin(), outputs.span().end()}});
  }
  std::vector<RecordedCall> calls;
};

TEST(OpTable, ReplaysRecordedCallsByKind) {
  const Tensor x = random_tensor({2, 3, 6, 6}, DType::Float64, -2.0, 2.0, 1);
  const Tensor weight = random_tensor({4, 3, 3, 3}, DType::Float64, -1.0, 1.0, 2);
  const Tensor bias = random_tensor({4}, DType::Float64, -1.0, 1.0, 3);
  const Tensor targets = random_integers({2}, 0, 5);
  Recorder recorder;
  {
    const OpObserverGuard guard(&recorder);
    const Tensor y = conv2d(x, weight, bias, {2, 1}, {1, 1}, {1, 2}, 1);
    const Tensor pooled = max_pool2d(y, {2, 2}, {1, 1}, {1, 0});
    const Tensor normed = layer_norm(pooled, {pooled.size(-1)}, {}, {}, 1e-3);
    const Tensor flat = sum(normed, {2, 3}, /*keepdim=*/false);  // (2, 4)
    const Tensor scores = clamp(mul(flat, 2.5), -1.0, 1.0);
    cross_entropy(cat({scores, scores}, 1), targets, /*ignore_index=*/3);
  }
  ASSERT_EQ(recorder.calls.size(), 8u);
  for (const RecordedCall& call : recorder.calls) {
    const OpOutputs replayed = dispatch(op_entry(call.kind), call.inputs, call.attributes);
    ASSERT_EQ(replayed.size(), call.outputs.size()) << call.kind;
    for (std::size_t i = 0; i < replayed.size(); ++i) {
      EXPECT_EQ(replayed[i].sizes(), call.outputs[i].sizes()) << call.kind << " output " << i;
      EXPECT_EQ(replayed[i].dtype(), call.outputs[i].dtype()) << call.kind << " output " << i;
      // The same kernel on the same inputs: the same bits.
      EXPECT_EQ(elements(replayed[i]), elements(call.outputs[i])) << call.kind << " output " << i;
    }
  }
}

}  // namespace
}  // namespace grove::ops
