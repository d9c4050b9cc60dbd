// CUDA kernels of attention (ops/attention.h); ops/cpu/attention.cpp is the reference they match.
//
// A block takes eight rows of one (batch, head) pair, one warp per row: query rows for the
// forward and for the backward's grad_q, key rows for the backward's grad_k and grad_v. It walks
// the other side's rows (the keys of its queries, or the queries of its keys) in tiles of 32,
// each tile copied into shared memory by the whole block (adjacent threads read adjacent
// elements of a row: the GPT's q, k and v are strided views of its (B, T, 3C) projection). In a
// tile, lane j takes row j: its dot products with the warp's own row (also in shared memory)
// run over D without shuffles, its softmax weight is one exp, and the warp then adds the 32 rows'
// contributions into its outputs, lane l holding elements l, l + 32, ... (kPerLane of them: 1
// for D <= 32, up to 8 for D = 256), each weight read from shared memory. Nothing of size T x T
// is stored. Sums are in the inputs' precision, as the CPU's (and cuBLAS's float32 products).
//
// The forward is the online softmax: a running maximum m and sum l per query row; a tile whose
// maximum is larger rescales what was gathered by exp(m_old - m_new). Its outputs are out and
// lse = m + log(l). The backward recomputes p = exp(s - lse) instead of storing it; its first
// kernel also writes delta = grad . out per query row, which the second reads.
//
// Two earlier versions, measured and replaced (H200, per GPT layer, forward / grad_q / grad_k
// and grad_v kernels): a lane per key forming whole dot products from global memory (32 rows
// 1.5 KB apart per load), 100 / 125 / 170 us; then lanes over D with shuffle-summed dot
// products, every lane repeating each key's exp, 74 / 115 / 73 us; then these tiles with a
// 64-bit division per loaded element, 42 / 44 / 40 us; without it, 29 / 35 / 33 us, issue-bound
// on double-precision arithmetic (ncu: 0.58 warp instructions per scheduler cycle, 48% of the
// SM's throughput), which float32 inputs now do in float32.
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
  __device__ T at(std::int64_t b, std::int64_t t, std::int64_t h, std::int64_t d) const {
    return data[b * sb + t * st + h * sh + d * sd];
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

constexpr int kTile = kWarp;  // rows of the other side per shared tile: one per lane

// The block's shared memory, carved from the dynamic allocation (see shared_bytes):
//   a, b      two tiles of kTile rows x (D + 1) (the + 1 keeps lane j's row j in its own bank)
//   own, own2 the warps' own rows, kRowsPerBlock x D each
//   w, w2     per warp, the tile's weights: kRowsPerBlock x kTile each
template <typename T>
struct SharedLayout {
  T* a;
  T* b;
  T* own;
  T* own2;
  T* w;
  T* w2;
  std::int64_t pitch;  // D + 1
  __device__ SharedLayout(T* base, std::int64_t width) : pitch(width + 1) {
    a = base;
    b = a + kTile * pitch;
    own = b + kTile * pitch;
    own2 = own + kRowsPerBlock * width;
    w = own2 + kRowsPerBlock * width;
    w2 = w + kRowsPerBlock * kTile;
  }
};

std::size_t shared_bytes(std::int64_t width, std::size_t element) {
  const std::int64_t elements =
      2 * kTile * (width + 1) + 2 * kRowsPerBlock * width + 2 * kRowsPerBlock * kTile;
  return static_cast<std::size_t>(elements) * element;
}

// The block's pair and rows: blocks run over (pair, group of kRowsPerBlock positions).
struct BlockRows {
  std::int64_t b, h, first;  // first: the group's first position
  std::int64_t t;            // this warp's position (may be >= T in the last group)
  __device__ BlockRows(const Shape& n) {
    const std::int64_t groups = (n.length + kRowsPerBlock - 1) / kRowsPerBlock;
    const std::int64_t pair = blockIdx.x / groups;
    b = pair / n.heads;
    h = pair % n.heads;
    first = (blockIdx.x % groups) * kRowsPerBlock;
    t = first + static_cast<std::int64_t>(threadIdx.x) / kWarp;
  }
};

// Copies rows [start, start + kTile) of x (pair b, h) into `tile` (rows past T are not read):
// warp w copies rows w, w + 8, ..., its lanes adjacent elements of each row. No division per
// element: with one (a 64-bit one), the kernels spent most of their time on index arithmetic.
template <typename T>
__device__ void load_tile(T* tile, const HeadsView<T>& x, const Shape& n, std::int64_t b,
                          std::int64_t h, std::int64_t start, std::int64_t pitch) {
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const auto width = static_cast<int>(n.width);
  for (int row = warp; row < kTile && start + row < n.length; row += kRowsPerBlock) {
    const T* source = x.data + b * x.sb + (start + row) * x.st + h * x.sh;
    T* target = tile + row * pitch;
    for (int d = lane; d < width; d += kWarp) target[d] = source[d * x.sd];
  }
}

// Copies the warp's own row (b, t, h) of x into `row`.
template <typename T>
__device__ void load_own(T* row, const HeadsView<T>& x, const Shape& n, std::int64_t b,
                         std::int64_t t, std::int64_t h, int lane) {
  const T* source = x.data + b * x.sb + t * x.st + h * x.sh;
  for (int d = lane; d < static_cast<int>(n.width); d += kWarp) {
    row[d] = source[d * x.sd];
  }
}

template <typename T>
__device__ T dot(const T* row, const T* tile_row, std::int64_t width) {
  T sum = 0.0;
  for (int d = 0; d < static_cast<int>(width); ++d) sum += row[d] * tile_row[d];
  return sum;
}

template <typename T>
__device__ T warp_sum(T value) {
  return warp_reduce(value, Sum{});
}
// The largest non-NaN value: fmax ignores NaN, as the CPU's row maximum does (a NaN score then
// poisons the sums instead).
template <typename T>
__device__ T warp_fmax(T value) {
  for (int step = kWarp / 2; step > 0; step /= 2) {
    value = fmax(value, __shfl_xor_sync(kFullMask, value, step));
  }
  return value;
}

template <int kPerLane, typename T>
__device__ void store_lane(T* row, const T (&values)[kPerLane], T factor,
                           std::int64_t width, int lane) {
  for (int i = 0; i < kPerLane; ++i) {
    const std::int64_t d = lane + i * kWarp;
    if (d < width) row[d] = factor * values[i];
  }
}

// acc[i] += sum over the tile's first `rows` rows j of weights[j] tile[j][lane + 32 i].
template <int kPerLane, typename T>
__device__ void add_rows(T (&acc)[kPerLane], const T* weights, const T* tile,
                         int rows, std::int64_t pitch, std::int64_t width, int lane) {
  const auto row_pitch = static_cast<int>(pitch);
  for (int j = 0; j < rows; ++j) {
    const T weight = weights[j];
    const T* row = tile + j * row_pitch;
    for (int i = 0; i < kPerLane; ++i) {
      const int d = lane + i * kWarp;
      if (d < width) acc[i] += weight * row[d];
    }
  }
}

template <typename T, int kPerLane>
__global__ void attention_forward(HeadsView<T> q, HeadsView<T> k, HeadsView<T> v, Shape n, T* out,
                                  T* lse) {
  extern __shared__ __align__(16) unsigned char shared_memory[];
  const SharedLayout<T> s(reinterpret_cast<T*>(shared_memory), n.width);
  const auto scale = static_cast<T>(n.scale);
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const BlockRows rows(n);
  const bool mine = rows.t < n.length;  // warps past T only help load the tiles
  T* own = s.own + warp * n.width;
  T* weights = s.w + warp * kTile;
  if (mine) load_own(own, q, n, rows.b, rows.t, rows.h, lane);
  // Keys any of the block's queries attends to.
  const std::int64_t last = rows.first + kRowsPerBlock;
  const std::int64_t keys_needed = n.causal ? (last < n.length ? last : n.length) : n.length;
  const std::int64_t keys = n.causal ? rows.t + 1 : n.length;  // this warp's
  const T kMinusInf = -INFINITY;
  T m = kMinusInf, l = 0.0;
  T acc[kPerLane] = {};
  for (std::int64_t start = 0; start < keys_needed; start += kTile) {
    __syncthreads();  // the last tile is consumed
    load_tile(s.a, k, n, rows.b, rows.h, start, s.pitch);
    load_tile(s.b, v, n, rows.b, rows.h, start, s.pitch);
    __syncthreads();
    if (!mine || start >= keys) continue;
    const std::int64_t u = start + lane;
    const T score = u < keys ? scale * dot(own, s.a + lane * s.pitch, n.width) : kMinusInf;
    const T m_new = fmax(m, warp_fmax(score));
    if (m_new == kMinusInf) continue;  // every score so far is -inf (or NaN): nothing to add
    const T rescale = exp(m - m_new);
    const T p = u < keys ? exp(score - m_new) : 0.0;
    l = l * rescale + warp_sum(p);
    for (int i = 0; i < kPerLane; ++i) acc[i] *= rescale;
    weights[lane] = p;
    __syncwarp();
    const std::int64_t in_tile = keys - start < kTile ? keys - start : kTile;
    add_rows(acc, weights, s.b, static_cast<int>(in_tile), s.pitch, n.width, lane);
    __syncwarp();  // weights are read before the next tile writes them
    m = m_new;
  }
  if (!mine) return;
  store_lane(out + ((rows.b * n.length + rows.t) * n.heads + rows.h) * n.width, acc, T(1) / l,
             n.width, lane);
  if (lane == 0) {
    lse[(rows.b * n.heads + rows.h) * n.length + rows.t] = m + log(l);
  }
}

// Per query row: delta = grad . out (kept for attention_backward_keys) and
// grad_q = scale sum_u ds[u] k[u], ds[u] = p[u] (grad . v[u] - delta).
template <typename T, int kPerLane>
__global__ void attention_backward_queries(HeadsView<T> g, HeadsView<T> q, HeadsView<T> k,
                                           HeadsView<T> v, HeadsView<T> o, const T* lse, Shape n,
                                           T* deltas, T* grad_q) {
  extern __shared__ __align__(16) unsigned char shared_memory[];
  const SharedLayout<T> s(reinterpret_cast<T*>(shared_memory), n.width);
  const auto scale = static_cast<T>(n.scale);
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const BlockRows rows(n);
  const bool mine = rows.t < n.length;
  T* own_q = s.own + warp * n.width;
  T* own_g = s.own2 + warp * n.width;
  T* weights = s.w + warp * kTile;
  T delta = 0.0, row_lse = 0.0;
  if (mine) {
    load_own(own_q, q, n, rows.b, rows.t, rows.h, lane);
    load_own(own_g, g, n, rows.b, rows.t, rows.h, lane);
    T partial = 0.0;
    for (std::int64_t d = lane; d < n.width; d += kWarp) {
      partial += own_g[d] * o.at(rows.b, rows.t, rows.h, d);
    }
    delta = warp_sum(partial);
    const std::int64_t stats = (rows.b * n.heads + rows.h) * n.length + rows.t;
    if (lane == 0) deltas[stats] = delta;
    row_lse = lse[stats];
  }
  __syncwarp();
  const std::int64_t last = rows.first + kRowsPerBlock;
  const std::int64_t keys_needed = n.causal ? (last < n.length ? last : n.length) : n.length;
  const std::int64_t keys = n.causal ? rows.t + 1 : n.length;
  T acc[kPerLane] = {};
  for (std::int64_t start = 0; start < keys_needed; start += kTile) {
    __syncthreads();
    load_tile(s.a, k, n, rows.b, rows.h, start, s.pitch);
    load_tile(s.b, v, n, rows.b, rows.h, start, s.pitch);
    __syncthreads();
    if (!mine || start >= keys) continue;
    const std::int64_t u = start + lane;
    T ds = 0.0;
    if (u < keys) {
      const T p = exp(scale * dot(own_q, s.a + lane * s.pitch, n.width) - row_lse);
      ds = p * (dot(own_g, s.b + lane * s.pitch, n.width) - delta);
    }
    weights[lane] = ds;
    __syncwarp();
    const std::int64_t in_tile = keys - start < kTile ? keys - start : kTile;
    add_rows(acc, weights, s.a, static_cast<int>(in_tile), s.pitch, n.width, lane);
    __syncwarp();
  }
  if (!mine) return;
  store_lane(grad_q + ((rows.b * n.length + rows.t) * n.heads + rows.h) * n.width, acc, scale,
             n.width, lane);
}

// Per key row u: grad_k = scale sum_t ds[t] q[t] and grad_v = sum_t p[t] grad[t], over the
// queries t that attend to u.
template <typename T, int kPerLane>
__global__ void attention_backward_keys(HeadsView<T> g, HeadsView<T> q, HeadsView<T> k,
                                        HeadsView<T> v, const T* lse, const T* deltas,
                                        Shape n, T* grad_k, T* grad_v) {
  extern __shared__ __align__(16) unsigned char shared_memory[];
  const SharedLayout<T> s(reinterpret_cast<T*>(shared_memory), n.width);
  const auto scale = static_cast<T>(n.scale);
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const BlockRows rows(n);  // rows.t is this warp's key position
  const bool mine = rows.t < n.length;
  T* own_k = s.own + warp * n.width;
  T* own_v = s.own2 + warp * n.width;
  T* p_weights = s.w + warp * kTile;
  T* ds_weights = s.w2 + warp * kTile;
  if (mine) {
    load_own(own_k, k, n, rows.b, rows.t, rows.h, lane);
    load_own(own_v, v, n, rows.b, rows.t, rows.h, lane);
  }
  __syncwarp();
  const std::int64_t stats = (rows.b * n.heads + rows.h) * n.length;  // query t's: + t
  // Queries that attend to any of the block's keys: from its first key on when causal.
  const std::int64_t first_query = n.causal ? rows.first : 0;
  const std::int64_t from = n.causal ? rows.t : 0;  // this warp's first query
  T acc_k[kPerLane] = {}, acc_v[kPerLane] = {};
  for (std::int64_t start = first_query; start < n.length; start += kTile) {
    __syncthreads();
    load_tile(s.a, q, n, rows.b, rows.h, start, s.pitch);
    load_tile(s.b, g, n, rows.b, rows.h, start, s.pitch);
    __syncthreads();
    if (!mine || start + kTile <= from) continue;
    const std::int64_t t = start + lane;
    T p = 0.0, ds = 0.0;
    if (t >= from && t < n.length) {
      p = exp(scale * dot(own_k, s.a + lane * s.pitch, n.width) -
              lse[stats + t]);
      ds = p * (dot(own_v, s.b + lane * s.pitch, n.width) - deltas[stats + t]);
    }
    p_weights[lane] = p;
    ds_weights[lane] = ds;
    __syncwarp();
    const std::int64_t in_tile = n.length - start < kTile ? n.length - start : kTile;
    add_rows(acc_v, p_weights, s.b, static_cast<int>(in_tile), s.pitch, n.width, lane);
    add_rows(acc_k, ds_weights, s.a, static_cast<int>(in_tile), s.pitch, n.width, lane);
    __syncwarp();
  }
  if (!mine) return;
  const std::int64_t offset = ((rows.b * n.length + rows.t) * n.heads + rows.h) * n.width;
  store_lane(grad_k + offset, acc_k, scale, n.width, lane);
  store_lane(grad_v + offset, acc_v, T(1), n.width, lane);
}

// Calls body.template operator()<kPerLane>() with the fewest elements per lane that hold D.
template <typename Body>
void by_head_width(std::int64_t width, Body&& body) {
  if (width <= 32) return body.template operator()<1>();
  if (width <= 64) return body.template operator()<2>();
  if (width <= 128) return body.template operator()<4>();
  body.template operator()<8>();
}

// Launches `kernel` over the blocks of `n` with its dynamic shared memory, raising the kernel's
// limit past the default 48 KB where D needs it (up to about 170 KB for D = 256).
template <typename Kernel, typename... Args>
void launch(Kernel kernel, const Shape& n, std::size_t element, cudaStream_t stream,
            Args... args) {
  const std::size_t bytes = shared_bytes(n.width, element);
  if (bytes > 48 * 1024) {
    GROVE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(bytes)));
  }
  const std::int64_t groups = (n.length + kRowsPerBlock - 1) / kRowsPerBlock;
  kernel<<<static_cast<unsigned>(n.batch * n.heads * groups), kRowsPerBlock * kWarp, bytes,
           stream>>>(args...);
  GROVE_CUDA_CHECK(cudaGetLastError());
}

