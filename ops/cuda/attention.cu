// CUDA kernels of attention (ops/attention.h); ops/cpu/attention.cpp is the reference they match.
//
// One warp per row, eight rows per block: per query row for the forward and for the backward's
// grad_q, per key row for the backward's grad_k and grad_v. Lane l holds elements l, l + 32, ...
// of the warp's own rows (kPerLane of them: 1 for D <= 32, up to 8 for D = 256) in registers,
// and the warp walks the other side's rows (the keys of a query, the queries of a key) four at
// a time: each dot product is the lanes' partial sums added by warp shuffles (every lane gets
// the total, four reductions interleaved), then every lane updates its elements with the row's
// weight. Rows are read through their strides, a row's D elements by adjacent lanes (the GPT's
// q, k and v are views of its (B, T, 3C) projection); nothing of size T x T is stored; the sums
// are in double.
//
// The forward is the online softmax: a running maximum m and sum l per query row; a score above
// m rescales what was gathered by exp(m - s). Its outputs are out and lse = m + log(l). The
// backward recomputes p = exp(s - lse) instead of storing it; its first kernel also writes
// delta = grad . out per query row, which the second reads.
//
// First version, measured and replaced: a lane per key, each lane forming its key's whole dot
// product from global memory (32 rows 1.5 KB apart per load): 100, 125 and 170 us per GPT layer
// for the three kernels on an H200, slower than the products, mask and softmax it replaced.
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

constexpr int kGroup = 4;  // rows of the other side taken together (independent reductions)

// Sums each of the kGroup values over the warp; every lane gets the totals.
__device__ inline void warp_sums(double (&values)[kGroup]) {
  for (int step = kWarp / 2; step > 0; step /= 2) {
    for (int j = 0; j < kGroup; ++j) values[j] += __shfl_xor_sync(kFullMask, values[j], step);
  }
}

// This lane's elements of row (b, t, h) of x: element d = lane + i * 32 in slot i (0 past D).
template <int kPerLane, typename T>
__device__ void load_lane(double (&row)[kPerLane], const HeadsView<T>& x, std::int64_t b,
                          std::int64_t t, std::int64_t h, std::int64_t width, int lane) {
  for (int i = 0; i < kPerLane; ++i) {
    const std::int64_t d = lane + i * kWarp;
    row[i] = d < width ? x.at(b, t, h, d) : 0.0;
  }
}

// This lane's part of row . x[b, u, h, :].
template <int kPerLane, typename T>
__device__ double partial_dot(const double (&row)[kPerLane], const HeadsView<T>& x,
                              std::int64_t b, std::int64_t u, std::int64_t h, std::int64_t width,
                              int lane) {
  double sum = 0.0;
  for (int i = 0; i < kPerLane; ++i) {
    const std::int64_t d = lane + i * kWarp;
    if (d < width) sum += row[i] * x.at(b, u, h, d);
  }
  return sum;
}

template <int kPerLane, typename T>
__device__ void store_lane(T* row, const double (&values)[kPerLane], double factor,
                           std::int64_t width, int lane) {
  for (int i = 0; i < kPerLane; ++i) {
    const std::int64_t d = lane + i * kWarp;
    if (d < width) row[d] = static_cast<T>(factor * values[i]);
  }
}

__device__ inline std::int64_t warp_row() {
  return static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock +
         static_cast<std::int64_t>(threadIdx.x) / kWarp;
}

