// CUDA kernels of attention (ops/attention.h); ops/cpu/attention.cpp is the reference they match.
//
// A warp takes kRowsPerWarp consecutive rows of one (batch, head) pair: query rows for the
// forward and for the backward's grad_q, key rows for the backward's grad_k and grad_v. A block
// is up to eight such warps, all of one pair. It walks the other side's rows (the keys of its
// queries, or the queries of its keys) in tiles of 32, each tile copied into shared memory by
// the whole block (adjacent threads read adjacent elements of a row: the GPT's q, k and v are
// strided views of its (B, T, 3C) projection). In a tile, lane j takes row j:
//   - its dot products with the warp's own rows (also in shared memory) run over D without
//     shuffles, each tile element read once for all of the warp's rows (16-byte reads of rows
//     padded with zeros to a multiple of 16 bytes);
//   - its softmax weights are one exp per own row;
//   - the warp then adds the tile rows' contributions into its outputs, lane l holding elements
//     l, l + 32, ... of each own row (kPerLane of them: 1 for D <= 32, up to 8 for D = 256), each
//     tile element read once for all of the warp's rows, the rows' weights side by side.
// Nothing of size T x T is stored. Sums are in the inputs' precision, as the CPU's (and
// cuBLAS's float32 products), over d in order.
//
// The forward is the online softmax: a running maximum m and sum l per query row; a tile whose
// maximum is larger rescales what was gathered by exp(m_old - m_new). Its outputs are out and
// lse = m + log(l). The backward recomputes p = exp(s - lse) instead of storing it; its first
// kernel also writes delta = grad . out per query row, which the second reads.
//
// Earlier versions, measured and replaced (H200, per GPT layer, forward / grad_q / grad_k and
// grad_v kernels): a lane per key forming whole dot products from global memory (32 rows 1.5 KB
// apart per load), 100 / 125 / 170 us; lanes over D with shuffle-summed dot products, every lane
// repeating each key's exp, 74 / 115 / 73 us; these tiles with one row per warp and a 64-bit
// division per loaded element, 42 / 44 / 40 us; without the division, 29 / 35 / 33 us in double
// (issue-bound, ncu: 0.58 warp instructions per scheduler cycle), 22.5 / 29.3 / 27.6 us in
// float32. One row per warp read two shared values per multiply-add; four rows per warp reuse
// each read (18.2 / 29.6 / 25.0 us), and loading a tile with all of a thread's loads issued
// before its stores (one memory latency per tile, not one per row) gave 13.6 / 20.5 / 19.3 us.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>

#include "core/cuda/cuda_device.h"
#include "ops/attention.h"
#include "ops/attributes.h"
#include "ops/cuda/attention.h"
#include "ops/cuda/attention_cudnn.h"
#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/kernel_loop.cuh"
#include "ops/reduced_compute.h"

