// CUDA kernels of conv2d, conv2d_backward_input and conv2d_backward_weight: cuDNN's convolution
// calls (cudnnConvolutionForward, ...BackwardData, ...BackwardFilter), one per op, on NCHW
// contiguous tensors; ops/cpu/conv.cpp and ops/cpu/conv_backward.cpp are the reference. The bias
// is added by cudnnAddTensor after the convolution. Library calls only (and stream_hold.cu's spin
// for benchmark mode), compiled by g++.
//
// Note [cuDNN convolution plans]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A plan is what one convolution needs besides its data: the tensor, filter and convolution
// descriptors, the algorithm and its workspace size. Plans are keyed by (op, dtype, math type,
// device, input sizes, weight sizes, stride, padding, dilation, groups), made on first use and
// kept for the process's life (a program sees few conv shapes), in one map behind a mutex; a
// plan is read-only once made, so threads share it (each with its own handle).
// - The candidates are cuDNN's heuristics (cudnnGet*Algorithm_v7): host-only queries, so a plan
//   can be made even while a graph captures. Of those cuDNN supports for the shape (its
//   workspace query succeeds, at most 1 GiB), deterministic ones are kept (same bits on every
//   run): every forward algorithm is, while backward data's ALGO_0 and backward filter's ALGO_0
//   and ALGO_3 add with atomics and are dropped when a deterministic candidate exists (otherwise
//   all are kept).
// - By default the first kept candidate (the heuristics' rank) is the plan's: no op ever
//   synchronises the host. Benchmark mode (set_conv_benchmark in ops/conv.h) times every kept
//   candidate instead, on the call's own buffers (one warm-up run, then five between two CUDA
//   events, queued behind a spinning kernel so that only GPU time is measured; only the output,
//   which the call then writes for real, is touched), and takes the fastest (ties within 5% go to
//   the heuristics' rank). That synchronises the host, so it is only done where that is allowed
//   (host_sync_allowed: not while this thread captures). A call inside a capture uses the shape's
//   measured plan if an earlier eager call made one (the usual warm-up), else the heuristic
//   plan; measured and heuristic plans have separate keys. cuDNN's own cudnnFind*AlgorithmEx was
//   tried first and rejected, as was timing without the spin: both
//   measured host launch overhead along with GPU time at the CNN's small shapes, and picked
//   forward algorithms that replay 25% slower in a graph than the heuristics' pick.
// - TF32 (ops/precision.h): with the switch off (the default), float32 convolutions get
//   CUDNN_FMA_MATH, which restricts cuDNN to kernels with plain float32 FMAs; cuDNN 9's default
//   math type would allow TF32 tensor cores on Ampere and newer. With it on, CUDNN_DEFAULT_MATH
//   (or the math type the heuristics name for the chosen algorithm). float64 ignores the switch.
//   The switch is part of the key, so flipping it picks other plans.
// - The workspace is a device tensor from the caching allocator, alive until the call is
//   enqueued: the allocator's stream semantics keep the block from being reused before the
//   stream has run the convolution, and during capture it comes from the capture's private pool.
#include "ops/cuda/conv.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/cuda/cuda_device.h"
#include "core/stream.h"
#include "ops/attributes.h"
#include "ops/conv.h"
#include "ops/cuda/cudnn_handle.h"
#include "ops/cuda/stream_hold.h"
#include "ops/precision.h"

