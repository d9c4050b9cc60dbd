// CUDA kernels of attention (ops/attention.h); ops/cpu/attention.cpp is the reference they match.
//
// One warp per row, eight rows per block: per query row for the forward and for the backward's
// grad_q, per key row for the backward's grad_k and grad_v. A warp walks the other side's rows
// (the keys of a query, the queries of a key) in chunks of 32, one per lane: each lane forms its
// row's score as a dot product over D with the warp's own row, kept in shared memory, and then
// lane d adds the chunk's 32 contributions to element d (and d + 32, ...: up to
// kCudaMaxHeadWidth / 32 per lane) in row order, each weight broadcast from its lane by a
// shuffle. So nothing of size T x T is stored, every operand is read through its strides (the
// GPT's q, k and v are views of its (B, T, 3C) projection), and the sums are in double.
//
// The forward is the online softmax: a running maximum m and sum l per query row; a chunk whose
// maximum is larger rescales the sums gathered so far by exp(m_old - m_new). Its outputs are
// out and lse = m + log(l). The backward recomputes p = exp(s - lse) instead of storing it; a
// first kernel also writes delta = grad . out per query row, which the second reads.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>

#include "core/cuda/cuda_device.h"
#include "ops/attention.h"
#include "ops/attributes.h"
#include "ops/cuda/attention.h"
#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/kernel_loop.cuh"