template <typename T, int kPerLane>
__global__ void attention_forward(HeadsView<T> q, HeadsView<T> k, HeadsView<T> v, Shape n, T* out,
                                  T* lse) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const std::int64_t r = warp_row();
  if (r >= n.batch * n.heads * n.length) return;  // the whole warp
  const Row at(r, n);
  double qs[kPerLane];
  load_lane(qs, q, at.b, at.t, at.h, n.width, lane);
  const std::int64_t keys = n.causal ? at.t + 1 : n.length;
  constexpr double kMinusInf = -INFINITY;
  double m = kMinusInf, l = 0.0;
  double acc[kPerLane] = {};
  for (std::int64_t base = 0; base < keys; base += kGroup) {
    double s[kGroup];
    for (int j = 0; j < kGroup; ++j) {
      s[j] = base + j < keys ? partial_dot(qs, k, at.b, base + j, at.h, n.width, lane) : 0.0;
    }
    warp_sums(s);
    for (int j = 0; j < kGroup && base + j < keys; ++j) {
      const double score = n.scale * s[j];
      if (score == kMinusInf) continue;  // adds nothing
      double p = 1.0, rescale = 1.0;
      if (score > m) {  // a new maximum (never for NaN, which then poisons l and acc)
        rescale = exp(m - score);
        m = score;
      } else {
        p = exp(score - m);
      }
      l = l * rescale + p;
      for (int i = 0; i < kPerLane; ++i) {
        const std::int64_t d = lane + i * kWarp;
        acc[i] = acc[i] * rescale + (d < n.width ? p * v.at(at.b, base + j, at.h, d) : 0.0);
      }
    }
  }
  store_lane(out + ((at.b * n.length + at.t) * n.heads + at.h) * n.width, acc, 1.0 / l, n.width,
             lane);
  if (lane == 0) lse[(at.b * n.heads + at.h) * n.length + at.t] = static_cast<T>(m + log(l));
}

// Per query row: delta = grad . out (kept for attention_backward_keys) and
// grad_q = scale sum_u ds[u] k[u], ds[u] = p[u] (grad . v[u] - delta).
template <typename T, int kPerLane>
__global__ void attention_backward_queries(HeadsView<T> g, HeadsView<T> q, HeadsView<T> k,
                                           HeadsView<T> v, HeadsView<T> o, const T* lse, Shape n,
                                           double* deltas, T* grad_q) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const std::int64_t r = warp_row();
  if (r >= n.batch * n.heads * n.length) return;
  const Row at(r, n);
  double qs[kPerLane], gs[kPerLane];
  load_lane(qs, q, at.b, at.t, at.h, n.width, lane);
  load_lane(gs, g, at.b, at.t, at.h, n.width, lane);
  double delta_parts[kGroup] = {partial_dot(gs, o, at.b, at.t, at.h, n.width, lane)};
  warp_sums(delta_parts);
  const double delta = delta_parts[0];
  const std::int64_t stats = (at.b * n.heads + at.h) * n.length + at.t;
  if (lane == 0) deltas[stats] = delta;
  const double row_lse = static_cast<double>(lse[stats]);
  const std::int64_t keys = n.causal ? at.t + 1 : n.length;
  double acc[kPerLane] = {};
  for (std::int64_t base = 0; base < keys; base += kGroup) {
    double s[kGroup], dp[kGroup];
    for (int j = 0; j < kGroup; ++j) {
      const bool in = base + j < keys;
      s[j] = in ? partial_dot(qs, k, at.b, base + j, at.h, n.width, lane) : 0.0;
      dp[j] = in ? partial_dot(gs, v, at.b, base + j, at.h, n.width, lane) : 0.0;
    }
    warp_sums(s);
    warp_sums(dp);
    for (int j = 0; j < kGroup && base + j < keys; ++j) {
      const double ds = exp(n.scale * s[j] - row_lse) * (dp[j] - delta);
      for (int i = 0; i < kPerLane; ++i) {
        const std::int64_t d = lane + i * kWarp;
        if (d < n.width) acc[i] += ds * k.at(at.b, base + j, at.h, d);
      }
    }
  }
  store_lane(grad_q + ((at.b * n.length + at.t) * n.heads + at.h) * n.width, acc, n.scale,
             n.width, lane);
}