namespace grove::ops::cuda {
namespace {

enum class Direction : std::int64_t { Forward, BackwardData, BackwardFilter };

// The largest workspace an algorithm may ask for; larger ones are passed over.
constexpr std::size_t kMaxWorkspaceBytes = std::size_t{1} << 30;
// More than any cuDNN 9 direction has algorithms (forward: 8, data: 6, filter: 7).
constexpr int kMaxAlgorithms = 16;

// (direction, dtype, tf32, device, measured), input (4), weight (4), geometry (7).
using PlanKey = std::array<std::int64_t, 20>;

// One call's device buffers: x, w and y (written) of the forward; for backward data w, dy and dx
// (written); for backward filter x, dy and dw (written).
struct CallBuffers {
  const void* first;
  const void* second;
  void* written;
};

struct ConvPlan {
  cudnnTensorDescriptor_t input = nullptr;   // x or dx: (N, C, H, W)
  cudnnFilterDescriptor_t weight = nullptr;  // w or dw: (O, C/G, kH, kW)
  cudnnTensorDescriptor_t output = nullptr;  // y or dy: (N, O, Ho, Wo)
  cudnnTensorDescriptor_t bias = nullptr;    // (1, O, 1, 1); forward only
  cudnnConvolutionDescriptor_t convolution = nullptr;
  int algorithm = 0;
  std::size_t workspace_bytes = 0;
};

int to_int(std::int64_t value, const char* op) {
  GROVE_CHECK(value <= INT_MAX, op, " on CUDA: expected sizes below 2^31 (cuDNN's int sizes), ",
              "but got ", value);
  return static_cast<int>(value);
}

cudnnDataType_t cudnn_type(DType dtype) {
  return dtype == DType::Float32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;
}

cudnnTensorDescriptor_t tensor_descriptor(DType dtype, IntArrayRef sizes, const char* op) {
  cudnnTensorDescriptor_t descriptor = nullptr;
  GROVE_CUDNN_CHECK(cudnnCreateTensorDescriptor(&descriptor));
  GROVE_CUDNN_CHECK(cudnnSetTensor4dDescriptor(descriptor, CUDNN_TENSOR_NCHW, cudnn_type(dtype),
                                               to_int(sizes[0], op), to_int(sizes[1], op),
                                               to_int(sizes[2], op), to_int(sizes[3], op)));
  return descriptor;
}

// The math type a plan is made with: see Note [cuDNN convolution plans].
cudnnMathType_t requested_math(DType dtype, bool tf32) {
  return dtype == DType::Float32 && !tf32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
}

// Ranked heuristic candidates of one direction, as (algorithm, math type) pairs.
struct Candidate {
  int algorithm;
  cudnnMathType_t math;
  bool deterministic;
};

template <typename Perf>
int collect(const Perf* perf, int count, Candidate* candidates) {
  int kept = 0;
  for (int i = 0; i < count; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
    candidates[kept++] = {static_cast<int>(perf[i].algo), perf[i].mathType,
                          perf[i].determinism == CUDNN_DETERMINISTIC};
  }
  return kept;
}

int heuristic_candidates(cudnnHandle_t handle, Direction direction, const ConvPlan& plan,
                         Candidate* candidates) {
  int returned = 0;
  switch (direction) {
    case Direction::Forward: {
      cudnnConvolutionFwdAlgoPerf_t perf[kMaxAlgorithms];
      GROVE_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(handle, plan.input, plan.weight,
                                                               plan.convolution, plan.output,
                                                               kMaxAlgorithms, &returned, perf));
      return collect(perf, returned, candidates);
    }
    case Direction::BackwardData: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[kMaxAlgorithms];
      GROVE_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          handle, plan.weight, plan.output, plan.convolution, plan.input, kMaxAlgorithms, &returned,
          perf));
      return collect(perf, returned, candidates);
    }
    case Direction::BackwardFilter: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[kMaxAlgorithms];
      GROVE_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          handle, plan.input, plan.output, plan.convolution, plan.weight, kMaxAlgorithms, &returned,
          perf));
      return collect(perf, returned, candidates);
    }
  }
  return 0;
}

// The workspace `algorithm` needs, or an error status if cuDNN does not support it here.
cudnnStatus_t workspace_size(cudnnHandle_t handle, Direction direction, const ConvPlan& plan,
                             int algorithm, std::size_t* bytes) {
  switch (direction) {
    case Direction::Forward:
      return cudnnGetConvolutionForwardWorkspaceSize(
          handle, plan.input, plan.weight, plan.convolution, plan.output,
          static_cast<cudnnConvolutionFwdAlgo_t>(algorithm), bytes);
    case Direction::BackwardData:
      return cudnnGetConvolutionBackwardDataWorkspaceSize(
          handle, plan.weight, plan.output, plan.convolution, plan.input,
          static_cast<cudnnConvolutionBwdDataAlgo_t>(algorithm), bytes);
    case Direction::BackwardFilter:
      return cudnnGetConvolutionBackwardFilterWorkspaceSize(
          handle, plan.input, plan.output, plan.convolution, plan.weight,
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algorithm), bytes);
  }
  return CUDNN_STATUS_BAD_PARAM;
}