namespace grove::ops::cuda {
namespace {

constexpr int kMaxWarpsPerBlock = 8;
// Own rows per warp. Measured on an H200 (GPT layer, forward / grad_q / grad_k and grad_v):
// 2 rows 20.8 / 25.9 / 36.9 us, 4 rows 18.2 / 29.6 / 25.0 us (before the batched loads below).
// More rows reuse each shared read more but leave fewer warps to hide latency: the GPT has
// 8192 query rows, 2048 warps of 4.
constexpr int kRowsPerWarp = 4;
constexpr int kTile = kWarp;  // rows of the other side per shared tile: one per lane

// 16 bytes of T, the width of one shared-memory read: float4 or double2.
template <typename T>
struct Vec;
template <>
struct Vec<float> {
  using type = float4;
  static constexpr int n = 4;
  __device__ static void fma(float& sum, float4 a, float4 b) {
    sum += a.x * b.x;
    sum += a.y * b.y;
    sum += a.z * b.z;
    sum += a.w * b.w;
  }
};
template <>
struct Vec<double> {
  using type = double2;
  static constexpr int n = 2;
  __device__ static void fma(double& sum, double2 a, double2 b) {
    sum += a.x * b.x;
    sum += a.y * b.y;
  }
};

// One (B, T, H, D) operand: element (b, t, h, d) at data[b sb + t st + h sh + d sd].
template <typename T>
struct HeadsView {
  const T* data;
  std::int64_t sb, st, sh, sd;
  __device__ const T* row(std::int64_t b, std::int64_t t, std::int64_t h) const {
    return data + b * sb + t * st + h * sh;
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

// Row widths in shared memory, in elements. A row is D elements and zeros up to `padded`, a
// multiple of 16 bytes; tile rows are `pitch` apart, an odd number of 16-byte units, so that the
// eight lanes of each quarter warp reading 16 bytes of eight consecutive rows hit distinct banks.
struct Widths {
  int width, padded, pitch;
};

Widths widths_of(std::int64_t width, int vec) {
  const auto d = static_cast<int>(width);
  const int padded = (d + vec - 1) / vec * vec;
  const int pitch = (d + 2 * vec - 1) / (2 * vec) * (2 * vec) + vec;
  return {d, padded, pitch};
}

// The block's shared memory, carved from the dynamic allocation (see shared_elements):
//   a, b      two tiles of kTile rows x pitch
//   own, own2 the warps' own rows, warps x R rows x padded each
//   w, w2     per warp, the tile rows' weights for its own rows: warps x kTile x R each, row j's
//             R weights side by side
template <typename T, int R>
struct SharedLayout {
  T *a, *b, *own, *own2, *w, *w2;
  __device__ SharedLayout(T* base, const Widths& n, int warps) {
    a = base;
    b = a + kTile * n.pitch;
    own = b + kTile * n.pitch;
    own2 = own + warps * R * n.padded;
    w = own2 + warps * R * n.padded;
    w2 = w + warps * kTile * R;
  }
};

template <int R>
std::int64_t shared_elements(const Widths& n, int warps) {
  return 2 * kTile * n.pitch + 2 * warps * R * n.padded + 2 * warps * kTile * R;
}

// Where a warp works: pair (b, h), and its own rows first .. first + R - 1 (some may be past T).
// Blocks run over (pair, group of warps x R positions).
template <int R>
struct WarpRows {
  std::int64_t b, h;
  std::int64_t block_first;  // the block's first position
  std::int64_t block_end;    // one past the block's last position below T
  std::int64_t first;        // this warp's first position
  int warp, lane, warps;
  __device__ explicit WarpRows(const Shape& n) {
    warps = static_cast<int>(blockDim.x) / kWarp;
    warp = static_cast<int>(threadIdx.x) / kWarp;
    lane = static_cast<int>(threadIdx.x) % kWarp;
    const std::int64_t per_block = warps * R;
    const std::int64_t groups = (n.length + per_block - 1) / per_block;
    const std::int64_t pair = blockIdx.x / groups;
    b = pair / n.heads;
    h = pair % n.heads;
    block_first = (blockIdx.x % groups) * per_block;
    block_end = block_first + per_block < n.length ? block_first + per_block : n.length;
    first = block_first + warp * R;
  }
};

// Copies rows [start, start + kTile) of x into tile_x and of y into tile_y (pair b, h),
// zero-padded to `padded` elements; rows past T are zeros. Warp w copies rows w, w + warps, ...,
// its lanes adjacent elements of each row. Each thread issues all of its loads before its first
// store: a store to shared memory between two loads would make every load wait for the one
// before it (the compiler cannot tell that they do not alias), one memory latency per row. No
// division per element either: with one (a 64-bit one), the kernels spent most of their time on
// index arithmetic.
template <typename T>
__device__ void load_tiles(T* tile_x, const HeadsView<T>& x, T* tile_y, const HeadsView<T>& y,
                           const Widths& n, std::int64_t length, std::int64_t b, std::int64_t h,
                           std::int64_t start, int warp, int warps, int lane) {
  constexpr int kBatch = kTile / kMaxWarpsPerBlock;  // rows per warp in a full block
  for (int first_row = warp; first_row < kTile; first_row += warps * kBatch) {
    for (int d = lane; d < n.padded; d += kWarp) {
      T xs[kBatch], ys[kBatch];
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        const int row = first_row + i * warps;
        const bool inside = row < kTile && start + row < length && d < n.width;
        xs[i] = inside ? x.row(b, start + row, h)[d * x.sd] : T(0);
        ys[i] = inside ? y.row(b, start + row, h)[d * y.sd] : T(0);
      }
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        const int row = first_row + i * warps;
        if (row >= kTile) break;
        tile_x[row * n.pitch + d] = xs[i];
        tile_y[row * n.pitch + d] = ys[i];
      }
    }
  }
}

// Copies the warp's R own rows of each of the N operands xs[s] into rows[s] (R rows of
// `padded`, zero-padded; rows past T are zeros), all loads before the stores as above.
template <int R, int N, typename T>
__device__ void load_own(T* const (&rows)[N], const HeadsView<T> (&xs)[N], const Widths& n,
                         std::int64_t length, std::int64_t b, std::int64_t h, std::int64_t first,
                         int lane) {
  for (int d = lane; d < n.padded; d += kWarp) {
    T values[N][R];
#pragma unroll
    for (int s = 0; s < N; ++s) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const bool inside = first + r < length && d < n.width;
        values[s][r] = inside ? xs[s].row(b, first + r, h)[d * xs[s].sd] : T(0);
      }
    }
#pragma unroll
    for (int s = 0; s < N; ++s) {
#pragma unroll
      for (int r = 0; r < R; ++r) rows[s][r * n.padded + d] = values[s][r];
    }
  }
}

