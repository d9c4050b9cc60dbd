// CUDA kernels of max_pool2d, avg_pool2d and their gradients; ops/cpu/pool.cpp is the reference
// they match exactly.
//
// Forward: one thread per output element (grid-stride), looping over its window clipped to the
// input as window_span (ops/pool_geometry.h) says, reading the input through its strides. Max:
// strict `>` so the first maximum in row-major window order wins, and every NaN takes over (so the
// last NaN's index is kept), as on the CPU. Avg: the sum in double, divided by the padded window's
// size.
//
// avg_pool2d_backward gathers: one thread per input element, which visits the windows covering
// it in (oy, ox) order and adds their shares (grad / divisor, rounded to T) in T, starting from
// 0: the CPU's additions into that element, in the CPU's order. No atomics, deterministic.
//
// max_pool2d_backward cannot gather, as it knows no window (only indices, which may name any
// element of the plane). One warp per plane: it zeroes the plane, then takes the grad elements
// 32 at a time in order; lanes whose indices are equal are grouped (__match_any_sync) and the
// lowest lane of each group adds the group's values, in lane order, to its element. So each
// element receives its grad values in the CPU's order (k ascending), with no atomics. For the
// reference CNN (2 x 2 windows, stride 2) no two lanes collide and every lane writes.
// An index outside [0, H * W) adds nothing and is reported (Note [Device-side error reports] in
// core/cuda/device_errors.h; the host cannot read the indices without a sync).
//
// Index arithmetic is int32 when every offset fits, int64 otherwise.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "core/cuda/cuda_device.h"
#include "core/cuda/device_errors.cuh"
#include "ops/attributes.h"
#include "ops/cuda/kernel_loop.cuh"
#include "ops/cuda/pool.h"
#include "ops/pool_geometry.h"