// cuDNN's scaling factors: float for float32 data, double for float64.
struct Scale {
  float one_float = 1.0f, zero_float = 0.0f;
  double one_double = 1.0, zero_double = 0.0;
  bool is_float;
  explicit Scale(DType dtype) : is_float(dtype == DType::Float32) {}
  const void* one() const {
    return is_float ? static_cast<const void*>(&one_float) : static_cast<const void*>(&one_double);
  }
  const void* zero() const {
    return is_float ? static_cast<const void*>(&zero_float)
                    : static_cast<const void*>(&zero_double);
  }
};

// A device buffer of `bytes` from the caching allocator (undefined for 0 bytes).
Tensor workspace(std::size_t bytes, Device device) {
  if (bytes == 0) return {};
  return empty({static_cast<std::int64_t>(bytes)}, TensorOptions(DType::Bool).device(device));
}

// Runs one convolution of `plan` with `algorithm` (the plan's convolution descriptor holds its
// math type) on the handle's stream: out = conv(...) with alpha 1, beta 0.
cudnnStatus_t run_convolution(cudnnHandle_t handle, Direction direction, const ConvPlan& plan,
                              int algorithm, const CallBuffers& buffers, void* space,
                              std::size_t bytes, const Scale& scale) {
  switch (direction) {
    case Direction::Forward:
      return cudnnConvolutionForward(handle, scale.one(), plan.input, buffers.first, plan.weight,
                                     buffers.second, plan.convolution,
                                     static_cast<cudnnConvolutionFwdAlgo_t>(algorithm), space,
                                     bytes, scale.zero(), plan.output, buffers.written);
    case Direction::BackwardData:
      return cudnnConvolutionBackwardData(handle, scale.one(), plan.weight, buffers.first,
                                          plan.output, buffers.second, plan.convolution,
                                          static_cast<cudnnConvolutionBwdDataAlgo_t>(algorithm),
                                          space, bytes, scale.zero(), plan.input, buffers.written);
    case Direction::BackwardFilter:
      return cudnnConvolutionBackwardFilter(
          handle, scale.one(), plan.input, buffers.first, plan.output, buffers.second,
          plan.convolution, static_cast<cudnnConvolutionBwdFilterAlgo_t>(algorithm), space, bytes,
          scale.zero(), plan.weight, buffers.written);
  }
  return CUDNN_STATUS_BAD_PARAM;
}

// An algorithm a plan may use: cuDNN supports it for the shape, with this math type and
// workspace.
struct Usable {
  int algorithm;
  cudnnMathType_t math;
  std::size_t bytes;
};

// Two CUDA events, destroyed with the object.
struct TimingEvents {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  TimingEvents() {
    GROVE_CUDA_CHECK(cudaEventCreate(&start));
    if (const cudaError_t error = cudaEventCreate(&stop); error != cudaSuccess) {
      cudaEventDestroy(start);
      GROVE_CUDA_CHECK(error);
    }
  }
  ~TimingEvents() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  TimingEvents(const TimingEvents&) = delete;
  TimingEvents& operator=(const TimingEvents&) = delete;
};

// Benchmark mode: times every usable algorithm on the call's own buffers (one warm-up run, then
// kTimedRuns between two CUDA events on the current stream, queued behind a 1 ms spin) and
// returns the index of the fastest in GPU time (of those within 5% of it, the first in cuDNN's
// rank). Synchronises the host; see Note [cuDNN convolution plans]. Throws if cuDNN refuses
// every candidate when it runs.
std::size_t fastest(cudnnHandle_t handle, Direction direction, const ConvPlan& plan,
                    const std::vector<Usable>& usable, const CallBuffers& buffers, DType dtype,
                    Device device, const char* op_name) {
  constexpr int kTimedRuns = 5;
  constexpr std::int64_t kHoldMicroseconds = 1000;  // longer than queuing the runs takes
  std::size_t most = 0;
  for (const Usable& u : usable) most = std::max(most, u.bytes);
  const Tensor space = workspace(most, device);
  void* space_data = space.defined() ? space.data_ptr() : nullptr;
  const Scale scale(dtype);
  cudaStream_t stream = cuda_backend::cuda_stream(current_stream(device));
  const TimingEvents events;
  std::vector<float> times(usable.size(), std::numeric_limits<float>::infinity());
  for (std::size_t i = 0; i < usable.size(); ++i) {
    GROVE_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.convolution, usable[i].math));
    auto run = [&] {
      return run_convolution(handle, direction, plan, usable[i].algorithm, buffers, space_data,
                             usable[i].bytes, scale);
    };
    if (run() != CUDNN_STATUS_SUCCESS) continue;  // listed but refused at run time: skip it
    // The timed runs queue up behind a spin of the stream, so the events see GPU time only, not
    // the host's launch overhead (which differs between algorithms and dominates small shapes).
    hold_stream(stream, kHoldMicroseconds);
    GROVE_CUDA_CHECK(cudaEventRecord(events.start, stream));
    for (int r = 0; r < kTimedRuns; ++r) GROVE_CUDNN_CHECK(run());
    GROVE_CUDA_CHECK(cudaEventRecord(events.stop, stream));
    GROVE_CUDA_CHECK(cudaEventSynchronize(events.stop));
    GROVE_CUDA_CHECK(cudaEventElapsedTime(&times[i], events.start, events.stop));
  }
  // Within 5% of the fastest counts as a tie (timing noise), won by cuDNN's higher-ranked pick.
  const float fastest_ms = *std::min_element(times.begin(), times.end());
  GROVE_CHECK(fastest_ms < std::numeric_limits<float>::infinity(), op_name,
              " on CUDA: cuDNN listed ", usable.size(),
              " algorithms for this shape but refused each of them when run");
  std::size_t best = 0;
  while (times[best] > fastest_ms * 1.05f) ++best;
  return best;
}