// sums[r] = own row r . tile_row, over d in order (the zero padding adds exact zeros).
template <int R, typename T>
__device__ void dots(T (&sums)[R], const T* own, const T* tile_row, int padded) {
  using V = Vec<T>;
  using Packed = typename V::type;
  for (int r = 0; r < R; ++r) sums[r] = T(0);
  for (int d = 0; d < padded; d += V::n) {
    const Packed t = *reinterpret_cast<const Packed*>(tile_row + d);
    for (int r = 0; r < R; ++r) {
      V::fma(sums[r], *reinterpret_cast<const Packed*>(own + r * padded + d), t);
    }
  }
}

// The R rows' values combined over the warp, the shuffles of the rows interleaved.
template <int R, typename T>
__device__ void warp_sums(T (&values)[R]) {
  for (int step = kWarp / 2; step > 0; step /= 2) {
    for (int r = 0; r < R; ++r) values[r] += __shfl_xor_sync(kFullMask, values[r], step);
  }
}
// The largest non-NaN value: fmax ignores NaN, as the CPU's row maximum does (a NaN score then
// poisons the sums instead).
template <int R, typename T>
__device__ void warp_fmaxes(T (&values)[R]) {
  for (int step = kWarp / 2; step > 0; step /= 2) {
    for (int r = 0; r < R; ++r) {
      values[r] = fmax(values[r], __shfl_xor_sync(kFullMask, values[r], step));
    }
  }
}

// Tile rows [lo[r], hi[r]) are those that own row r takes (its keys, or the queries that attend
// to it); the others are skipped, not weighted by 0, so that a masked-out inf or NaN stays out.
template <int R>
struct RowRanges {
  int lo[R], hi[R];
  int any_lo = kTile, any_hi = 0, all_lo = 0, all_hi = kTile;  // union and intersection
  __device__ void set(int r, int from, int to) {
    lo[r] = from;
    hi[r] = to;
    if (from < to) {
      any_lo = min(any_lo, from);
      any_hi = max(any_hi, to);
    }
    all_lo = max(all_lo, from);
    all_hi = min(all_hi, to);
  }
  __device__ bool takes(int r, int j) const { return j >= lo[r] && j < hi[r]; }
};

// acc[r][i] += sum over tile rows j that row r takes of weights[j][r] tile[j][lane + 32 i].
template <int R, int kPerLane, typename T>
__device__ void add_rows(T (&acc)[R][kPerLane], const T* weights, const T* tile,
                         const RowRanges<R>& ranges, const Widths& n, int lane) {
  for (int j = ranges.any_lo; j < ranges.any_hi; ++j) {
    T w[R];
    for (int r = 0; r < R; ++r) w[r] = weights[j * R + r];
    const T* row = tile + j * n.pitch;
    T x[kPerLane];
    for (int i = 0; i < kPerLane; ++i) {
      const int d = lane + i * kWarp;
      x[i] = d < n.width ? row[d] : T(0);
    }
    const bool all = j >= ranges.all_lo && j < ranges.all_hi;  // the same for the whole warp
    for (int r = 0; r < R; ++r) {
      if (!all && !ranges.takes(r, j)) continue;
      for (int i = 0; i < kPerLane; ++i) acc[r][i] += w[r] * x[i];
    }
  }
}

