// attention and attention_backward of bfloat16 and float16 through cuDNN's fused (flash)
// attention, built with the header-only cudnn-frontend graph API. See ops/cuda/attention_cudnn.h.
//
// Note [Fused attention through cuDNN]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// For 16-bit inputs the fused kernels of cuDNN (flash attention: tiles of queries and keys in
// shared memory, the scores never written out, the tensor cores for both products) do what the
// hand-written kernels of ops/cuda/attention.cu, a warp per row in float32 or float64, cannot:
// at GPT-2 small's shape they are the difference between attention dominating the step and
// attention being a few percent of it. The semantics are grove's (ops/attention.h):
//   - q, k, v, out, grad are (B, T, H, D) in memory: cuDNN's logical (b, h, s, d) dims take
//     their strides as they are (the GPT's q, k and v are strided views of one projection);
//     only the head dim must be contiguous (stride 1), as cuDNN requires;
//   - lse is float32 (B, H, T): cuDNN's softmax statistics ("Stats", (b, h, s, 1)), the
//     log-sum-exp of each row of scaled scores, which the backward takes back;
//   - the causal mask is cuDNN's top-left diagonal band (key u visible from query t when u <= t);
//   - the products accumulate in float32; the probabilities are rounded to the inputs' dtype
//     before they multiply v, as every flash attention does: results differ from the float32
//     composition by about the dtype's epsilon (the parity test's bfloat16 tolerance).
// A call cuDNN does not take (a head width it has no kernel for, strides it refuses, a build
// without the frontend) returns false, and the caller runs the float32 kernels on widened
// copies (Note [Reduced-precision compute]).
//
// Graphs are built once per (device, thread, direction, dtype, sizes, strides, causal, scale)
// and kept for the thread's life, like the convolution plans: building one asks cuDNN's
// heuristics and compiles kernels (milliseconds), executing a built one costs a few
// microseconds. Execution takes the device's current stream (bound to the handle) and a
// workspace from the caching allocator, so a captured step records it like any kernel.
#include "ops/cuda/attention_cudnn.h"

#ifdef GROVE_HAS_CUDNN_FRONTEND

#define CUDNN_FRONTEND_SKIP_JSON_LIB
#include <cudnn_frontend.h>

#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/cuda/cuda_device.h"
#include "ops/attributes.h"
#include "ops/cuda/cudnn_handle.h"