namespace grove::ops::cuda {
namespace {

constexpr int kWarp = 32;

// The window of output element i (of (planes, out_h, out_w) in row-major order): its input
// plane, and its rows and columns clipped to the input.
template <typename T, typename Index>
struct Window {
  const T* plane;
  WindowSpan<Index> rows;
  WindowSpan<Index> columns;
};

template <typename T, typename Index>
__device__ inline Window<T, Index> window_of(const T* input, const PoolGeometry& g, Index i) {
  const Index out_w = static_cast<Index>(g.out_w), out_h = static_cast<Index>(g.out_h);
  const Index ox = i % out_w;
  const Index oy = (i / out_w) % out_h;
  const Index plane = i / out_w / out_h;
  const Index channels = static_cast<Index>(g.channels);
  return {input + (plane / channels) * static_cast<Index>(g.batch_stride) +
              (plane % channels) * static_cast<Index>(g.channel_stride),
          window_span<Index>(oy, g.stride_h, g.padding_h, g.kernel_h, static_cast<Index>(g.height)),
          window_span<Index>(ox, g.stride_w, g.padding_w, g.kernel_w, static_cast<Index>(g.width))};
}

// values, indices: (planes, out_h, out_w) contiguous; `total` elements.
template <typename T, typename Index>
__global__ void max_pool_kernel(const T* input, T* values, std::int64_t* indices,
                                const PoolGeometry g, Index total) {
  const Index width = static_cast<Index>(g.width);
  for (Index i = static_cast<Index>(first_index()); i < total;
       i += static_cast<Index>(grid_step())) {
    const auto [in, rows, columns] = window_of<T, Index>(input, g, i);
    T best = -static_cast<T>(INFINITY);
    Index best_index = rows.begin * width + columns.begin;
    for (Index y = rows.begin; y < rows.end; ++y) {
      for (Index x = columns.begin; x < columns.end; ++x) {
        const T value =
            in[y * static_cast<Index>(g.row_stride) + x * static_cast<Index>(g.column_stride)];
        if (value > best || value != value) {  // strict: the first maximum wins; NaN always
          best = value;
          best_index = y * width + x;
        }
      }
    }
    values[i] = best;
    indices[i] = best_index;
  }
}

template <typename T, typename Index>
__global__ void avg_pool_kernel(const T* input, T* values, const PoolGeometry g, Index total) {
  for (Index i = static_cast<Index>(first_index()); i < total;
       i += static_cast<Index>(grid_step())) {
    const auto [in, rows, columns] = window_of<T, Index>(input, g, i);
    double sum = 0.0;
    for (Index y = rows.begin; y < rows.end; ++y) {
      for (Index x = columns.begin; x < columns.end; ++x) {
        sum += static_cast<double>(
            in[y * static_cast<Index>(g.row_stride) + x * static_cast<Index>(g.column_stride)]);
      }
    }
    values[i] = static_cast<T>(sum / static_cast<double>(rows.padded * columns.padded));
  }
}

// The first output position along one axis whose window covers input position `position`
// (start = o * stride - padding <= position < start + kernel), and one past the last.
template <typename Index>
__device__ inline void covering(Index position, Index stride, Index padding, Index kernel,
                                Index out, Index& first, Index& last) {
  const Index low = position + padding - kernel + 1;  // o * stride >= low
  first = low <= 0 ? Index(0) : (low + stride - 1) / stride;
  last = (position + padding) / stride + 1;
  if (last > out) last = out;
}

// grad: (planes, out_h, out_w) contiguous -> grad_input: (planes, height, width), `total`.
template <typename T, typename Index>
__global__ void avg_pool_backward_kernel(const T* grad, T* grad_input, const PoolGeometry g,
                                         Index total) {
  const Index out_w = static_cast<Index>(g.out_w), out_h = static_cast<Index>(g.out_h);
  const Index width = static_cast<Index>(g.width), height = static_cast<Index>(g.height);
  for (Index i = static_cast<Index>(first_index()); i < total;
       i += static_cast<Index>(grid_step())) {
    const Index x = i % width;
    const Index y = (i / width) % height;
    const Index plane = i / width / height;
    const T* plane_grad = grad + plane * out_h * out_w;
    Index oy_first, oy_last, ox_first, ox_last;
    covering<Index>(y, g.stride_h, g.padding_h, g.kernel_h, out_h, oy_first, oy_last);
    covering<Index>(x, g.stride_w, g.padding_w, g.kernel_w, out_w, ox_first, ox_last);
    T sum = T(0);
    for (Index oy = oy_first; oy < oy_last; ++oy) {
      const WindowSpan<Index> rows =
          window_span<Index>(oy, g.stride_h, g.padding_h, g.kernel_h, height);
      for (Index ox = ox_first; ox < ox_last; ++ox) {
        const WindowSpan<Index> columns =
            window_span<Index>(ox, g.stride_w, g.padding_w, g.kernel_w, width);
        sum += static_cast<T>(static_cast<double>(plane_grad[oy * out_w + ox]) /
                              static_cast<double>(rows.padded * columns.padded));
      }
    }
    grad_input[i] = sum;
  }
}

constexpr int kWarpsPerBlock = kThreads / kWarp;

// grad, indices: (planes, pooled) contiguous -> grad_input: (planes, plane_size); one warp per
// plane (see the file comment).
template <typename T>
__global__ void max_pool_backward_kernel(const T* grad, const std::int64_t* indices, T* grad_input,
                                         std::int64_t planes, std::int64_t plane_size,
                                         std::int64_t pooled,
                                         const cuda_backend::DeviceErrorSite errors) {
  __shared__ T staged[kWarpsPerBlock][kWarp];
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  T* values = staged[threadIdx.x / kWarp];
  const std::int64_t warps = grid_step() / kWarp;
  for (std::int64_t p = first_index() / kWarp; p < planes; p += warps) {
    T* out = grad_input + p * plane_size;
    for (std::int64_t e = lane; e < plane_size; e += kWarp) out[e] = T(0);
    __syncwarp();
    const T* plane_grad = grad + p * pooled;
    const std::int64_t* plane_indices = indices + p * pooled;
    for (std::int64_t base = 0; base < pooled; base += kWarp) {
      const std::int64_t k = base + lane;
      const bool active = k < pooled;
      const std::int64_t index = active ? plane_indices[k] : -1;
      const bool in_range = index >= 0 && index < plane_size;
      if (active && !in_range)
        cuda_backend::report_bad_value(errors, index, p * pooled + k, plane_size);
      values[lane] = active ? plane_grad[k] : T(0);
      // Lanes of one group share an index, so either all of a group or none of it is in range.
      const unsigned peers = __match_any_sync(0xffffffffu, static_cast<unsigned long long>(index));
      __syncwarp();
      if (active && in_range && lane == __ffs(peers) - 1) {  // the lowest lane adds, in lane order
        T sum = out[index];
        for (unsigned rest = peers; rest != 0; rest &= rest - 1) sum += values[__ffs(rest) - 1];
        out[index] = sum;
      }
      __syncwarp();
    }
  }
}

// True when every offset the kernels form fits an int32.
bool fits_int32(std::int64_t largest) {
  return largest < INT_MAX;
}

// True when a grid-stride loop over `total` items can count in int32: the last step may pass
// `total` by up to one whole grid before the loop test stops it.
bool loop_fits_int32(std::int64_t total) {
  return total + kMaxBlocks * kThreads < INT_MAX;
}

// outputs: values (and for max_pool2d indices) of shape (*, out_h, out_w), contiguous.
template <typename T>
void launch_pool(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  const std::int64_t total = out.numel();
  if (total == 0) return;
  const Tensor& input = call.input(0);
  const PoolGeometry g = pool_geometry(call, out);
  // The farthest element any thread reads (strides are >= 0 for grove's views).
  std::int64_t farthest = 0;
  for (std::int64_t d = 0; d < input.dim(); ++d) farthest += (input.size(d) - 1) * input.stride(d);
  const bool narrow = loop_fits_int32(total) && fits_int32(farthest + 1) &&
                      fits_int32(g.height * g.width + g.width);
  const cuda_backend::DeviceGuard guard(out.device());
  const cudaStream_t stream = stream_of(out);
  const T* in = static_cast<const T*>(input.data_ptr());
  T* values = static_cast<T*>(out.data_ptr());
  if (call.kind == OpKind::MaxPool2d) {
    auto* indices = static_cast<std::int64_t*>(outputs[1].data_ptr());
    if (narrow) {
      max_pool_kernel<T, int><<<blocks_for(total), kThreads, 0, stream>>>(in, values, indices, g,
                                                                          static_cast<int>(total));
    } else {
      max_pool_kernel<T, std::int64_t>
          <<<blocks_for(total), kThreads, 0, stream>>>(in, values, indices, g, total);
    }
  } else if (narrow) {
    avg_pool_kernel<T, int>
        <<<blocks_for(total), kThreads, 0, stream>>>(in, values, g, static_cast<int>(total));
  } else {
    avg_pool_kernel<T, std::int64_t>
        <<<blocks_for(total), kThreads, 0, stream>>>(in, values, g, total);
  }
  GROVE_CUDA_CHECK(cudaGetLastError());
}

// grad: (*, out_h, out_w) -> out: input_sizes (*, height, width).
template <typename T>
void launch_avg_backward(const OpCall& call, const Tensor& out) {
  const std::int64_t total = out.numel();
  if (total == 0) return;
  const Tensor grad = call.input(0).contiguous();
  const PoolGeometry g = backward_geometry(window_geometry(call.attributes), grad, out);
  const cuda_backend::DeviceGuard guard(out.device());
  const cudaStream_t stream = stream_of(out);
  const T* grad_data = static_cast<const T*>(grad.data_ptr());
  T* grad_input = static_cast<T*>(out.data_ptr());
  if (loop_fits_int32(total) && fits_int32(grad.numel())) {
    avg_pool_backward_kernel<T, int><<<blocks_for(total), kThreads, 0, stream>>>(
        grad_data, grad_input, g, static_cast<int>(total));
  } else {
    avg_pool_backward_kernel<T, std::int64_t>
        <<<blocks_for(total), kThreads, 0, stream>>>(grad_data, grad_input, g, total);
  }
  GROVE_CUDA_CHECK(cudaGetLastError());
}

// grad, indices: (*, out_h, out_w) -> out: input_sizes (*, height, width).
template <typename T>
void launch_max_backward(const OpCall& call, const Tensor& out) {
  if (out.numel() == 0) return;
  const Tensor grad = call.input(0).contiguous();
  const Tensor indices = call.input(1).contiguous();
  const std::int64_t plane_size = out.size(-2) * out.size(-1);
  const std::int64_t planes = out.numel() / plane_size;
  const std::int64_t pooled = grad.size(-2) * grad.size(-1);
  const cuda_backend::DeviceGuard guard(out.device());
  const std::int64_t blocks =
      std::min<std::int64_t>((planes + kWarpsPerBlock - 1) / kWarpsPerBlock, kMaxBlocks);
  max_pool_backward_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream_of(out)>>>(
      static_cast<const T*>(grad.data_ptr()), static_cast<const std::int64_t*>(indices.data_ptr()),
      static_cast<T*>(out.data_ptr()), planes, plane_size, pooled,
      cuda_backend::device_error_site(out.device(), "max_pool2d_backward", "index",
                                      "0 <= index < {bound} (the input plane's H * W)"));
  GROVE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void max_pool2d(const OpCall& call, const OpOutputs& outputs) {
  dispatch_floating(outputs[0].dtype(), op_name(call.kind),
                    [&]<typename T>() { launch_pool<T>(call, outputs); });
}

void avg_pool2d(const OpCall& call, const OpOutputs& outputs) {
  dispatch_floating(outputs[0].dtype(), op_name(call.kind),
                    [&]<typename T>() { launch_pool<T>(call, outputs); });
}

void max_pool2d_backward(const OpCall& call, const OpOutputs& outputs) {
  dispatch_floating(outputs[0].dtype(), op_name(call.kind),
                    [&]<typename T>() { launch_max_backward<T>(call, outputs[0]); });
}

void avg_pool2d_backward(const OpCall& call, const OpOutputs& outputs) {
  dispatch_floating(outputs[0].dtype(), op_name(call.kind),
                    [&]<typename T>() { launch_avg_backward<T>(call, outputs[0]); });
}

}  // namespace grove::ops::cuda