// measure: the call's buffers for benchmark mode, or null to take the heuristics' first pick.
std::unique_ptr<ConvPlan> make_plan(cudnnHandle_t handle, Direction direction, DType dtype,
                                    bool tf32, IntArrayRef input, IntArrayRef weight,
                                    IntArrayRef output, const Conv2dAttributes& geometry,
                                    const CallBuffers* measure, Device device, const char* op) {
  auto plan = std::make_unique<ConvPlan>();
  plan->input = tensor_descriptor(dtype, input, op);
  plan->output = tensor_descriptor(dtype, output, op);
  GROVE_CUDNN_CHECK(cudnnCreateFilterDescriptor(&plan->weight));
  GROVE_CUDNN_CHECK(cudnnSetFilter4dDescriptor(plan->weight, cudnn_type(dtype), CUDNN_TENSOR_NCHW,
                                               to_int(weight[0], op), to_int(weight[1], op),
                                               to_int(weight[2], op), to_int(weight[3], op)));
  if (direction == Direction::Forward) {
    plan->bias = tensor_descriptor(dtype, DimVector{1, output[1], 1, 1}, op);
  }
  GROVE_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&plan->convolution));
  GROVE_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
      plan->convolution, to_int(geometry.padding[0], op), to_int(geometry.padding[1], op),
      to_int(geometry.stride[0], op), to_int(geometry.stride[1], op),
      to_int(geometry.dilation[0], op), to_int(geometry.dilation[1], op), CUDNN_CROSS_CORRELATION,
      cudnn_type(dtype)));
  GROVE_CUDNN_CHECK(cudnnSetConvolutionGroupCount(plan->convolution, to_int(geometry.groups, op)));
  const cudnnMathType_t math = requested_math(dtype, tf32);
  GROVE_CUDNN_CHECK(cudnnSetConvolutionMathType(plan->convolution, math));

  // cuDNN must agree with grove's output size (ops/conv.cpp's infer).
  int dims[4] = {};
  GROVE_CUDNN_CHECK(
      cudnnGetConvolutionNdForwardOutputDim(plan->convolution, plan->input, plan->weight, 4, dims));
  GROVE_INTERNAL_ASSERT(
      dims[0] == output[0] && dims[1] == output[1] && dims[2] == output[2] && dims[3] == output[3],
      op, ": cuDNN's output size [", dims[0], ", ", dims[1], ", ", dims[2], ", ", dims[3],
      "] differs from ", output);

  Candidate candidates[kMaxAlgorithms];
  const int count = heuristic_candidates(handle, direction, *plan, candidates);
  // The usable candidates in cuDNN's rank order: deterministic ones (pass 0), or if there are
  // none, any (pass 1).
  std::vector<Usable> usable;
  for (int pass = 0; pass < 2 && usable.empty(); ++pass) {
    for (int i = 0; i < count; ++i) {
      if (pass == 0 && !candidates[i].deterministic) continue;
      // With TF32 off, FMA math whatever the heuristics list; see the Note.
      const cudnnMathType_t use = math == CUDNN_FMA_MATH ? math : candidates[i].math;
      GROVE_CUDNN_CHECK(cudnnSetConvolutionMathType(plan->convolution, use));
      std::size_t bytes = 0;
      if (workspace_size(handle, direction, *plan, candidates[i].algorithm, &bytes) ==
              CUDNN_STATUS_SUCCESS &&
          bytes <= kMaxWorkspaceBytes) {
        usable.push_back({candidates[i].algorithm, use, bytes});
      }
    }
  }
  GROVE_CHECK(!usable.empty(), op, " on CUDA: cuDNN offers no algorithm for input ", input,
              ", weight ", weight, ", output ", output, " (", count,
              " heuristic candidates, none usable)");
  const std::size_t chosen =
      measure != nullptr && usable.size() > 1
          ? fastest(handle, direction, *plan, usable, *measure, dtype, device, op)
          : 0;
  GROVE_CUDNN_CHECK(cudnnSetConvolutionMathType(plan->convolution, usable[chosen].math));
  plan->algorithm = usable[chosen].algorithm;
  plan->workspace_bytes = usable[chosen].bytes;
  return plan;
}

