// CUDA kernels for cross_entropy, nll_loss and their gradients (ops/softmax.h); the CPU kernels
// in ops/cpu/loss.cpp are the reference they match. Every
// kernel launches on the current stream of the output's device and none synchronises the host:
// the output gradient and the targets are read on the device only.
//
// cross_entropy, in two launches:
//   1. one warp per row (classes <= kMaxWarpClasses, eight rows per block) or one block per row
//      (longer rows): the row maximum (NaN wins), the sum of exp(x - max), lse = max + log(sum)
//      written out, and the row's loss lse - x[target] (0 for ignored rows) written to a float64
//      scratch vector. Rows are computed in the scores' compute type (float32 for float32,
//      bfloat16 and float16 scores, ops/cuda/opmath.cuh; float64 for float64): a float64 exp
//      per logit made the loss of a GPT-2 step's 412M logits take 1.6 ms on an H200. A dense
//      row is read 16 bytes at a time, twice (the second pass finds it in L2);
//   2. one block adds the row losses and counts the rows that are not ignored, each thread over
//      a fixed set of rows, then a fixed tree: the mean is deterministic (no float atomics).
// nll_loss is step 2 alone, reading -x[target] directly.
// The gradients, in two launches: one block counts the rows that are not ignored and writes
// scale = grad / n (0 when n = 0, see Note [Cross-entropy saves the log-sum-exp]); then a row
// group per row of the (N, C) result, as in step 1, each element read once and written once:
//   cross_entropy: scale * (exp(x - lse) - [c == target]);  nll_loss: -scale at the target.
// Losses of 16-bit scores are float32, as are lse and the grad the backward takes
// (Note [A loss is in the compute dtype] in ops/softmax.cpp); their gradients are rounded once
// to the scores' dtype.
//
// Note [Out-of-range targets on the GPU]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The CPU kernels throw for a target that is neither ignore_index nor in [0, C). A CUDA kernel
// cannot throw, and checking on the host would need a copy and a synchronisation (and is not
// allowed while a graph captures). So on the GPU a bad target is reported
// (Note [Device-side error reports] in core/cuda/device_errors.h: the next synchronisation throws
// DeviceCheckError naming the op, the target and its row) and poisons the result in the meantime:
// the row's loss is NaN (so the mean is NaN), and its gradient row is NaN; lse is still written.
// The kernels never read scores[i, target] for such a target, and each kernel reports a bad row
// once. The same rule holds for embedding's indices (ops/cuda/embedding.cu).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include "core/cuda/cuda_device.h"
#include "core/cuda/device_errors.cuh"
#include "ops/attributes.h"
#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/kernel_loop.cuh"
#include "ops/cuda/opmath.cuh"
#include "ops/cuda/softmax.h"
#include "ops/loss_layout.h"