template <int R, int kPerLane, typename T>
__device__ void store_rows(T* base, const T (&acc)[R][kPerLane], const T (&factor)[R],
                           std::int64_t first, const Shape& n, std::int64_t b, std::int64_t h,
                           int lane) {
  for (int r = 0; r < R; ++r) {
    if (first + r >= n.length) return;
    T* row = base + ((b * n.length + first + r) * n.heads + h) * n.width;
    for (int i = 0; i < kPerLane; ++i) {
      const int d = lane + i * kWarp;
      if (d < n.width) row[d] = factor[r] * acc[r][i];
    }
  }
}

// Keys query position t attends to: [0, t] when causal, else all; none past T.
__device__ inline std::int64_t keys_of(std::int64_t t, const Shape& n) {
  if (t >= n.length) return 0;
  return n.causal ? t + 1 : n.length;
}

__device__ inline int clamp_tile(std::int64_t x) {
  return static_cast<int>(x < 0 ? 0 : (x > kTile ? kTile : x));
}

template <typename T, int R, int kPerLane>
__global__ void __launch_bounds__(kMaxWarpsPerBlock* kWarp)
    attention_forward(HeadsView<T> q, HeadsView<T> k, HeadsView<T> v, Shape n, Widths widths,
                      T* out, T* lse) {
  extern __shared__ __align__(16) unsigned char shared_memory[];
  const WarpRows<R> rows(n);
  const SharedLayout<T, R> s(reinterpret_cast<T*>(shared_memory), widths, rows.warps);
  const auto scale = static_cast<T>(n.scale);
  const int lane = rows.lane;
  T* own = s.own + rows.warp * R * widths.padded;
  T* weights = s.w + rows.warp * kTile * R;
  load_own<R, 1>({own}, {q}, widths, n.length, rows.b, rows.h, rows.first, lane);
  std::int64_t keys[R];  // of each own row
  std::int64_t warp_keys = 0;
  for (int r = 0; r < R; ++r) {
    keys[r] = keys_of(rows.first + r, n);
    warp_keys = keys[r] > warp_keys ? keys[r] : warp_keys;
  }
  const std::int64_t block_keys = n.causal ? rows.block_end : n.length;
  const T kMinusInf = -INFINITY;
  T m[R], l[R], acc[R][kPerLane] = {};
  for (int r = 0; r < R; ++r) m[r] = kMinusInf, l[r] = T(0);
  for (std::int64_t start = 0; start < block_keys; start += kTile) {
    __syncthreads();  // the last tile is consumed
    load_tiles(s.a, k, s.b, v, widths, n.length, rows.b, rows.h, start, rows.warp, rows.warps,
               lane);
    __syncthreads();
    if (start >= warp_keys) continue;  // warps wholly past T (or done) only help load
    const std::int64_t u = start + lane;
    T score[R], top[R];
    dots(score, own, s.a + lane * widths.pitch, widths.padded);
    for (int r = 0; r < R; ++r) {
      score[r] = u < keys[r] ? scale * score[r] : kMinusInf;
      top[r] = score[r];
    }
    warp_fmaxes(top);
    T p[R], rescale[R];
    RowRanges<R> ranges;
    for (int r = 0; r < R; ++r) {
      const T m_new = fmax(m[r], top[r]);
      // Every score so far -inf (or NaN): nothing to add yet, and exp(-inf - -inf) is NaN.
      const bool none = m_new == kMinusInf;
      rescale[r] = none ? T(1) : exp(m[r] - m_new);
      p[r] = !none && u < keys[r] ? exp(score[r] - m_new) : T(0);
      m[r] = m_new;
      ranges.set(r, 0, none ? 0 : clamp_tile(keys[r] - start));
    }
    T total[R];
    for (int r = 0; r < R; ++r) total[r] = p[r];
    warp_sums(total);
    for (int r = 0; r < R; ++r) {
      l[r] = l[r] * rescale[r] + total[r];
      for (int i = 0; i < kPerLane; ++i) acc[r][i] *= rescale[r];
      weights[lane * R + r] = p[r];
    }
    __syncwarp();
    add_rows(acc, weights, s.b, ranges, widths, lane);
    __syncwarp();  // weights are read before the next tile writes them
  }
  T inverse[R];
  for (int r = 0; r < R; ++r) inverse[r] = T(1) / l[r];
  store_rows(out, acc, inverse, rows.first, n, rows.b, rows.h, lane);
  if (lane < R && rows.first + lane < n.length) {
    T row_m = m[0], row_l = l[0];
    for (int r = 1; r < R; ++r) {
      if (lane == r) row_m = m[r], row_l = l[r];
    }
    lse[(rows.b * n.heads + rows.h) * n.length + rows.first + lane] = row_m + log(row_l);
  }
}