// The plan of one convolution, made on first use; see Note [cuDNN convolution plans]. `buffers`
// are the call's, for benchmark mode.
const ConvPlan& find_plan(cudnnHandle_t handle, Direction direction, DType dtype, Device device,
                          IntArrayRef input, IntArrayRef weight, IntArrayRef output,
                          const Conv2dAttributes& geometry, const CallBuffers& buffers,
                          const char* op) {
  const bool tf32 = dtype == DType::Float32 && allow_tf32();
  PlanKey key{static_cast<std::int64_t>(direction), static_cast<std::int64_t>(dtype), tf32,
              device.index, 0};
  for (std::size_t i = 0; i < 4; ++i) {
    key[5 + i] = input[i];
    key[9 + i] = weight[i];
  }
  // The geometry in the order of its attribute ints: stride, padding, dilation, groups.
  for (std::size_t i = 0; i < 2; ++i) {
    key[13 + i] = geometry.stride[i];
    key[15 + i] = geometry.padding[i];
    key[17 + i] = geometry.dilation[i];
  }
  key[19] = geometry.groups;
  static std::mutex mutex;
  static std::map<PlanKey, std::unique_ptr<ConvPlan>> plans;  // never freed: see the Note
  const std::lock_guard<std::mutex> lock(mutex);
  if (conv_benchmark()) {
    PlanKey measured_key = key;
    measured_key[4] = 1;
    const auto found = plans.find(measured_key);
    if (found != plans.end()) return *found->second;
    if (host_sync_allowed(device)) {
      // Made first and stored only once made: if measuring throws, nothing is cached.
      std::unique_ptr<ConvPlan> plan = make_plan(handle, direction, dtype, tf32, input, weight,
                                                 output, geometry, &buffers, device, op);
      return *(plans[measured_key] = std::move(plan));
    }
    // Inside a capture, and never measured: the heuristic plan below.
  }
  const auto found = plans.find(key);
  if (found != plans.end()) return *found->second;
  // Heuristic queries may touch the runtime; relaxed mode lets them run during a capture.
  const cuda_backend::RelaxedCaptureModeGuard relaxed;
  std::unique_ptr<ConvPlan> plan = make_plan(handle, direction, dtype, tf32, input, weight, output,
                                             geometry, nullptr, device, op);
  return *(plans[key] = std::move(plan));
}

void fill_zero(const Tensor& out) {
  GROVE_CUDA_CHECK(cudaMemsetAsync(out.data_ptr(), 0, out.nbytes(),
                                   cuda_backend::cuda_stream(current_stream(out.device()))));
}

void check_dtype(const OpCall& call, DType dtype) {
  GROVE_INTERNAL_ASSERT(dtype == DType::Float32 || dtype == DType::Float64, op_name(call.kind),
                        " reached the CUDA kernel with dtype ", dtype);
}

}  // namespace

