// The dispatch point: op observers (the hook for autograd and tracing), the common checks, and
// ops captured on the CPU stream replaying like eager.
#include "ops/dispatch.h"

#include <thread>

#include "core/core_observer.h"
#include "core/device_graph.h"
#include "op_test_util.h"
#include "ops/attributes.h"
#include "ops/elementwise.h"
#include "ops/layer_norm.h"
#include "ops/op_table.h"

namespace grove::ops {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using testing::random_tensor;

// Remembers what it saw.
class RecordingObserver final : public OpObserver {
 public:
  struct Seen {
    OpKind kind;
    std::vector<Tensor> inputs;
    std::vector<Tensor> outputs;
    bool has_scalar;
  };
  void on_op(const OpCall& call, const OpOutputs& outputs) override {
    seen.push_back({call.kind,
                    {call.inputs.begin(), call.inputs.end()},
                    {outputs.span().begin(), outputs.span().end()},
                    call.attributes.has_scalar});
  }
  std::vector<Seen> seen;
};

TEST(Dispatch, ObserversSeeEveryOpWithInputsAndOutputsInOrder) {
  Tensor a = random_tensor({2, 3});
  Tensor b = random_tensor({3});
  RecordingObserver observer;
  Tensor c, d;
  {
    OpObserverGuard guard(&observer);
    c = add(a, b);
    d = exp(c * 2.0);
  }
  Tensor e = neg(d);  // after the guard: not seen
  ASSERT_EQ(observer.seen.size(), 3u);
  EXPECT_EQ(observer.seen[0].kind, OpKind::Add);
  EXPECT_TRUE(observer.seen[0].inputs[0].is_alias_of(a));
  EXPECT_TRUE(observer.seen[0].inputs[1].is_alias_of(b));
  EXPECT_TRUE(observer.seen[0].outputs[0].is_alias_of(c));
  EXPECT_EQ(observer.seen[1].kind, OpKind::Mul);
  EXPECT_TRUE(observer.seen[1].has_scalar);
  EXPECT_EQ(observer.seen[2].kind, OpKind::Exp);
  EXPECT_TRUE(observer.seen[2].outputs[0].is_alias_of(d));
}

TEST(Dispatch, SeveralObserversRunInRegistrationOrder) {
  std::vector<int> order;
  struct Tagger final : OpObserver {
    Tagger(std::vector<int>& order, int tag) : order(order), tag(tag) {}
    void on_op(const OpCall&, const OpOutputs&) override { order.push_back(tag); }
    std::vector<int>& order;
    int tag;
  };
  Tagger first(order, 1), second(order, 2);
  OpObserverGuard guard_first(&first);
  OpObserverGuard guard_second(&second);
  relu(zeros({1}));
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(Dispatch, RemovingAnUnknownObserverIsAnError) {
  RecordingObserver observer;
  EXPECT_THAT(error_of([&] { remove_op_observer(&observer); }), HasSubstr("not registered"));
}

// Op observers are per thread (Note [Op observers]): a data-loader thread's ops never reach a
// trace being recorded on another thread.
TEST(Dispatch, AnObserverSeesOnlyTheOpsOfItsOwnThread) {
  const Tensor x = random_tensor({2, 3});
  RecordingObserver main_observer;
  RecordingObserver worker_observer;
  const OpObserverGuard guard(&main_observer);
  std::thread worker([&] {
    (void)exp(x);  // seen by nobody
    const OpObserverGuard worker_guard(&worker_observer);
    (void)neg(x);
    (void)relu(x);
  });
  worker.join();
  EXPECT_TRUE(main_observer.seen.empty());
  ASSERT_EQ(worker_observer.seen.size(), 2u);
  EXPECT_EQ(worker_observer.seen[0].kind, OpKind::Neg);
  EXPECT_EQ(worker_observer.seen[1].kind, OpKind::Relu);
  (void)add(x, x);
  ASSERT_EQ(main_observer.seen.size(), 1u);
  EXPECT_EQ(main_observer.seen[0].kind, OpKind::Add);
  EXPECT_EQ(worker_observer.seen.size(), 2u);
}

TEST(Dispatch, AnObserverIsRemovedOnTheThreadThatAddedIt) {
  RecordingObserver observer;
  const OpObserverGuard guard(&observer);
  std::string error;
  std::thread([&] { error = error_of([&] { remove_op_observer(&observer); }); }).join();
  EXPECT_THAT(error, HasSubstr("remove_op_observer: that observer is not registered on this "
                               "thread (observers are per thread"));
}

constexpr InputSpec kOneInput[] = {{"x"}};
void infer_same_as_input(const OpCall& call, OutputSpecs& outputs);

// A kernel that makes views and copies of its input and writes its output through core.
void kernel_with_internal_views(const OpCall& call, const OpOutputs& outputs) {
  outputs[0].copy_(call.input(0).t().contiguous().t().to(DType::Float64));
  outputs[0].narrow(0, 0, 1).fill_(-1);
}

// What a kernel does through core is its own business: core observers see nothing of it, op
// observers see the op (Note [Op observers]).
TEST(Dispatch, CoreObserversSeeNothingFromInsideAKernel) {
  struct CountingCoreObserver final : CoreObserver {
    void on_derived(const Tensor&, const Tensor&, DerivedKind, IntArrayRef) override { ++events; }
    void before_write(const CoreWrite&) override { ++events; }
    void on_write(const CoreWrite&) override { ++events; }
    int events = 0;
  } core_observer;
  RecordingObserver op_observer;
  const OpEntry entry{.kind = OpKind::Relu,
                      .inputs = kOneInput,
                      .infer = infer_same_as_input,
                      .cpu = kernel_with_internal_views,
                      .cuda = nullptr};
  const Tensor x = from_vector<float>({1, 2, 3, 4}, {2, 2});
  OpOutputs outputs;
  {
    const CoreObserverGuard core_guard(&core_observer);
    const OpObserverGuard op_guard(&op_observer);
    outputs = dispatch(entry, {x});
    EXPECT_EQ(core_observer.events, 0);
    (void)outputs[0].t();  // outside the kernel: seen
  }
  EXPECT_EQ(core_observer.events, 1);
  ASSERT_EQ(op_observer.seen.size(), 1u);
  EXPECT_TRUE(op_observer.seen[0].outputs[0].is_alias_of(outputs[0]));
  EXPECT_EQ(outputs[0].to_vector<float>(), (std::vector<float>{-1, -1, 3, 4}));
}

void infer_same_as_input(const OpCall& call, OutputSpecs& outputs) {
  outputs.add(call.input(0).sizes(), call.input(0).dtype());
}

TEST(Dispatch, AnOpWithoutAKernelForTheDeviceIsAClearError) {
  const OpEntry no_kernel{.kind = OpKind::Relu,
                          .inputs = kOneInput,
                          .infer = infer_same_as_input,
                          .cpu = nullptr,
                          .cuda = nullptr};
  EXPECT_THAT(error_of([&] { dispatch(no_kernel, {zeros({2})}); }),
              HasSubstr("relu: there is no kernel for cpu in this build (inputs: float32[2])"));
}

// dispatch_into: the kernel writes the destination, which is returned with its version bumped;
// a destination of another shape, dtype or layout, one that shares memory with an input or
// another destination, or more destinations than outputs are refused before any kernel runs, and
// the message names what it got. An op with several outputs writes those it is given.
TEST(Dispatch, DispatchIntoWritesTheDestinationOrRefusesClearly) {
  const OpEntry& add_entry = op_entry(OpKind::Add);
  const Tensor a = random_tensor({2, 3}, DType::Float32, -1.0, 1.0, 1);
  const Tensor b = random_tensor({2, 3}, DType::Float32, -1.0, 1.0, 2);
  const Tensor destination = zeros({2, 3});
  const std::uint64_t version = destination.version();
  const OpOutputs outputs = dispatch_into(add_entry, {a, b}, {}, destination);
  EXPECT_TRUE(outputs[0].is_alias_of(destination));
  EXPECT_EQ(destination.version(), version + 1);
  EXPECT_EQ(destination.to_vector<float>(), add(a, b).to_vector<float>());

  const std::vector<float> untouched = destination.to_vector<float>();
  EXPECT_THAT(error_of([&] {
                dispatch_into(add_entry, {a, b}, {}, zeros({3, 2}));
              }),
              HasSubstr("dispatch_into: destination 0 must be a contiguous float32[2, 3] on "
                        "cpu, but got float32[3, 2] on cpu"));
  EXPECT_THAT(error_of([&] {
                dispatch_into(add_entry, {a, b}, {}, zeros({2, 3}, DType::Float64));
              }),
              HasSubstr("but got float64[2, 3]"));
  EXPECT_THAT(error_of([&] {
                dispatch_into(add_entry, {a, b}, {}, zeros({3, 2}).t());
              }),
              HasSubstr("but got float32[2, 3] (strided)"));
  EXPECT_THAT(error_of([&] {
                dispatch_into(add_entry, {destination, b}, {}, destination);
              }),
              HasSubstr("dispatch_into: destination 0 shares memory with an input"));
  EXPECT_THAT(error_of([&] {
                dispatch_into(op_entry(OpKind::AddInplace), {a, b}, {}, zeros({2, 3}));
              }),
              HasSubstr("dispatch_into: the op writes its first input in place"));
  EXPECT_EQ(destination.to_vector<float>(), untouched);
  // max over rows: values and indices. Output 1 only, then both; output 0 is allocated when
  // its destination is undefined.
  const OpAttributes max_over_rows = ReduceAttributes{.dims = {1}}.to_attributes();
  const OpOutputs expected = dispatch(op_entry(OpKind::Max), {a}, max_over_rows);
  const Tensor indices = zeros({2}, DType::Int64);
  const Tensor only_indices[] = {Tensor(), indices};
  const OpOutputs some = dispatch_into(op_entry(OpKind::Max), {a}, max_over_rows, only_indices);
  EXPECT_FALSE(some[0].is_alias_of(indices));
  EXPECT_TRUE(some[1].is_alias_of(indices));
  EXPECT_EQ(some[0].to_vector<float>(), expected[0].to_vector<float>());
  EXPECT_EQ(indices.to_vector<std::int64_t>(), expected[1].to_vector<std::int64_t>());
  const Tensor values = zeros({2});
  const Tensor both[] = {values, indices};
  const std::uint64_t indices_version = indices.version();
  dispatch_into(op_entry(OpKind::Max), {a}, max_over_rows, both);
  EXPECT_EQ(values.to_vector<float>(), expected[0].to_vector<float>());
  EXPECT_EQ(indices.version(), indices_version + 1);
  const Tensor three[] = {values, indices, zeros({2})};
  EXPECT_THAT(error_of([&] { dispatch_into(op_entry(OpKind::Max), {a}, max_over_rows, three); }),
              HasSubstr("dispatch_into: the op has 2 outputs, but got 3 destinations"));
  // layer_norm_backward: grad_input, grad_weight, grad_bias; two destinations on one buffer.
  const LayerNormResult stats = layer_norm_with_stats(a, {3});
  const OpAttributes norm = LayerNormAttributes{{3}, 1e-5, false}.to_attributes();
  const Tensor buffer = zeros({6});
  const Tensor overlapping[] = {Tensor(), buffer.narrow(0, 0, 3), buffer.narrow(0, 3, 3)};
  EXPECT_THAT(error_of([&] {
                dispatch_into(op_entry(OpKind::LayerNormBackward), {b, a, stats.mean, stats.rstd},
                              norm, overlapping);
              }),
              HasSubstr("dispatch_into: destinations 1 and 2 share memory"));
}

TEST(Dispatch, DescribeInputsNamesDtypesShapesAndScalars) {
  const Tensor inputs[] = {zeros({2, 3}), zeros({}, DType::Int64)};
  OpAttributes attributes;
  attributes.has_scalar = true;
  attributes.scalar = 2.5;
  const OpCall call{OpKind::Add, inputs, attributes};
  EXPECT_EQ(describe_inputs(call), "float32[2, 3], int64[], scalar 2.5");
}

TEST(Dispatch, OpNamesFollowTheTable) {
  EXPECT_EQ(op_name(OpKind::Add), "add");
  EXPECT_EQ(op_name(OpKind::CrossEntropy), "cross_entropy");
  EXPECT_EQ(op_name(OpKind::Dropout), "dropout");
}

// Ops launched on a capturing stream are recorded; replaying with new values written into the
// same input buffers gives what eager gives.
TEST(Dispatch, CapturedOpsReplayLikeEager) {
  auto model = [](const Tensor& x, const Tensor& w) {
    return sigmoid(add(mul(x, w), 1.0)) - relu(x);
  };
  Tensor x = random_tensor({4, 8}, DType::Float32, -1, 1, 1);
  Tensor w = random_tensor({8}, DType::Float32, -1, 1, 2);
  Stream stream = new_stream(kCPU);
  DeviceGraph graph(kCPU);
  Tensor captured;
  {
    StreamGuard guard(stream);
    graph.begin_capture(stream);
    captured = model(x, w);
    graph.end_capture();
  }
  EXPECT_GT(graph.num_nodes(), 0u);
  for (unsigned seed = 10; seed < 13; ++seed) {
    x.copy_(random_tensor({4, 8}, DType::Float32, -1, 1, seed));
    graph.replay();
    EXPECT_EQ(captured.to_vector<float>(), model(x, w).to_vector<float>()) << "seed " << seed;
  }
}

}  // namespace
}  // namespace grove::ops