// Per query row: delta = grad . out (kept for attention_backward_keys) and
// grad_q = scale sum_u ds[u] k[u], ds[u] = p[u] (grad . v[u] - delta).
template <typename T, int R, int kPerLane>
__global__ void __launch_bounds__(kMaxWarpsPerBlock* kWarp)
    attention_backward_queries(HeadsView<T> g, HeadsView<T> q, HeadsView<T> k, HeadsView<T> v,
                               HeadsView<T> o, const T* lse, Shape n, Widths widths, T* deltas,
                               T* grad_q) {
  extern __shared__ __align__(16) unsigned char shared_memory[];
  const WarpRows<R> rows(n);
  const SharedLayout<T, R> s(reinterpret_cast<T*>(shared_memory), widths, rows.warps);
  const auto scale = static_cast<T>(n.scale);
  const int lane = rows.lane;
  T* own_q = s.own + rows.warp * R * widths.padded;
  T* own_g = s.own2 + rows.warp * R * widths.padded;
  T* weights = s.w + rows.warp * kTile * R;
  load_own<R, 2>({own_q, own_g}, {q, g}, widths, n.length, rows.b, rows.h, rows.first, lane);
  __syncwarp();
  const std::int64_t stats = (rows.b * n.heads + rows.h) * n.length + rows.first;  // + r
  T delta[R], row_lse[R];
  std::int64_t keys[R];
  std::int64_t warp_keys = 0;
  for (int r = 0; r < R; ++r) {
    keys[r] = keys_of(rows.first + r, n);
    warp_keys = keys[r] > warp_keys ? keys[r] : warp_keys;
    delta[r] = T(0);
    row_lse[r] = keys[r] == 0 ? T(0) : lse[stats + r];  // loaded before the deltas are stored
    if (keys[r] == 0) continue;                         // past T
    const T* out_row = o.row(rows.b, rows.first + r, rows.h);
    for (int d = lane; d < widths.width; d += kWarp) {
      delta[r] += own_g[r * widths.padded + d] * out_row[d * o.sd];
    }
  }
  warp_sums(delta);
  for (int r = 0; r < R; ++r) {
    if (lane == r && keys[r] != 0) deltas[stats + r] = delta[r];
  }
  const std::int64_t block_keys = n.causal ? rows.block_end : n.length;
  T acc[R][kPerLane] = {};
  for (std::int64_t start = 0; start < block_keys; start += kTile) {
    __syncthreads();
    load_tiles(s.a, k, s.b, v, widths, n.length, rows.b, rows.h, start, rows.warp, rows.warps,
               lane);
    __syncthreads();
    if (start >= warp_keys) continue;
    const std::int64_t u = start + lane;
    T qk[R], gv[R];
    dots(qk, own_q, s.a + lane * widths.pitch, widths.padded);
    dots(gv, own_g, s.b + lane * widths.pitch, widths.padded);
    RowRanges<R> ranges;
    for (int r = 0; r < R; ++r) {
      const T ds = u < keys[r] ? exp(scale * qk[r] - row_lse[r]) * (gv[r] - delta[r]) : T(0);
      weights[lane * R + r] = ds;
      ranges.set(r, 0, clamp_tile(keys[r] - start));
    }
    __syncwarp();
    add_rows(acc, weights, s.a, ranges, widths, lane);
    __syncwarp();
  }
  T factor[R];
  for (int r = 0; r < R; ++r) factor[r] = scale;
  store_rows(grad_q, acc, factor, rows.first, n, rows.b, rows.h, lane);
}