Shape shape_of(const Tensor& q, const OpAttributes& attributes) {
  const AttentionAttributes a = AttentionAttributes::from(attributes);
  return {q.size(0), q.size(1), q.size(2), q.size(3), a.causal, a.scale};
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
      launch(attention_forward<T, kPerLane>, n, sizeof(T), stream, heads_view<T>(q),
             heads_view<T>(call.input(1)), heads_view<T>(call.input(2)), n, typed<T>(outputs[0]),
             typed<T>(outputs[1]));
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
  const Tensor deltas = empty({n.batch, n.heads, n.length}, TensorOptions(q.dtype()).device(q.device()));
  dispatch_floating(q.dtype(), "attention_backward", [&]<typename T>() {
    const HeadsView<T> g = heads_view<T>(call.input(0)), qs = heads_view<T>(q);
    const HeadsView<T> ks = heads_view<T>(call.input(2)), vs = heads_view<T>(call.input(3));
    by_head_width(n.width, [&]<int kPerLane>() {
      launch(attention_backward_queries<T, kPerLane>, n, sizeof(T), stream, g, qs, ks, vs,
             heads_view<T>(call.input(4)), typed<const T>(lse), n, typed<T>(deltas),
             typed<T>(outputs[0]));
      launch(attention_backward_keys<T, kPerLane>, n, sizeof(T), stream, g, qs, ks, vs, typed<const T>(lse),
             typed<const T>(deltas), n, typed<T>(outputs[1]), typed<T>(outputs[2]));
    });
  });
  // lse's copy (if any) and deltas are freed after the launches, reused in stream order.
}

}  // namespace grove::ops::cuda
