// Collectives: argument checks, the engine registry and the user functions. See ops/collective.h.
//
// The "kernel" of a collective is the same on both devices: look up the group's engine for the
// tensor's device type and hand it the memory and the current stream. The engine (Gloo, NCCL in
// dist/) does the work on that stream, so unlike other ops there is no ops/cpu or ops/cuda file.
// Attributes: ints = {group, what}, where `what` is the ReduceOp of all_reduce_ and the root of
// broadcast_ (unused by all_gather); the group is resolved when the op is called, so a traced
// call replays on the group it was traced with.
#include "ops/collective.h"

#include <map>
#include <mutex>

#include "ops/dispatch.h"
#include "ops/op_table.h"

namespace grove::ops {
namespace {

struct Registry {
  std::mutex mutex;
  int next_group = 0;
  int default_group = -1;
  std::map<std::pair<int, DeviceType>, CollectiveEngine*> engines;
};

Registry& registry() {
  static Registry instance;
  return instance;
}

CollectiveEngine& engine_for(const OpCall& call, const Tensor& x) {
  GROVE_OP_CHECK(call, call.attributes.ints.size() == 2,
                 "expected the attributes {group, reduce op or root}, but got ",
                 call.attributes.ints.size(),
                 " integers; call ops::all_reduce_, broadcast_ or "
                 "all_gather rather than dispatching the entry by hand");
  const int group = static_cast<int>(call.attributes.ints[0]);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const auto found = r.engines.find({group, x.device().type});
  GROVE_OP_CHECK(call, found != r.engines.end(), "no process group ", group, " has an engine for ",
                 x.device(),
                 " tensors; call dist::init_process_group() first (it creates Gloo for CPU "
                 "tensors and NCCL for CUDA tensors), and keep the group alive while its "
                 "collectives run");
  return *found->second;
}

// What every collective needs: a contiguous tensor and an engine for its group and device.
const CollectiveEngine& check_common(const OpCall& call) {
  const Tensor& x = call.input(0);
  GROVE_OP_CHECK(call, x.is_contiguous(),
                 "expected a contiguous tensor (collectives send its memory as one block), but "
                 "got strides ",
                 x.strides(), "; call contiguous() first");
  return engine_for(call, x);
}

void infer_all_reduce(const OpCall& call, OutputSpecs& outputs) {
  check_common(call);
  const std::int64_t op_number = call.attributes.ints[1];
  GROVE_OP_CHECK(call, op_number >= 0 && op_number <= static_cast<std::int64_t>(ReduceOp::kMin),
                 "expected a reduce op (0 sum, 1 mean, 2 max, 3 min), but got ", op_number);
  const auto op = static_cast<ReduceOp>(op_number);
  GROVE_OP_CHECK(call, op != ReduceOp::kMean || is_floating_point(call.input(0).dtype()),
                 "mean needs a floating dtype (float32 or float64), but got ",
                 call.input(0).dtype(), "; use sum and divide yourself");
  outputs.in_place = true;
}

void infer_broadcast(const OpCall& call, OutputSpecs& outputs) {
  const CollectiveEngine& engine = check_common(call);
  const std::int64_t root = call.attributes.ints[1];
  GROVE_OP_CHECK(call, root >= 0 && root < engine.world_size(), "expected a root rank in [0, ",
                 engine.world_size(), "), but got ", root);
  outputs.in_place = true;
}

void infer_all_gather(const OpCall& call, OutputSpecs& outputs) {
  const CollectiveEngine& engine = check_common(call);
  const Tensor& x = call.input(0);
  GROVE_OP_CHECK(call, x.dim() >= 1,
                 "expected a tensor of at least one dimension (ranks are stacked along dim 0), "
                 "but got a 0-d tensor; reshape it to (1)");
  DimVector sizes(x.sizes());
  sizes[0] *= engine.world_size();
  outputs.add(sizes, x.dtype());
}

// Every rank makes the same calls, so an empty tensor is empty everywhere: nothing to send.
void run_all_reduce(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& x = outputs[0];
  if (x.numel() == 0) return;
  engine_for(call, x).all_reduce(x.data_ptr(), x.numel(), x.dtype(),
                                 static_cast<ReduceOp>(call.attributes.ints[1]),
                                 current_stream(x.device()));
}

void run_broadcast(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& x = outputs[0];
  if (x.numel() == 0) return;
  engine_for(call, x).broadcast(x.data_ptr(), x.numel(), x.dtype(),
                                static_cast<int>(call.attributes.ints[1]),
                                current_stream(x.device()));
}

void run_all_gather(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& x = call.input(0);
  if (x.numel() == 0) return;
  engine_for(call, x).all_gather(x.data_ptr(), outputs[0].data_ptr(), x.numel(), x.dtype(),
                                 current_stream(x.device()));
}

// The same run_* serves CUDA tensors in builds with the CUDA backend (the engine is NCCL's);
// without it there are no CUDA tensors and the entries say so, as every op's do.
#ifdef GROVE_HAS_CUDA
constexpr KernelFn kAllReduceCuda = run_all_reduce;
constexpr KernelFn kBroadcastCuda = run_broadcast;
constexpr KernelFn kAllGatherCuda = run_all_gather;
#else
constexpr KernelFn kAllReduceCuda = nullptr;
constexpr KernelFn kBroadcastCuda = nullptr;
constexpr KernelFn kAllGatherCuda = nullptr;
#endif
// ints = {group, reduce op or root}.
std::string describe_all_reduce(const OpAttributes& a) {
  if (a.ints.size() != 2) return "";
  return str("group=", a.ints[0], ", op=", reduce_op_name(static_cast<ReduceOp>(a.ints[1])));
}
std::string describe_broadcast(const OpAttributes& a) {
  if (a.ints.size() != 2) return "";
  return str("group=", a.ints[0], ", root=", a.ints[1]);
}
std::string describe_all_gather(const OpAttributes& a) {
  if (a.ints.size() != 2) return "";
  return str("group=", a.ints[0]);
}

// Collectives move any dtype.
constexpr InputSpec kCollectiveInputs[] = {{"x", InputDTypes::Any}};
constexpr OpEntry kAllReduce{.kind = OpKind::AllReduce,
                             .inputs = kCollectiveInputs,
                             .infer = infer_all_reduce,
                             .cpu = run_all_reduce,
                             .cuda = kAllReduceCuda,
                             .describe = describe_all_reduce};
constexpr OpEntry kBroadcast{.kind = OpKind::Broadcast,
                             .inputs = kCollectiveInputs,
                             .infer = infer_broadcast,
                             .cpu = run_broadcast,
                             .cuda = kBroadcastCuda,
                             .describe = describe_broadcast};
constexpr OpEntry kAllGather{.kind = OpKind::AllGather,
                             .inputs = kCollectiveInputs,
                             .infer = infer_all_gather,
                             .cpu = run_all_gather,
                             .cuda = kAllGatherCuda,
                             .describe = describe_all_gather};

int resolve(int group) {
  if (group >= 0) return group;
  const int fallback = default_collective_group();
  GROVE_CHECK(fallback >= 0,
              "no default process group: call dist::init_process_group() (it reads "
              "GROVE_RANK, GROVE_WORLD_SIZE, GROVE_MASTER_ADDR and GROVE_MASTER_PORT) before a "
              "collective");
  return fallback;
}

OpAttributes collective_attributes(int group, std::int64_t what) {
  OpAttributes attributes;
  attributes.ints = {resolve(group), what};
  return attributes;
}

}  // namespace

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMean:
      return "mean";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
  }
  return "?";
}

int new_collective_group() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.next_group++;
}

void register_collective_engine(int group, DeviceType device_type, CollectiveEngine* engine) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.engines[{group, device_type}] = engine;
}

void unregister_collective_engine(int group, DeviceType device_type) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.engines.erase({group, device_type});
}

int default_collective_group() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.default_group;
}

void set_default_collective_group(int group) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.default_group = group;
}

const Tensor& all_reduce_(const Tensor& x, ReduceOp op, int group) {
  dispatch(kAllReduce, {x}, collective_attributes(group, static_cast<std::int64_t>(op)));
  return x;
}

const Tensor& broadcast_(const Tensor& x, int root, int group) {
  dispatch(kBroadcast, {x}, collective_attributes(group, root));
  return x;
}

Tensor all_gather(const Tensor& x, int group) {
  return dispatch(kAllGather, {x}, collective_attributes(group, 0))[0];
}

std::span<const OpEntry> collective_entries() {
  static constexpr OpEntry kEntries[] = {kAllReduce, kBroadcast, kAllGather};
  return kEntries;
}

}  // namespace grove::ops
