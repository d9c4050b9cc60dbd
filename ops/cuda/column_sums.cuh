// Sums down the columns of an (M, N) matrix of values, each value computed from its row and
// column by the caller: the bias-gradient sums of reduce.cu and the weight and bias gradients
// of layer_norm.cu. Only .cu files include this header.
//
// Note [Summing columns]
// ~~~~~~~~~~~~~~~~~~~~~~
// A sum over the rows of a row-major (M, N) matrix, one output per column (a linear layer's bias
// gradient: a (B, T, C) gradient summed over B and T; a layer norm's weight gradient), is done
// in two launches that read whole rows and add in an order fixed by the sizes alone (so results
// are the same from run to run, with no atomics):
//   1. column_partials: block (x, y) takes 32 adjacent columns (one per lane: each warp reads
//      32 adjacent elements of a row, coalesced) and the y-th run of kRowsPerSplit rows (more
//      past 65535 runs, the grid's limit); its
//      kColumnGroups row groups fold rows g, g + kColumnGroups, ... of the run, and row group 0
//      adds the groups' sums in group order into partials[split][column];
//   2. column_finish: the same shape over the splits instead of the rows: each column's
//      partials in split order, handed to the caller's `finish`.
// Up to kOneSplitRows rows are one split, whose sums step 1 hands to `finish` itself: one launch
// (an MLP's bias gradients over a batch of 128 rows; a second launch cost more than it saved).
// That one launch folds its rows in kOneSplitGroups row groups (1024 threads, 4 rows each for
// 128 rows), not kColumnGroups: with 8 groups each thread added 16 rows one after another, and
// the MLP's graphed step measured 94 against 89-90 us on an H200. Before, one block per output
// read a column (one element per row: a 32-byte sector per 4-byte element; the GPT's
// bias-gradient sums took 7 us each on an H200) and the layer norm's last stage added 64
// partials per column on one thread (13 us per call). launch_column_sums holds the host side.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/tensor.h"
#include "ops/cuda/block_reduce.cuh"