namespace grove::ops::cuda {
namespace {

namespace fe = cudnn_frontend;

// The uids of the graphs' tensors (the variant pack's keys).
enum Uid : std::int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV };

// (b, h, s, d) dims and strides of a (B, T, H, D) tensor.
std::vector<std::int64_t> bhsd_dims(const Tensor& t) {
  return {t.size(0), t.size(2), t.size(1), t.size(3)};
}
std::vector<std::int64_t> bhsd_strides(const Tensor& t) {
  return {t.stride(0), t.stride(2), t.stride(1), t.stride(3)};
}

// Everything a built graph depends on.
using GraphKey = std::tuple<int, bool, DType, std::vector<std::int64_t>, bool, double>;

struct BuiltGraph {
  std::shared_ptr<fe::graph::Graph> graph;
  std::int64_t workspace_bytes = 0;
  bool usable = false;  // false: cuDNN refused the configuration (kept, so it is asked once)
};

// The key's shape part: the dims, then every tensor's strides, in uid order.
std::vector<std::int64_t> shape_key(std::initializer_list<const Tensor*> tensors) {
  std::vector<std::int64_t> key = bhsd_dims(**tensors.begin());
  for (const Tensor* t : tensors) {
    const std::vector<std::int64_t> strides = bhsd_strides(*t);
    key.insert(key.end(), strides.begin(), strides.end());
  }
  return key;
}

fe::DataType_t fe_type(DType dtype) {
  return dtype == DType::BFloat16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF;
}

std::shared_ptr<fe::graph::Graph> new_graph(DType dtype) {
  auto graph = std::make_shared<fe::graph::Graph>();
  graph->set_io_data_type(fe_type(dtype))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return graph;
}

std::shared_ptr<fe::graph::Tensor_attributes> input(fe::graph::Graph& graph, const char* name,
                                                    Uid uid, const Tensor& t) {
  return graph.tensor(fe::graph::Tensor_attributes()
                          .set_name(name)
                          .set_uid(uid)
                          .set_dim(bhsd_dims(t))
                          .set_stride(bhsd_strides(t)));
}

void mark_output(const std::shared_ptr<fe::graph::Tensor_attributes>& tensor, Uid uid,
                 const Tensor& t) {
  tensor->set_output(true).set_uid(uid).set_dim(bhsd_dims(t)).set_stride(bhsd_strides(t));
}

void mark_stats(const std::shared_ptr<fe::graph::Tensor_attributes>& tensor, const Tensor& lse) {
  // lse is (B, H, T) contiguous: as (b, h, s, 1).
  tensor->set_output(true)
      .set_uid(kStats)
      .set_data_type(fe::DataType_t::FLOAT)
      .set_dim({lse.size(0), lse.size(1), lse.size(2), 1})
      .set_stride({lse.stride(0), lse.stride(1), lse.stride(2), 1});
}

// Builds `graph` for `handle`; usable only if every stage succeeded.
BuiltGraph build(std::shared_ptr<fe::graph::Graph> graph, cudnnHandle_t handle) {
  BuiltGraph built;
  built.graph = std::move(graph);
  if (!built.graph->build(handle, {fe::HeurMode_t::A}).is_good()) return built;
  if (!built.graph->get_workspace_size(built.workspace_bytes).is_good()) return built;
  built.usable = true;
  return built;
}

// The thread's built graphs (one cache per thread: a handle and its graphs are not shared).
BuiltGraph& cached(const GraphKey& key, const std::function<BuiltGraph()>& make) {
  thread_local std::map<GraphKey, BuiltGraph> graphs;
  auto found = graphs.find(key);
  if (found == graphs.end()) found = graphs.emplace(key, make()).first;
  return found->second;
}

// cuDNN's fused attention reads the head dim with unit stride, in whole 16-byte vectors.
bool layout_ok(const Tensor& t) {
  return t.stride(3) == 1 && t.size(3) % 8 == 0 &&
         reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 16 == 0 && t.stride(0) % 8 == 0 &&
         t.stride(1) % 8 == 0 && t.stride(2) % 8 == 0;
}

bool runs(const BuiltGraph& built, std::unordered_map<std::int64_t, void*>& pack, Device device) {
  const Tensor workspace =
      built.workspace_bytes > 0
          ? empty({built.workspace_bytes}, TensorOptions(DType::Bool).device(device))
          : Tensor();
  fe::error_t status = built.graph->execute(cudnn_handle(device), pack,
                                            workspace.defined() ? workspace.data_ptr() : nullptr);
  GROVE_CHECK(status.is_good(), "attention: cuDNN's fused attention failed to run (",
              status.get_message(), ")");
  return true;
}

}  // namespace