// Per key row u: grad_k = scale sum_t ds[t] q[t] and grad_v = sum_t p[t] grad[t], over the
// queries t that attend to u.
template <typename T, int R, int kPerLane>
__global__ void __launch_bounds__(kMaxWarpsPerBlock* kWarp)
    attention_backward_keys(HeadsView<T> g, HeadsView<T> q, HeadsView<T> k, HeadsView<T> v,
                            const T* lse, const T* deltas, Shape n, Widths widths, T* grad_k,
                            T* grad_v) {
  extern __shared__ __align__(16) unsigned char shared_memory[];
  const WarpRows<R> rows(n);  // its own rows are key positions
  const SharedLayout<T, R> s(reinterpret_cast<T*>(shared_memory), widths, rows.warps);
  const auto scale = static_cast<T>(n.scale);
  const int lane = rows.lane;
  T* own_k = s.own + rows.warp * R * widths.padded;
  T* own_v = s.own2 + rows.warp * R * widths.padded;
  T* p_weights = s.w + rows.warp * kTile * R;
  T* ds_weights = s.w2 + rows.warp * kTile * R;
  load_own<R, 2>({own_k, own_v}, {k, v}, widths, n.length, rows.b, rows.h, rows.first, lane);
  __syncwarp();
  const std::int64_t stats = (rows.b * n.heads + rows.h) * n.length;  // query t's: + t
  // The first query attending to own row r (causal: r's own position); none for rows past T.
  std::int64_t from[R];
  for (int r = 0; r < R; ++r) {
    const std::int64_t u = rows.first + r;
    from[r] = u >= n.length ? n.length : (n.causal ? u : 0);
  }
  // Queries that attend to any of the block's keys: from its first key on when causal.
  const std::int64_t first_query = n.causal ? rows.block_first : 0;
  T acc_k[R][kPerLane] = {}, acc_v[R][kPerLane] = {};
  for (std::int64_t start = first_query; start < n.length; start += kTile) {
    __syncthreads();
    load_tiles(s.a, q, s.b, g, widths, n.length, rows.b, rows.h, start, rows.warp, rows.warps,
               lane);
    __syncthreads();
    if (start + kTile <= from[0]) continue;  // none of this tile's queries attends to the warp's
    const std::int64_t t = start + lane;
    const bool query = t < n.length;
    const T t_lse = query ? lse[stats + t] : T(0);
    const T t_delta = query ? deltas[stats + t] : T(0);
    T kq[R], vg[R];
    dots(kq, own_k, s.a + lane * widths.pitch, widths.padded);
    dots(vg, own_v, s.b + lane * widths.pitch, widths.padded);
    RowRanges<R> ranges;
    const int in_tile = clamp_tile(n.length - start);
    for (int r = 0; r < R; ++r) {
      const bool takes = query && t >= from[r];
      const T p = takes ? exp(scale * kq[r] - t_lse) : T(0);
      p_weights[lane * R + r] = p;
      ds_weights[lane * R + r] = takes ? p * (vg[r] - t_delta) : T(0);
      ranges.set(r, clamp_tile(from[r] - start), in_tile);
    }
    __syncwarp();
    add_rows(acc_v, p_weights, s.b, ranges, widths, lane);
    add_rows(acc_k, ds_weights, s.a, ranges, widths, lane);
    __syncwarp();
  }
  T k_factor[R], v_factor[R];
  for (int r = 0; r < R; ++r) k_factor[r] = scale, v_factor[r] = T(1);
  store_rows(grad_k, acc_k, k_factor, rows.first, n, rows.b, rows.h, lane);
  store_rows(grad_v, acc_v, v_factor, rows.first, n, rows.b, rows.h, lane);
}

// Calls body.template operator()<kPerLane>() with the fewest elements per lane that hold D.
template <typename Body>
void by_head_width(std::int64_t width, Body&& body) {
  if (width <= 32) return body.template operator()<1>();
  if (width <= 64) return body.template operator()<2>();
  if (width <= 128) return body.template operator()<4>();
  body.template operator()<8>();
}

// The most dynamic shared memory a block of the current device may have (past the default
// 48 KB, with the kernel's limit raised).
std::size_t shared_limit() {
  int device = 0, bytes = 0;
  GROVE_CUDA_CHECK(cudaGetDevice(&device));
  GROVE_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return static_cast<std::size_t>(bytes);
}