// input: (N, C, H, W), weight: (O, C/G, kH, kW), bias: (O) or none -> out: (N, O, Ho, Wo).
void conv2d(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  check_dtype(call, out.dtype());
  if (out.numel() == 0) return;
  const Device device = out.device();
  const cuda_backend::DeviceGuard guard(device);
  cudnnHandle_t handle = cudnn_handle(device);
  const Scale scale(out.dtype());
  const Tensor input = call.input(0).contiguous();
  const Tensor bias = call.inputs.size() == 3 ? call.input(2).contiguous() : Tensor();
  if (input.numel() == 0) {
    // No input channels, or an input plane that is all padding: every output is the bias (or 0).
    fill_zero(out);
    if (bias.defined()) {
      cudnnTensorDescriptor_t bias_descriptor =
          tensor_descriptor(out.dtype(), DimVector{1, out.size(1), 1, 1}, "conv2d");
      cudnnTensorDescriptor_t out_descriptor =
          tensor_descriptor(out.dtype(), out.sizes(), "conv2d");
      const cudnnStatus_t status =
          cudnnAddTensor(handle, scale.one(), bias_descriptor, bias.data_ptr(), scale.one(),
                         out_descriptor, out.data_ptr());
      cudnnDestroyTensorDescriptor(bias_descriptor);
      cudnnDestroyTensorDescriptor(out_descriptor);
      GROVE_CUDNN_CHECK(status);
    }
    return;
  }
  const Tensor weight = call.input(1).contiguous();
  const CallBuffers buffers{input.data_ptr(), weight.data_ptr(), out.data_ptr()};
  const ConvPlan& plan =
      find_plan(handle, Direction::Forward, out.dtype(), device, input.sizes(), weight.sizes(),
                out.sizes(), Conv2dAttributes::from(call.attributes), buffers, "conv2d");
  const Tensor space = workspace(plan.workspace_bytes, device);
  GROVE_CUDNN_CHECK(run_convolution(handle, Direction::Forward, plan, plan.algorithm, buffers,
                                    space.defined() ? space.data_ptr() : nullptr,
                                    plan.workspace_bytes, scale));
  if (bias.defined()) {
    GROVE_CUDNN_CHECK(cudnnAddTensor(handle, scale.one(), plan.bias, bias.data_ptr(), scale.one(),
                                     plan.output, out.data_ptr()));
  }
}

// grad: (N, O, Ho, Wo), weight: (O, C/G, kH, kW) -> out: input_sizes (N, C, H, W).
void conv2d_backward_input(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  check_dtype(call, out.dtype());
  if (out.numel() == 0) return;
  const Device device = out.device();
  const cuda_backend::DeviceGuard guard(device);
  const Tensor grad = call.input(0).contiguous();
  if (grad.numel() == 0) return fill_zero(out);  // no output channels: nothing flows back
  cudnnHandle_t handle = cudnn_handle(device);
  const Scale scale(out.dtype());
  const Tensor weight = call.input(1).contiguous();
  const CallBuffers buffers{weight.data_ptr(), grad.data_ptr(), out.data_ptr()};
  const ConvPlan& plan = find_plan(
      handle, Direction::BackwardData, out.dtype(), device, out.sizes(), weight.sizes(),
      grad.sizes(), Conv2dAttributes::from(call.attributes), buffers, "conv2d_backward_input");
  const Tensor space = workspace(plan.workspace_bytes, device);
  GROVE_CUDNN_CHECK(run_convolution(handle, Direction::BackwardData, plan, plan.algorithm, buffers,
                                    space.defined() ? space.data_ptr() : nullptr,
                                    plan.workspace_bytes, scale));
}

// grad: (N, O, Ho, Wo), input: (N, C, H, W) -> out: weight_sizes (O, C/G, kH, kW).
void conv2d_backward_weight(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  check_dtype(call, out.dtype());
  if (out.numel() == 0) return;
  const Device device = out.device();
  const cuda_backend::DeviceGuard guard(device);
  const Tensor input = call.input(1).contiguous();
  // An empty batch, or an input plane that is all padding: the sum has no nonzero term.
  if (input.numel() == 0) return fill_zero(out);
  cudnnHandle_t handle = cudnn_handle(device);
  const Scale scale(out.dtype());
  const Tensor grad = call.input(0).contiguous();
  const CallBuffers buffers{input.data_ptr(), grad.data_ptr(), out.data_ptr()};
  const ConvPlan& plan = find_plan(
      handle, Direction::BackwardFilter, out.dtype(), device, input.sizes(), out.sizes(),
      grad.sizes(), Conv2dAttributes::from(call.attributes), buffers, "conv2d_backward_weight");
  const Tensor space = workspace(plan.workspace_bytes, device);
  GROVE_CUDNN_CHECK(run_convolution(handle, Direction::BackwardFilter, plan, plan.algorithm,
                                    buffers, space.defined() ? space.data_ptr() : nullptr,
                                    plan.workspace_bytes, scale));
}

}  // namespace grove::ops::cuda