// Per key row u: grad_k = scale sum_t ds[t] q[t] and grad_v = sum_t p[t] grad[t], over the
// queries t that attend to u.
template <typename T, int kPerLane>
__global__ void attention_backward_keys(HeadsView<T> g, HeadsView<T> q, HeadsView<T> k,
                                        HeadsView<T> v, const T* lse, const double* deltas,
                                        Shape n, T* grad_k, T* grad_v) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const std::int64_t r = warp_row();
  if (r >= n.batch * n.heads * n.length) return;
  const Row at(r, n);  // at.t is the key's position here
  double ks[kPerLane], vs[kPerLane];
  load_lane(ks, k, at.b, at.t, at.h, n.width, lane);
  load_lane(vs, v, at.b, at.t, at.h, n.width, lane);
  const std::int64_t stats = (at.b * n.heads + at.h) * n.length;  // query t's lse, delta: + t
  double acc_k[kPerLane] = {}, acc_v[kPerLane] = {};
  for (std::int64_t base = n.causal ? at.t : 0; base < n.length; base += kGroup) {
    double s[kGroup], dp[kGroup];
    for (int j = 0; j < kGroup; ++j) {
      const bool in = base + j < n.length;
      s[j] = in ? partial_dot(ks, q, at.b, base + j, at.h, n.width, lane) : 0.0;
      dp[j] = in ? partial_dot(vs, g, at.b, base + j, at.h, n.width, lane) : 0.0;
    }
    warp_sums(s);
    warp_sums(dp);
    for (int j = 0; j < kGroup && base + j < n.length; ++j) {
      const std::int64_t t = base + j;
      const double p = exp(n.scale * s[j] - static_cast<double>(lse[stats + t]));
      const double ds = p * (dp[j] - deltas[stats + t]);
      for (int i = 0; i < kPerLane; ++i) {
        const std::int64_t d = lane + i * kWarp;
        if (d < n.width) {
          acc_v[i] += p * g.at(at.b, t, at.h, d);
          acc_k[i] += ds * q.at(at.b, t, at.h, d);
        }
      }
    }
  }
  const std::int64_t offset = ((at.b * n.length + at.t) * n.heads + at.h) * n.width;
  store_lane(grad_k + offset, acc_k, n.scale, n.width, lane);
  store_lane(grad_v + offset, acc_v, 1.0, n.width, lane);
}

// Calls body.template operator()<kPerLane>() with the fewest elements per lane that hold D.
template <typename Body>
void by_head_width(std::int64_t width, Body&& body) {
  if (width <= 32) return body.template operator()<1>();
  if (width <= 64) return body.template operator()<2>();
  if (width <= 128) return body.template operator()<4>();
  body.template operator()<8>();
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
    by_head_width(n.width, [&]<int kPerLane>() {
      attention_forward<T, kPerLane><<<row_blocks(n), kRowsPerBlock * kWarp, 0, stream>>>(
          heads_view<T>(q), heads_view<T>(call.input(1)), heads_view<T>(call.input(2)), n,
          typed<T>(outputs[0]), typed<T>(outputs[1]));
      GROVE_CUDA_CHECK(cudaGetLastError());
    });
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
    by_head_width(n.width, [&]<int kPerLane>() {
      const unsigned blocks = row_blocks(n);
      attention_backward_queries<T, kPerLane><<<blocks, kRowsPerBlock * kWarp, 0, stream>>>(
          g, qs, ks, vs, heads_view<T>(call.input(4)), typed<const T>(lse), n,
          typed<double>(deltas), typed<T>(outputs[0]));
      GROVE_CUDA_CHECK(cudaGetLastError());
      attention_backward_keys<T, kPerLane><<<blocks, kRowsPerBlock * kWarp, 0, stream>>>(
          g, qs, ks, vs, typed<const T>(lse), typed<const double>(deltas), n,
          typed<T>(outputs[1]), typed<T>(outputs[2]));
      GROVE_CUDA_CHECK(cudaGetLastError());
    });
  });
  // lse's copy (if any) and deltas are freed after the launches, reused in stream order.
}

}  // namespace grove::ops::cuda