bool cudnn_attention(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& q = call.input(0);
  const Tensor& k = call.input(1);
  const Tensor& v = call.input(2);
  const Tensor& out = outputs[0];
  const Tensor& lse = outputs[1];
  if (!layout_ok(q) || !layout_ok(k) || !layout_ok(v) || !layout_ok(out)) return false;
  const AttentionAttributes a = AttentionAttributes::from(call.attributes);
  const Device device = q.device();
  cuda_backend::DeviceGuard guard(device);
  cudnnHandle_t handle = cudnn_handle(device);
  const GraphKey key{device.index, true,   q.dtype(), shape_key({&q, &k, &v, &out}),
                     a.causal,     a.scale};
  BuiltGraph& built = cached(key, [&] {
    std::shared_ptr<fe::graph::Graph> graph = new_graph(q.dtype());
    const auto sdpa = fe::graph::SDPA_attributes()
                          .set_name("attention")
                          .set_generate_stats(true)
                          .set_causal_mask(a.causal)
                          .set_attn_scale(static_cast<float>(a.scale));
    auto [o, stats] = graph->sdpa(input(*graph, "q", kQ, q), input(*graph, "k", kK, k),
                                  input(*graph, "v", kV, v), sdpa);
    mark_output(o, kO, out);
    mark_stats(stats, lse);
    return build(std::move(graph), handle);
  });
  if (!built.usable) return false;
  std::unordered_map<std::int64_t, void*> pack = {
      {kQ, q.data_ptr()},   {kK, k.data_ptr()},       {kV, v.data_ptr()},
      {kO, out.data_ptr()}, {kStats, lse.data_ptr()},
  };
  return runs(built, pack, device);
}

bool cudnn_attention_backward(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& grad = call.input(0);
  const Tensor& q = call.input(1);
  const Tensor& k = call.input(2);
  const Tensor& v = call.input(3);
  const Tensor& out = call.input(4);
  const Tensor& lse = call.input(5);
  for (const Tensor* t : {&grad, &q, &k, &v, &out, &outputs[0], &outputs[1], &outputs[2]}) {
    if (!layout_ok(*t)) return false;
  }
  if (!lse.is_contiguous()) return false;
  const AttentionAttributes a = AttentionAttributes::from(call.attributes);
  const Device device = q.device();
  cuda_backend::DeviceGuard guard(device);
  cudnnHandle_t handle = cudnn_handle(device);
  const GraphKey key{
      device.index, false,
      q.dtype(),    shape_key({&q, &k, &v, &out, &grad, &outputs[0], &outputs[1], &outputs[2]}),
      a.causal,     a.scale};
  BuiltGraph& built = cached(key, [&] {
    std::shared_ptr<fe::graph::Graph> graph = new_graph(q.dtype());
    const auto options = fe::graph::SDPA_backward_attributes()
                             .set_name("attention_backward")
                             .set_causal_mask(a.causal)
                             .set_attn_scale(static_cast<float>(a.scale));
    auto stats = graph->tensor(fe::graph::Tensor_attributes()
                                   .set_name("stats")
                                   .set_uid(kStats)
                                   .set_data_type(fe::DataType_t::FLOAT)
                                   .set_dim({lse.size(0), lse.size(1), lse.size(2), 1})
                                   .set_stride({lse.stride(0), lse.stride(1), lse.stride(2), 1}));
    auto [dq, dk, dv] = graph->sdpa_backward(input(*graph, "q", kQ, q), input(*graph, "k", kK, k),
                                             input(*graph, "v", kV, v), input(*graph, "o", kO, out),
                                             input(*graph, "do", kDO, grad), stats, options);
    mark_output(dq, kDQ, outputs[0]);
    mark_output(dk, kDK, outputs[1]);
    mark_output(dv, kDV, outputs[2]);
    return build(std::move(graph), handle);
  });
  if (!built.usable) return false;
  std::unordered_map<std::int64_t, void*> pack = {
      {kQ, q.data_ptr()},           {kK, k.data_ptr()},           {kV, v.data_ptr()},
      {kO, out.data_ptr()},         {kDO, grad.data_ptr()},       {kStats, lse.data_ptr()},
      {kDQ, outputs[0].data_ptr()}, {kDK, outputs[1].data_ptr()}, {kDV, outputs[2].data_ptr()},
  };
  return runs(built, pack, device);
}

}  // namespace grove::ops::cuda

#else  // a build without the cudnn-frontend headers: the float32 kernels serve every call

namespace grove::ops::cuda {

bool cudnn_attention(const OpCall&, const OpOutputs&) {
  return false;
}
bool cudnn_attention_backward(const OpCall&, const OpOutputs&) {
  return false;
}

}  // namespace grove::ops::cuda

#endif