// Launches `kernel` over the blocks of `n` with up to kMaxWarpsPerBlock warps, fewer where their
// shared memory would not fit (D = 256 in float64), raising the kernel's limit past the default
// 48 KB where needed.
template <typename T, int R, typename Kernel, typename... Args>
void launch(Kernel kernel, const Shape& n, const Widths& widths, cudaStream_t stream,
            Args... args) {
  int warps = kMaxWarpsPerBlock;
  std::size_t bytes = shared_elements<R>(widths, warps) * sizeof(T);
  if (bytes > 48 * 1024) {
    const std::size_t limit = shared_limit();
    while (warps > 1 && bytes > limit) {
      warps /= 2;
      bytes = shared_elements<R>(widths, warps) * sizeof(T);
    }
    GROVE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(bytes)));
  }
  const std::int64_t per_block = static_cast<std::int64_t>(warps) * R;
  const std::int64_t groups = (n.length + per_block - 1) / per_block;
  kernel<<<static_cast<unsigned>(n.batch * n.heads * groups), warps * kWarp, bytes, stream>>>(
      args...);
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

// bfloat16 and float16: cuDNN's fused attention, or these kernels on float32 copies where it
// does not take the call (Note [Fused attention through cuDNN] in attention_cudnn.cpp).
void attention(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& q = call.input(0);
  const Shape n = shape_of(q, call.attributes);
  if (n.batch * n.heads * n.length == 0) return;
  if (is_reduced_float(q.dtype())) {
    if (!cudnn_attention(call, outputs)) run_widened(attention, call, outputs, 0);
    return;
  }
  cuda_backend::DeviceGuard guard(q.device());
  cudaStream_t stream = stream_of(outputs[0]);
  dispatch_floating(q.dtype(), "attention", [&]<typename T>() {
    const Widths widths = widths_of(n.width, Vec<T>::n);
    by_head_width(n.width, [&]<int kPerLane>() {
      launch<T, kRowsPerWarp>(attention_forward<T, kRowsPerWarp, kPerLane>, n, widths, stream,
                              heads_view<T>(q), heads_view<T>(call.input(1)),
                              heads_view<T>(call.input(2)), n, widths, typed<T>(outputs[0]),
                              typed<T>(outputs[1]));
    });
  });
}

void attention_backward(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& q = call.input(1);
  const Shape n = shape_of(q, call.attributes);
  if (n.batch * n.heads * n.length == 0) return;
  if (is_reduced_float(q.dtype())) {
    if (!cudnn_attention_backward(call, outputs)) {
      run_widened(attention_backward, call, outputs, 0);
    }
    return;
  }
  cuda_backend::DeviceGuard guard(q.device());
  cudaStream_t stream = stream_of(outputs[0]);
  const Tensor lse = call.input(5).contiguous();
  // Scratch from the caching allocator (the capture's pool while capturing): delta per query row.
  const Tensor deltas =
      empty({n.batch, n.heads, n.length}, TensorOptions(q.dtype()).device(q.device()));
  dispatch_floating(q.dtype(), "attention_backward", [&]<typename T>() {
    const Widths widths = widths_of(n.width, Vec<T>::n);
    const HeadsView<T> g = heads_view<T>(call.input(0)), qs = heads_view<T>(q);
    const HeadsView<T> ks = heads_view<T>(call.input(2)), vs = heads_view<T>(call.input(3));
    by_head_width(n.width, [&]<int kPerLane>() {
      constexpr int R = kRowsPerWarp;
      launch<T, R>(attention_backward_queries<T, R, kPerLane>, n, widths, stream, g, qs, ks, vs,
                   heads_view<T>(call.input(4)), typed<const T>(lse), n, widths, typed<T>(deltas),
                   typed<T>(outputs[0]));
      launch<T, R>(attention_backward_keys<T, R, kPerLane>, n, widths, stream, g, qs, ks, vs,
                   typed<const T>(lse), typed<const T>(deltas), n, widths, typed<T>(outputs[1]),
                   typed<T>(outputs[2]));
    });
  });
  // lse's copy (if any) and deltas are freed after the launches, reused in stream order.
}

}  // namespace grove::ops::cuda