namespace grove::ops::cuda {
namespace {

constexpr int kRowsPerBlock = 8;  // warps per block
constexpr int kPerLane = static_cast<int>(kCudaMaxHeadWidth) / kWarp;

// One (B, T, H, D) operand: element (b, t, h, d) at data[b sb + t st + h sh + d sd].
template <typename T>
struct HeadsView {
  const T* data;
  std::int64_t sb, st, sh, sd;
  __device__ double at(std::int64_t b, std::int64_t t, std::int64_t h, std::int64_t d) const {
    return static_cast<double>(data[b * sb + t * st + h * sh + d * sd]);
  }
};

template <typename T>
HeadsView<T> heads_view(const Tensor& x) {
  return {static_cast<const T*>(x.data_ptr()), x.strides()[0], x.strides()[1], x.strides()[2],
          x.strides()[3]};
}

struct Shape {
  std::int64_t batch, length, heads, width;  // B, T, H, D
  bool causal;
  double scale;
};

// The warp's row: (b, h, t) of row r, rows ordered by batch, head, then position.
struct Row {
  std::int64_t b, h, t;
  __device__ Row(std::int64_t r, const Shape& n)
      : b(r / (n.heads * n.length)), h((r / n.length) % n.heads), t(r % n.length) {}
};

__device__ inline double warp_sum(double value) {
  return warp_reduce(value, Sum{});
}
// The largest non-NaN value (fmax ignores NaN, as the CPU's std::max does: a NaN score then
// poisons the sums instead).
__device__ inline double warp_fmax(double value) {
  for (int step = kWarp / 2; step > 0; step /= 2) {
    value = fmax(value, __shfl_xor_sync(kFullMask, value, step));
  }
  return value;
}

// Copies row (b, t, h) of x into the warp's shared row.
template <typename T>
__device__ void load_row(double* row, const HeadsView<T>& x, const Row& at, std::int64_t width,
                         int lane) {
  for (std::int64_t d = lane; d < width; d += kWarp) row[d] = x.at(at.b, at.t, at.h, d);
  __syncwarp();
}

// shared . x[b, u, h, :]
template <typename T>
__device__ double dot(const double* shared, const HeadsView<T>& x, std::int64_t b, std::int64_t u,
                      std::int64_t h, std::int64_t width) {
  double sum = 0.0;
  for (std::int64_t d = 0; d < width; ++d) sum += shared[d] * x.at(b, u, h, d);
  return sum;
}

template <typename T>
__global__ void attention_forward(HeadsView<T> q, HeadsView<T> k, HeadsView<T> v, Shape n, T* out,
                                  T* lse) {
  __shared__ double q_rows[kRowsPerBlock][kCudaMaxHeadWidth];
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + warp;
  if (r >= n.batch * n.heads * n.length) return;  // the whole warp: no block barrier below
  const Row at(r, n);
  double* qs = q_rows[warp];
  load_row(qs, q, at, n.width, lane);
  const std::int64_t keys = n.causal ? at.t + 1 : n.length;
  constexpr double kMinusInf = -INFINITY;
  double m = kMinusInf, l = 0.0;
  double acc[kPerLane] = {};
  for (std::int64_t base = 0; base < keys; base += kWarp) {
    const std::int64_t u = base + lane;
    const double s = u < keys ? n.scale * dot(qs, k, at.b, u, at.h, n.width) : kMinusInf;
    const double m_new = fmax(m, warp_fmax(s));
    if (m_new == kMinusInf) continue;  // every score so far is -inf (or NaN): nothing to add
    const double rescale = exp(m - m_new);
    const double p = u < keys ? exp(s - m_new) : 0.0;
    l = l * rescale + warp_sum(p);
    const int chunk = static_cast<int>(keys - base < kWarp ? keys - base : kWarp);
    for (int i = 0; i < kPerLane; ++i) acc[i] *= rescale;
    for (int j = 0; j < chunk; ++j) {
      const double pj = __shfl_sync(kFullMask, p, j);
      for (int i = 0; i < kPerLane; ++i) {
        const std::int64_t d = lane + i * kWarp;
        if (d < n.width) acc[i] += pj * v.at(at.b, base + j, at.h, d);
      }
    }
    m = m_new;
  }
  T* row = out + ((at.b * n.length + at.t) * n.heads + at.h) * n.width;
  for (int i = 0; i < kPerLane; ++i) {
    const std::int64_t d = lane + i * kWarp;
    if (d < n.width) row[d] = static_cast<T>(acc[i] / l);
  }
  if (lane == 0) lse[(at.b * n.heads + at.h) * n.length + at.t] = static_cast<T>(m + log(l));
}

// Per query row: delta = grad . out (kept for attention_backward_keys) and
// grad_q = scale sum_u ds[u] k[u], ds[u] = p[u] (grad . v[u] - delta).
template <typename T>
__global__ void attention_backward_queries(HeadsView<T> g, HeadsView<T> q, HeadsView<T> k,
                                           HeadsView<T> v, HeadsView<T> o, const T* lse, Shape n,
                                           double* deltas, T* grad_q) {
  __shared__ double q_rows[kRowsPerBlock][kCudaMaxHeadWidth];
  __shared__ double g_rows[kRowsPerBlock][kCudaMaxHeadWidth];
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + warp;
  if (r >= n.batch * n.heads * n.length) return;
  const Row at(r, n);
  double* qs = q_rows[warp];
  double* gs = g_rows[warp];
  load_row(qs, q, at, n.width, lane);
  load_row(gs, g, at, n.width, lane);
  double partial = 0.0;
  for (std::int64_t d = lane; d < n.width; d += kWarp) partial += gs[d] * o.at(at.b, at.t, at.h, d);
  const double delta = warp_sum(partial);
  const std::int64_t lse_index = (at.b * n.heads + at.h) * n.length + at.t;
  if (lane == 0) deltas[lse_index] = delta;
  const double row_lse = static_cast<double>(lse[lse_index]);
  const std::int64_t keys = n.causal ? at.t + 1 : n.length;
  double acc[kPerLane] = {};
  for (std::int64_t base = 0; base < keys; base += kWarp) {
    const std::int64_t u = base + lane;
    double ds = 0.0;
    if (u < keys) {
      const double p = exp(n.scale * dot(qs, k, at.b, u, at.h, n.width) - row_lse);
      ds = p * (dot(gs, v, at.b, u, at.h, n.width) - delta);
    }
    const int chunk = static_cast<int>(keys - base < kWarp ? keys - base : kWarp);
    for (int j = 0; j < chunk; ++j) {
      const double dsj = __shfl_sync(kFullMask, ds, j);
      for (int i = 0; i < kPerLane; ++i) {
        const std::int64_t d = lane + i * kWarp;
        if (d < n.width) acc[i] += dsj * k.at(at.b, base + j, at.h, d);
      }
    }
  }
  T* row = grad_q + ((at.b * n.length + at.t) * n.heads + at.h) * n.width;
  for (int i = 0; i < kPerLane; ++i) {
    const std::int64_t d = lane + i * kWarp;
    if (d < n.width) row[d] = static_cast<T>(n.scale * acc[i]);
  }
}

// Per key row u: grad_k = scale sum_t ds[t] q[t] and grad_v = sum_t p[t] grad[t], over the
// queries t that attend to u.
template <typename T>
__global__ void attention_backward_keys(HeadsView<T> g, HeadsView<T> q, HeadsView<T> k,
                                        HeadsView<T> v, const T* lse, const double* deltas,
                                        Shape n, T* grad_k, T* grad_v) {
  __shared__ double k_rows[kRowsPerBlock][kCudaMaxHeadWidth];
  __shared__ double v_rows[kRowsPerBlock][kCudaMaxHeadWidth];
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + warp;
  if (r >= n.batch * n.heads * n.length) return;
  const Row at(r, n);  // at.t is the key's position here
  double* ks = k_rows[warp];
  double* vs = v_rows[warp];
  load_row(ks, k, at, n.width, lane);
  load_row(vs, v, at, n.width, lane);
  const std::int64_t first = n.causal ? at.t : 0;
  const std::int64_t stats = (at.b * n.heads + at.h) * n.length;  // row t's lse and delta: + t
  double acc_k[kPerLane] = {};
  double acc_v[kPerLane] = {};
  for (std::int64_t base = first; base < n.length; base += kWarp) {
    const std::int64_t t = base + lane;
    double p = 0.0, ds = 0.0;
    if (t < n.length) {
      p = exp(n.scale * dot(ks, q, at.b, t, at.h, n.width) - static_cast<double>(lse[stats + t]));
      ds = p * (dot(vs, g, at.b, t, at.h, n.width) - deltas[stats + t]);
    }
    const int chunk = static_cast<int>(n.length - base < kWarp ? n.length - base : kWarp);
    for (int j = 0; j < chunk; ++j) {
      const double pj = __shfl_sync(kFullMask, p, j);
      const double dsj = __shfl_sync(kFullMask, ds, j);
      for (int i = 0; i < kPerLane; ++i) {
        const std::int64_t d = lane + i * kWarp;
        if (d < n.width) {
          acc_v[i] += pj * g.at(at.b, base + j, at.h, d);
          acc_k[i] += dsj * q.at(at.b, base + j, at.h, d);
        }
      }
    }
  }
  const std::int64_t offset = ((at.b * n.length + at.t) * n.heads + at.h) * n.width;
  for (int i = 0; i < kPerLane; ++i) {
    const std::int64_t d = lane + i * kWarp;
    if (d < n.width) {
      grad_k[offset + d] = static_cast<T>(n.scale * acc_k[i]);
      grad_v[offset + d] = static_cast<T>(acc_v[i]);
    }
  }
}

Shape shape_of(const Tensor& q, const OpAttributes& attributes) {
  const AttentionAttributes a = AttentionAttributes::from(attributes);
  return {q.size(0), q.size(1), q.size(2), q.size(3), a.causal, a.scale};
}

unsigned row_blocks(const Shape& n) {
  const std::int64_t rows = n.batch * n.heads * n.length;
  return static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
}

template <typename T>
T* typed(const Tensor& tensor) {
  return static_cast<T*>(tensor.data_ptr());
}

}  // namespace

void attention(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& q = call.input(0);
  const Shape n = shape_of(q, call.attributes);
  if (n.batch * n.heads * n.length == 0) return;
  cuda_backend::DeviceGuard guard(q.device());
  cudaStream_t stream = stream_of(outputs[0]);
  dispatch_floating(q.dtype(), "attention", [&]<typename T>() {
    attention_forward<T><<<row_blocks(n), kRowsPerBlock * kWarp, 0, stream>>>(
        heads_view<T>(q), heads_view<T>(call.input(1)), heads_view<T>(call.input(2)), n,
        typed<T>(outputs[0]), typed<T>(outputs[1]));
    GROVE_CUDA_CHECK(cudaGetLastError());
  });
}

void attention_backward(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& q = call.input(1);
  const Shape n = shape_of(q, call.attributes);
  if (n.batch * n.heads * n.length == 0) return;
  cuda_backend::DeviceGuard guard(q.device());
  cudaStream_t stream = stream_of(outputs[0]);
  const Tensor lse = call.input(5).contiguous();
  // Scratch from the caching allocator (the capture's pool while capturing): delta per query row.
  const Tensor deltas =
      empty({n.batch, n.heads, n.length}, TensorOptions(DType::Float64).device(q.device()));
  dispatch_floating(q.dtype(), "attention_backward", [&]<typename T>() {
    const HeadsView<T> g = heads_view<T>(call.input(0)), qs = heads_view<T>(q);
    const HeadsView<T> ks = heads_view<T>(call.input(2)), vs = heads_view<T>(call.input(3));
    attention_backward_queries<T><<<row_blocks(n), kRowsPerBlock * kWarp, 0, stream>>>(
        g, qs, ks, vs, heads_view<T>(call.input(4)), typed<const T>(lse), n,
        typed<double>(deltas), typed<T>(outputs[0]));
    GROVE_CUDA_CHECK(cudaGetLastError());
    attention_backward_keys<T><<<row_blocks(n), kRowsPerBlock * kWarp, 0, stream>>>(
        g, qs, ks, vs, typed<const T>(lse), typed<const double>(deltas), n, typed<T>(outputs[1]),
        typed<T>(outputs[2]));
    GROVE_CUDA_CHECK(cudaGetLastError());
  });
  // lse's copy (if any) and deltas are freed after the launches, reused in stream order.
}

}  // namespace grove::ops::cuda