namespace grove::ops::cuda {
namespace {

// Rows up to this many classes take one warp each; longer rows one block of kThreads.
constexpr std::int64_t kMaxWarpClasses = 1024;
// Threads of the single block that forms the mean, and of the block that counts for the
// gradients.
constexpr int kFinishThreads = 512;

// The loss's inputs (ops/loss_layout.h) and where bad targets are reported.
template <typename T>
struct LossArgs : LossLayout<T> {
  cuda_backend::DeviceErrorSite errors;
};

template <typename T>
LossArgs<T> loss_args(const OpCall& call, const Tensor& scores, const Tensor& targets) {
  return {loss_layout<T>(call, scores, targets),
          cuda_backend::device_error_site(scores.device(), op_name(call.kind).data(), "target",
                                          "0 <= target < {bound} (the classes) or ignore_index")};
}

__device__ inline bool valid_target(std::int64_t target, std::int64_t classes) {
  return target >= 0 && target < classes;
}

// Calls f(j, x) with x = row[j] in the compute type for the elements j of a row of `classes`
// that this lane of a `width`-thread group reads: j = lane, lane + width, ... or, when the row is
// dense and 16-byte aligned, packs of kVecOf<T> consecutive elements (one load each).
template <typename T, typename F>
__device__ inline void for_each_in_row(const T* row, std::int64_t classes,
                                       std::int64_t class_stride, int lane, int width, F&& f) {
  constexpr int kVec = kVecOf<T>;
  if (class_stride == 1 && reinterpret_cast<std::uintptr_t>(row) % 16 == 0) {
    const std::int64_t packs = classes / kVec;
    for (std::int64_t p = lane; p < packs; p += width) {
      const Pack<T, kVec> pack = reinterpret_cast<const Pack<T, kVec>*>(row)[p];
      for (int k = 0; k < kVec; ++k) f(p * kVec + k, widen(pack.values[k]));
    }
    for (std::int64_t j = packs * kVec + lane; j < classes; j += width) f(j, widen(row[j]));
    return;
  }
  for (std::int64_t j = lane; j < classes; j += width) f(j, widen(row[j * class_stride]));
}

// Step 1 of cross_entropy: lse (N, contiguous) and the row losses (N, float64). A row group is
// a warp (kWarpRows) or the whole block. Computed in C = OpMath<T>.
template <typename T, bool kWarpRows>
__global__ void cross_entropy_rows(const LossArgs<T> args, OpMath<T>* lse, double* row_loss) {
  using C = OpMath<T>;
  __shared__ C shared[kThreads / kWarp];
  const RowGroup<kWarpRows> group;
  for (std::int64_t i = group.first; i < args.rows; i += group.step) {
    const T* row = args.scores + i * args.row_stride;
    C max = widen(row[0]);  // rows are not empty (infer checks C > 0)
    for_each_in_row(row, args.classes, args.class_stride, group.lane, group.width,
                    [&](std::int64_t, C x) { max = nan_max(max, x); });
    max = group.reduce(max, shared, NanMax{});
    C sum = 0;
    for_each_in_row(row, args.classes, args.class_stride, group.lane, group.width,
                    [&](std::int64_t, C x) { sum += exp_of(x - max); });
    sum = group.reduce(sum, shared, Sum{});
    if (group.lane == 0) {
      const C row_lse = max + log_of(sum);
      lse[i] = row_lse;
      const std::int64_t target = args.targets[i * args.target_stride];
      double loss = 0.0;  // ignored
      if (target != args.ignore_index) {
        // See Note [Out-of-range targets on the GPU].
        if (valid_target(target, args.classes)) {
          loss = static_cast<double>(row_lse - widen(row[target * args.class_stride]));
        } else {
          loss = __longlong_as_double(0x7ff8000000000000LL);
          cuda_backend::report_bad_value(args.errors, target, i, args.classes);
        }
      }
      row_loss[i] = loss;
    }
  }
}

// Step 2 of cross_entropy (row_loss given) and all of nll_loss (row_loss null: the row loss is
// -scores[i, target]): loss = the sum of the row losses over the rows not ignored, divided by
// their count (0 / 0 = NaN when every row is ignored, as on the CPU). One block.
template <typename T>
__global__ void mean_loss(const LossArgs<T> args, const double* row_loss, OpMath<T>* loss) {
  __shared__ double shared[kFinishThreads / kWarp];
  double total = 0.0, count = 0.0;
  for (std::int64_t i = threadIdx.x; i < args.rows; i += blockDim.x) {
    const std::int64_t target = args.targets[i * args.target_stride];
    if (target == args.ignore_index) continue;
    count += 1.0;
    if (row_loss != nullptr) {
      total += row_loss[i];
    } else if (valid_target(target, args.classes)) {
      total -=
          static_cast<double>(widen(args.scores[i * args.row_stride + target * args.class_stride]));
    } else {  // nll_loss (cross_entropy_rows has reported it for cross_entropy)
      // See Note [Out-of-range targets on the GPU].
      total += __longlong_as_double(0x7ff8000000000000LL);
      cuda_backend::report_bad_value(args.errors, target, i, args.classes);
    }
  }
  total = block_reduce(total, shared, Sum{});
  count = block_reduce(count, shared, Sum{});
  if (threadIdx.x == 0) *loss = static_cast<OpMath<T>>(total / count);
}

// The gradients' scale: grad / n, or 0 when no row is counted. One block.
template <typename T>
__global__ void gradient_scale(const LossArgs<T> args, const OpMath<T>* grad, double* scale) {
  __shared__ double shared[kFinishThreads / kWarp];
  double count = 0.0;
  for (std::int64_t i = threadIdx.x; i < args.rows; i += blockDim.x) {
    count += args.targets[i * args.target_stride] != args.ignore_index ? 1.0 : 0.0;
  }
  count = block_reduce(count, shared, Sum{});
  if (threadIdx.x == 0) *scale = count == 0.0 ? 0.0 : static_cast<double>(grad[0]) / count;
}

// out (N, C), contiguous, one row per group (as cross_entropy_rows): each element read once and
// its gradient written once, in packs where the rows allow. lse null: nll_loss_backward.
template <typename T, bool kWarpRows>
__global__ void loss_gradient(const LossArgs<T> args, const OpMath<T>* lse, std::int64_t lse_stride,
                              const double* scale_pointer, T* out) {
  using C = OpMath<T>;
  constexpr int kVec = kVecOf<T>;
  const RowGroup<kWarpRows> group;
  const C scale = static_cast<C>(*scale_pointer);
  const bool packed = args.class_stride == 1 && args.classes % kVec == 0 &&
                      args.row_stride % kVec == 0 &&
                      reinterpret_cast<std::uintptr_t>(args.scores) % 16 == 0 &&
                      reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
  for (std::int64_t i = group.first; i < args.rows; i += group.step) {
    const std::int64_t target = args.targets[i * args.target_stride];
    const T* row = args.scores + i * args.row_stride;
    T* out_row = out + i * args.classes;
    // The value every element of the row gets, except through its probability and the target.
    C fixed = 0;  // an ignored row's gradient is 0
    bool use_probability = false;
    if (target != args.ignore_index) {
      if (!valid_target(target, args.classes)) {
        // See Note [Out-of-range targets on the GPU].
        fixed = __int_as_float(0x7fc00000);
        if (group.lane == 0) cuda_backend::report_bad_value(args.errors, target, i, args.classes);
      } else {
        use_probability = lse != nullptr;
      }
    }
    const C row_lse = use_probability ? lse[i * lse_stride] : C(0);
    const bool counted = target != args.ignore_index && valid_target(target, args.classes);
    auto gradient = [&](std::int64_t j, C x) -> T {
      if (!counted) return narrow<T>(fixed);
      const C onehot = j == target ? C(1) : C(0);
      if (!use_probability) return narrow<T>(-scale * onehot);  // nll_loss
      return narrow<T>(scale * (exp_of(x - row_lse) - onehot));
    };
    if (packed) {
      for (std::int64_t p = group.lane; p < args.classes / kVec; p += group.width) {
        const Pack<T, kVec> in = reinterpret_cast<const Pack<T, kVec>*>(row)[p];
        Pack<T, kVec> result;
        for (int k = 0; k < kVec; ++k)
          result.values[k] = gradient(p * kVec + k, widen(in.values[k]));
        reinterpret_cast<Pack<T, kVec>*>(out_row)[p] = result;
      }
    } else {
      for (std::int64_t j = group.lane; j < args.classes; j += group.width) {
        out_row[j] = gradient(j, widen(row[j * args.class_stride]));
      }
    }
  }
}

template <typename T>
void launch_cross_entropy(const OpCall& call, const OpOutputs& outputs) {
  const LossArgs<T> args = loss_args<T>(call, call.input(0), call.input(1));
  const Device device = outputs[0].device();
  cuda_backend::DeviceGuard guard(device);
  cudaStream_t stream = stream_of(outputs[0]);
  // Scratch from the caching allocator (on the capture's pool while capturing); freed after the
  // launches, it is reused only by work ordered after them on this stream.
  const Tensor row_loss = empty({args.rows}, TensorOptions(DType::Float64).device(device));
  auto* row_loss_data = static_cast<double*>(row_loss.data_ptr());
  auto* lse = static_cast<OpMath<T>*>(outputs[1].data_ptr());
  if (args.rows > 0) {
    const bool warp_rows = args.classes <= kMaxWarpClasses;
    const unsigned blocks = row_group_blocks(args.rows, warp_rows);
    if (warp_rows) {
      cross_entropy_rows<T, true><<<blocks, kThreads, 0, stream>>>(args, lse, row_loss_data);
    } else {
      cross_entropy_rows<T, false><<<blocks, kThreads, 0, stream>>>(args, lse, row_loss_data);
    }
    GROVE_CUDA_CHECK(cudaGetLastError());
  }
  mean_loss<T><<<1, kFinishThreads, 0, stream>>>(args, row_loss_data,
                                                 static_cast<OpMath<T>*>(outputs[0].data_ptr()));
  GROVE_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void launch_nll_loss(const OpCall& call, const OpOutputs& outputs) {
  const LossArgs<T> args = loss_args<T>(call, call.input(0), call.input(1));
  cuda_backend::DeviceGuard guard(outputs[0].device());
  mean_loss<T><<<1, kFinishThreads, 0, stream_of(outputs[0])>>>(
      args, nullptr, static_cast<OpMath<T>*>(outputs[0].data_ptr()));
  GROVE_CUDA_CHECK(cudaGetLastError());
}

// Inputs: grad, scores, targets, and lse for cross_entropy_backward.
template <typename T>
void launch_loss_gradient(const OpCall& call, const Tensor& out) {
  const LossArgs<T> args = loss_args<T>(call, call.input(1), call.input(2));
  const bool cross_entropy = call.kind == OpKind::CrossEntropyBackward;
  const auto* lse =
      cross_entropy ? static_cast<const OpMath<T>*>(call.input(3).data_ptr()) : nullptr;
  const std::int64_t lse_stride = cross_entropy ? call.input(3).stride(0) : 0;
  const Device device = out.device();
  cuda_backend::DeviceGuard guard(device);
  cudaStream_t stream = stream_of(out);
  if (args.rows == 0) return;
  const Tensor scale = empty({1}, TensorOptions(DType::Float64).device(device));
  auto* scale_data = static_cast<double*>(scale.data_ptr());
  gradient_scale<T><<<1, kFinishThreads, 0, stream>>>(
      args, static_cast<const OpMath<T>*>(call.input(0).data_ptr()), scale_data);
  GROVE_CUDA_CHECK(cudaGetLastError());
  const bool warp_rows = args.classes <= kMaxWarpClasses;
  const unsigned blocks = row_group_blocks(args.rows, warp_rows);
  T* out_data = static_cast<T*>(out.data_ptr());
  if (warp_rows) {
    loss_gradient<T, true>
        <<<blocks, kThreads, 0, stream>>>(args, lse, lse_stride, scale_data, out_data);
  } else {
    loss_gradient<T, false>
        <<<blocks, kThreads, 0, stream>>>(args, lse, lse_stride, scale_data, out_data);
  }
  GROVE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

// Each kernel is chosen by the scores' dtype (input 0 of the losses, input 1 of their
// gradients); the loss, lse and grad are in its compute dtype.
void cross_entropy(const OpCall& call, const OpOutputs& outputs) {
  dispatch_dtype<DTypes::FloatingAndReduced>(
      call.input(0).dtype(), op_name(call.kind),
      [&]<typename T>() { launch_cross_entropy<T>(call, outputs); });
}

void nll_loss(const OpCall& call, const OpOutputs& outputs) {
  dispatch_dtype<DTypes::FloatingAndReduced>(
      call.input(0).dtype(), op_name(call.kind),
      [&]<typename T>() { launch_nll_loss<T>(call, outputs); });
}

void cross_entropy_backward(const OpCall& call, const OpOutputs& outputs) {
  dispatch_dtype<DTypes::FloatingAndReduced>(
      call.input(1).dtype(), op_name(call.kind),
      [&]<typename T>() { launch_loss_gradient<T>(call, outputs[0]); });
}

void nll_loss_backward(const OpCall& call, const OpOutputs& outputs) {
  dispatch_dtype<DTypes::FloatingAndReduced>(
      call.input(1).dtype(), op_name(call.kind),
      [&]<typename T>() { launch_loss_gradient<T>(call, outputs[0]); });
}

}  // namespace grove::ops::cuda
