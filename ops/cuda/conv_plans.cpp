// The plan cache of the CUDA convolutions (ops/cuda/conv_plans.h): cuDNN descriptors, the
// heuristics' candidate algorithms, and one map from a convolution's key to its plan. Benchmark
// mode's timing is in ops/cuda/conv_benchmark.cpp, the kernels that use the plans in
// ops/cuda/conv.cpp. Library calls only, compiled by g++.
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
// - The workspace is the stream's cuBLAS workspace (blas_workspace: 32 MiB on Hopper) when it is
//   large enough; Note [cuBLAS workspaces and capture] in blas_handle.h holds for cuDNN too,
//   since the stream runs its GEMMs and convolutions one at a time, in order, eager or
//   replayed. Larger ones are a device tensor from the caching allocator, alive until the call
//   is enqueued: the allocator's stream semantics keep the block from being reused before the
//   stream has run the convolution, and during capture it comes from the capture's private pool.
//   Before the shared workspace, the CNN's graphed step kept a segment per workspace size in its
//   pool (24 and 34 MiB for workspaces of 22.6, 28.4 and 33.1 MiB), though only one is used at a
//   time.
#include "ops/cuda/conv_plans.h"

#include <array>
#include <climits>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "core/cuda/cuda_device.h"
#include "core/stream.h"
#include "ops/conv.h"
#include "ops/cuda/blas_handle.h"
#include "ops/precision.h"

namespace grove::ops::cuda::convolution {
namespace {

// The largest workspace an algorithm may ask for; larger ones are passed over.
constexpr std::size_t kMaxWorkspaceBytes = std::size_t{1} << 30;
// More than any cuDNN 9 direction has algorithms (forward: 8, data: 6, filter: 7).
constexpr int kMaxAlgorithms = 16;

// (direction, dtype, tf32, device, measured), input (4), weight (4), geometry (7).
using PlanKey = std::array<std::int64_t, 20>;

int to_int(std::int64_t value, const char* op) {
  GROVE_CHECK(value <= INT_MAX, op, " on CUDA: expected sizes below 2^31 (cuDNN's int sizes), ",
              "but got ", value);
  return static_cast<int>(value);
}

cudnnDataType_t cudnn_type(DType dtype) {
  return dtype == DType::Float32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;
}

}  // namespace

cudnnTensorDescriptor_t tensor_descriptor(DType dtype, IntArrayRef sizes, const char* op) {
  cudnnTensorDescriptor_t descriptor = nullptr;
  GROVE_CUDNN_CHECK(cudnnCreateTensorDescriptor(&descriptor));
  GROVE_CUDNN_CHECK(cudnnSetTensor4dDescriptor(descriptor, CUDNN_TENSOR_NCHW, cudnn_type(dtype),
                                               to_int(sizes[0], op), to_int(sizes[1], op),
                                               to_int(sizes[2], op), to_int(sizes[3], op)));
  return descriptor;
}

Workspace workspace(std::size_t bytes, Device device) {
  if (bytes == 0) return {};
  const BlasWorkspace shared = blas_workspace(current_stream(device));
  if (bytes <= shared.bytes) return {Tensor(), shared.data};
  Workspace own;
  own.buffer = empty({static_cast<std::int64_t>(bytes)}, TensorOptions(DType::Bool).device(device));
  own.data = own.buffer.data_ptr();
  return own;
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

namespace {

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

}  // namespace

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

}  // namespace grove::ops::cuda::convolution