namespace grove::ops::cuda {

inline constexpr unsigned kColumnLanes = 32;     // columns per block
inline constexpr unsigned kColumnGroups = 8;     // rows (or splits) folded side by side
inline constexpr unsigned kOneSplitGroups = 32;  // the same, when one launch takes every row
inline constexpr std::int64_t kRowsPerSplit = 64;

// The runs of rows step 1 cuts the rows into: kRowsPerSplit rows each, or more when there would
// be more runs than a grid's second dimension holds.
struct ColumnSplits {
  std::int64_t splits;
  std::int64_t rows_per_split;
};
inline constexpr std::int64_t kOneSplitRows = 512;
inline ColumnSplits column_splits(std::int64_t rows) {
  if (rows <= kOneSplitRows) return {1, std::max<std::int64_t>(rows, 1)};
  constexpr std::int64_t kMaxSplits = 65535;  // gridDim.y
  const std::int64_t wanted = std::max<std::int64_t>(1, (rows + kRowsPerSplit - 1) / kRowsPerSplit);
  const std::int64_t splits = std::min(wanted, kMaxSplits);
  return {splits, std::max<std::int64_t>(kRowsPerSplit, (rows + splits - 1) / splits)};
}

inline dim3 column_grid(std::int64_t columns, std::int64_t splits) {
  return dim3(static_cast<unsigned>((columns + kColumnLanes - 1) / kColumnLanes),
              static_cast<unsigned>(splits));
}

// A plain sum in double (layer norm's, like its CPU kernel).
struct PlainSum {
  double sum = 0.0;
  __device__ void add(double value) { sum += value; }
  __device__ double value() const { return sum; }
};

// Step 1 (blocks of kColumnLanes x kGroups threads). element(row, column, values) writes the kSums
// values the element adds (a layer norm's g * xhat and g); partials holds kSums x splits x columns
// doubles. With one split (gridDim.y 1) the sums go to finish(column, k, sum) instead, and step 2
// is not launched. Sum: PlainSum, or a compensated sum with the same interface.
template <int kSums, unsigned kGroups, typename Sum, typename Element, typename Finish>
__global__ void column_partials(Element element, std::int64_t rows, std::int64_t columns,
                                std::int64_t rows_per_split, double* partials, Finish finish) {
  __shared__ double group_sums[kSums][kGroups][kColumnLanes + 1];  // +1: no bank conflicts
  const std::int64_t column = blockIdx.x * static_cast<std::int64_t>(kColumnLanes) + threadIdx.x;
  const std::int64_t begin = blockIdx.y * rows_per_split;
  const std::int64_t end = begin + rows_per_split < rows ? begin + rows_per_split : rows;
  Sum totals[kSums];
  if (column < columns) {
    for (std::int64_t row = begin + threadIdx.y; row < end; row += kGroups) {
      double values[kSums];
      element(row, column, values);
      for (int k = 0; k < kSums; ++k) totals[k].add(values[k]);
    }
  }
  for (int k = 0; k < kSums; ++k) group_sums[k][threadIdx.y][threadIdx.x] = totals[k].value();
  __syncthreads();
  if (threadIdx.y != 0 || column >= columns) return;
  const std::int64_t splits = gridDim.y;
  for (int k = 0; k < kSums; ++k) {
    Sum total;
    for (unsigned g = 0; g < kGroups; ++g) total.add(group_sums[k][g][threadIdx.x]);
    if (splits == 1) {
      finish(column, k, total.value());
    } else {
      partials[(k * splits + blockIdx.y) * columns + column] = total.value();
    }
  }
}

// Step 2, one block row: finish(column, k, sum) receives sum k of each column.
template <int kSums, unsigned kGroups, typename Sum, typename Finish>
__global__ void column_finish(const double* partials, std::int64_t splits, std::int64_t columns,
                              Finish finish) {
  __shared__ double group_sums[kSums][kGroups][kColumnLanes + 1];
  const std::int64_t column = blockIdx.x * static_cast<std::int64_t>(kColumnLanes) + threadIdx.x;
  Sum totals[kSums];
  if (column < columns) {
    for (std::int64_t split = threadIdx.y; split < splits; split += kGroups) {
      for (int k = 0; k < kSums; ++k)
        totals[k].add(partials[(k * splits + split) * columns + column]);
    }
  }
  for (int k = 0; k < kSums; ++k) group_sums[k][threadIdx.y][threadIdx.x] = totals[k].value();
  __syncthreads();
  if (threadIdx.y != 0 || column >= columns) return;
  for (int k = 0; k < kSums; ++k) {
    Sum total;
    for (unsigned g = 0; g < kGroups; ++g) total.add(group_sums[k][g][threadIdx.x]);
    finish(column, k, total.value());
  }
}

// Both steps: finish(column, k, sum) receives sum k of each column of the rows x columns
// matrix whose elements element(row, column, values) computes. Scratch for the partials comes
// from the caching allocator on `device` (the capture's pool while capturing), freed after the
// launches and reused in stream order; one split needs none.
template <int kSums, typename Sum, typename Element, typename Finish>
void launch_column_sums(Element element, std::int64_t rows, std::int64_t columns, Device device,
                        cudaStream_t stream, Finish finish) {
  const ColumnSplits split = column_splits(rows);
  if (split.splits == 1) {
    column_partials<kSums, kOneSplitGroups, Sum>
        <<<column_grid(columns, 1), dim3(kColumnLanes, kOneSplitGroups), 0, stream>>>(
            element, rows, columns, split.rows_per_split, nullptr, finish);
    GROVE_CUDA_CHECK(cudaGetLastError());
    return;
  }
  const Tensor scratch =
      empty({kSums, split.splits, columns}, TensorOptions(DType::Float64).device(device));
  auto* partials = static_cast<double*>(scratch.data_ptr());
  const dim3 block(kColumnLanes, kColumnGroups);
  column_partials<kSums, kColumnGroups, Sum>
      <<<column_grid(columns, split.splits), block, 0, stream>>>(
          element, rows, columns, split.rows_per_split, partials, finish);
  GROVE_CUDA_CHECK(cudaGetLastError());
  column_finish<kSums, kColumnGroups, Sum>
      <<<column_grid(columns, 1), block, 0, stream>>>(partials, split.splits, columns, finish);
  GROVE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace grove::ops::cuda
