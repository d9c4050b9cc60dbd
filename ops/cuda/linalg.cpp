// CUDA kernels for matmul, bmm and linear (ops/cuda/linalg.h); ops/cpu/linalg.cpp is the
// reference they match. Library calls only (cuBLASLt, cuBLAS), so this is a .cpp for g++.
//
// Outline: every call is read as the CPU kernel reads it, `count` row-major-terms products
// c_i (M x N) = a_i (M x K) @ b_i (K x N), each operand in place when one of its two matrix dims
// has unit stride (else a contiguous() copy, Note [Scratch copies before a CPU kernel] in
// ops/cpu/linalg.h, which holds for CUDA scratch tensors as well). cuBLAS is column-major, and a
// row-major matrix is its transpose in column-major terms, so the row-major C = a @ b is computed
// as the column-major C^T = b^T @ a^T: operands swapped, m = N, n = M, and each operand gets
// CUBLAS_OP_N when it is row-major and CUBLAS_OP_T when it is column-major. The output is
// contiguous, (count, M, N).
//   - Batches: the batch dims of both operands (broadcast ones with stride 0) are coalesced; the
//     innermost remaining dim is one strided-batched call, any outer dims a loop of calls. When
//     b is the same for every product and a's matrices form one row-major stack (x @ W^T in a
//     model), the batch folds into M: one product instead of many, as the CPU kernel does.
//     Batch dims that do not coalesce and broadcast nothing (attention's (B, H, T, D) heads, a
//     view of (B, T, H, D)) are packed first: a copy of each such operand with its matrices
//     stacked, each keeping its orientation, so the call is one strided batch and not a loop of
//     B small products (Note [Packing batches for one strided call]).
//   - float32: cublasLtMatmul with CUBLAS_COMPUTE_32F (or CUBLAS_COMPUTE_32F_FAST_TF32 when
//     allow_tf32()), linear's bias fused as the BIAS epilogue. See Note [cuBLASLt plan cache].
//     Batches with a broadcast (stride 0) operand, and shapes for which cuBLASLt offers no
//     algorithm, go to cublasGemmStridedBatchedEx instead.
//   - bfloat16 and float16: as float32, with 16-bit operands and output on the tensor cores,
//     accumulating in float32 (CUBLAS_COMPUTE_32F) and rounding once into the output; the bias
//     epilogue adds a 16-bit bias in float32 before that rounding
//     (Note [Reduced-precision compute] in ops/reduced_compute.h).
//   - float64: cublasDgemmStridedBatched; linear's bias is copied into the output first and the
//     product accumulated onto it (beta = 1).
//   - K = 0: the empty sum, zeros (or the bias), without cuBLAS.
//
// Note [Packing batches for one strided call]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// cuBLAS's strided batch takes one stride per operand, so batch dims that do not merge into one
// (the heads of a (B, T, H, D) tensor viewed as (B, H, T, D): H steps by D, B by T*H*D) used to
// become a loop of strided-batched calls, one per outer index. The GPT's attention made 32
// launches per product that way: 783 tiny GEMMs of about 4.5 us each, 3.6 of the 5.4 ms its
// eager step spent in kernels on an H200 (ncu). Copying an operand with its matrices stacked
// costs one elementwise kernel over the operand and turns the loop into one call. The copy keeps
// each matrix's orientation (a transposed key stays column-major, read with CUBLAS_OP_T), so
// only the batch layout changes: the same products, summed in whatever order cuBLAS picks for
// the new batch shape (equal to the loop's within the float tolerance, not bit for bit). It is
// done when the loop would make at least kPackFromCalls calls (two or three large products
// lose nothing to their launches, and the copy would cost a pass over the operands) and no
// operand broadcasts over a batch dim (stride 0: packing would materialise the broadcast).
//
// Note [cuBLASLt plan cache]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A cuBLASLt matmul needs an operation descriptor, three matrix layouts and an algorithm, and
// asking the heuristic for an algorithm costs tens of microseconds, more than the small GEMMs of
// an MLP take to run. So each thread keeps them per key: device, dtype, TF32, bias, transposes,
// m, n, k, leading dims, batch count and strides, and the alignment (a power of two up to 256
// bytes) of each pointer, because the heuristic may pick kernels that need 16-byte or wider loads
// and a sliced operand can be less aligned than the last one of that shape; and whether benchmark
// mode timed its kernels (Note [Timing matmul kernels]). The heuristic is asked once per key and
// thread (its "no algorithm" answer is kept too); later calls cost a hash lookup and
// cublasLtMatmul. The cache is thread_local so that setting the bias pointer on a cached
// descriptor needs no lock; descriptors are host objects, freed when the thread exits.
//
// Note [Timing matmul kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The heuristic ranks kernels with a model, without running them, and at the small shapes of
// grove's models its first pick can be far from the best. Benchmark mode (set_matmul_benchmark
// in ops/precision.h) asks it for up to kCandidates kernels and times each on the call's own
// buffers, as conv's benchmark mode does (Note [cuDNN convolution plans]): one warm-up run, then
// kTimedRuns between two CUDA events queued behind a spin of the stream (hold_stream), so that
// the events see GPU time only and not the host's launches. The fastest wins; ties within 5% go
// to the heuristic's rank. The runs write only the output, which the call then writes for real;
// a call that adds into its output (beta = 1) is not timed. Timing synchronises the host, so it
// is done only where that is allowed (host_sync_allowed), and measured plans are kept under
// their own keys (key field 19): a call inside a capture looks for the measured plan of an
// earlier eager call of its shape (the usual warm-up) before the heuristic's.
#include "ops/cuda/linalg.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

#include "core/cuda/cuda_backend.h"
#include "core/cuda/cuda_device.h"
#include "core/strided_loop.h"
#include "ops/attributes.h"
#include "ops/cuda/blas_handle.h"
#include "ops/cuda/reduce.h"
#include "ops/cuda/stream_hold.h"
#include "ops/matrix_view.h"
#include "ops/precision.h"

namespace grove::ops::cuda {
namespace {

// One operand in row-major terms: its first matrix and its batch dims.
struct Operand {
  const char* data = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t leading = 1;
  bool row_major = true;
  DimVector batch_sizes;
  DimVector batch_strides;
  Tensor scratch;  // a contiguous copy, when cuBLAS cannot read the tensor's layout
};

// The CPU's layout rule (one unit-stride dim), plus cuBLAS's: the leading dimension covers the
// rows of the matrix as stored column-major (cols of a row-major matrix, rows of a column-major).
bool blas_layout(std::int64_t rows, std::int64_t cols, std::int64_t row_stride,
                 std::int64_t col_stride, bool& row_major, std::int64_t& leading) {
  if (!matrix_layout(rows, cols, row_stride, col_stride, row_major, leading)) return false;
  return leading >= std::max<std::int64_t>(row_major ? cols : rows, 1);
}

Operand prepare(const Tensor& tensor, Role role) {
  Operand operand;
  const Tensor* source = &tensor;
  DimVector sizes, strides;
  matrix_view(tensor, role, sizes, strides);
  const std::size_t n = sizes.size();
  operand.rows = sizes[n - 2];
  operand.cols = sizes[n - 1];
  if (!blas_layout(operand.rows, operand.cols, strides[n - 2], strides[n - 1], operand.row_major,
                   operand.leading)) {
    // See Note [Scratch copies before a CPU kernel] in ops/cpu/linalg.h.
    operand.scratch = tensor.contiguous();
    source = &operand.scratch;
    matrix_view(operand.scratch, role, sizes, strides);
    const bool mapped = blas_layout(operand.rows, operand.cols, strides[n - 2], strides[n - 1],
                                    operand.row_major, operand.leading);
    GROVE_INTERNAL_ASSERT(mapped, "a contiguous matrix must map onto cuBLAS");
  }
  operand.data = static_cast<const char*>(source->data_ptr());
  operand.batch_sizes.assign(IntArrayRef(sizes.data(), n - 2));
  operand.batch_strides.assign(IntArrayRef(strides.data(), n - 2));
  return operand;
}

// One cuBLAS call in column-major terms: C' (m x n, leading dim ldc) = op(A') (m x k) @ op(B')
// (k x n), `count` times at the given element strides. A' is the row-major b, B' the row-major
// a (see the outline at the top).
struct GemmCall {
  DType dtype = DType::Float32;  // float32, bfloat16, float16 or float64: operands and output
  bool trans_a = false;
  bool trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t lda = 1, ldb = 1, ldc = 1;
  std::int64_t count = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  const void* bias = nullptr;  // not float64: m values, one per row of C' (column of C)
  // cuBLASLt only, no batch: n values written, the sums of op(B') over k (the BGRADB epilogue;
  // linear_weight_grad's bias gradient). Never set with `bias`.
  void* bias_grad = nullptr;
  bool accumulate = false;  // beta = 1: C' already holds the bias
};

// The largest power of two up to 256 that divides the address and every batch offset (in bytes).
std::int64_t alignment(const void* data, std::int64_t stride_bytes, std::int64_t count) {
  std::uintptr_t bits = reinterpret_cast<std::uintptr_t>(data);
  if (count > 1) bits |= static_cast<std::uintptr_t>(stride_bytes);
  std::int64_t align = 256;
  while (align > 1 && bits % static_cast<std::uintptr_t>(align) != 0) align /= 2;
  return align;
}

// See Note [cuBLASLt plan cache].
using LtKey = std::array<std::int64_t, 21>;

// The CUDA type of a dtype cuBLAS multiplies in 32-bit float (float64 goes to cublasDgemm).
cudaDataType_t cuda_type(DType dtype) {
  switch (dtype) {
    case DType::BFloat16:
      return CUDA_R_16BF;
    case DType::Float16:
      return CUDA_R_16F;
    default:
      return CUDA_R_32F;
  }
}

struct LtKeyHash {
  std::size_t operator()(const LtKey& key) const {
    std::uint64_t hash = 14695981039346656037ull;  // FNV-1a over the fields
    for (std::int64_t field : key) {
      hash ^= static_cast<std::uint64_t>(field);
      hash *= 1099511628211ull;
    }
    return static_cast<std::size_t>(hash);
  }
};

struct LtPlan {
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t layout_a = nullptr;
  cublasLtMatrixLayout_t layout_b = nullptr;
  cublasLtMatrixLayout_t layout_c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool found = false;  // false: cuBLASLt has no algorithm; use cuBLAS

  LtPlan() = default;
  LtPlan(const LtPlan&) = delete;
  LtPlan& operator=(const LtPlan&) = delete;
  ~LtPlan() {  // host objects only
    if (layout_c != nullptr) (void)cublasLtMatrixLayoutDestroy(layout_c);
    if (layout_b != nullptr) (void)cublasLtMatrixLayoutDestroy(layout_b);
    if (layout_a != nullptr) (void)cublasLtMatrixLayoutDestroy(layout_a);
    if (operation != nullptr) (void)cublasLtMatmulDescDestroy(operation);
  }
};

template <typename T>
void set_attribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute,
                   const T& value) {
  GROVE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value)));
}

cublasLtMatrixLayout_t make_layout(cudaDataType_t type, std::int64_t rows, std::int64_t cols,
                                   std::int64_t leading, std::int64_t count, std::int64_t stride) {
  cublasLtMatrixLayout_t layout = nullptr;
  GROVE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, static_cast<std::uint64_t>(rows),
                                                static_cast<std::uint64_t>(cols), leading));
  if (count > 1) {
    const auto batch = static_cast<std::int32_t>(count);
    GROVE_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                        &batch, sizeof(batch)));
    GROVE_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
        layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return layout;
}

constexpr int kCandidates = 8;  // kernels timed in benchmark mode

// Builds the descriptors of `call` and asks the heuristic for `wanted` algorithms (1, or
// kCandidates to time them); plan.algo is its first pick, and the rest are returned.
std::vector<cublasLtMatmulAlgo_t> build_plan(LtPlan& plan, const GemmCall& call, const LtKey& key,
                                             cublasLtHandle_t handle, std::size_t workspace_bytes,
                                             bool tf32, int wanted) {
  const cublasComputeType_t compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  GROVE_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan.operation, compute, CUDA_R_32F));
  const auto trans_a = static_cast<std::int32_t>(call.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N);
  const auto trans_b = static_cast<std::int32_t>(call.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N);
  set_attribute(plan.operation, CUBLASLT_MATMUL_DESC_TRANSA, trans_a);
  set_attribute(plan.operation, CUBLASLT_MATMUL_DESC_TRANSB, trans_b);
  if (call.bias != nullptr) {
    // Column-major C' has m rows; the BIAS epilogue adds bias[i] to row i of every column,
    // which is column i of the row-major result: linear's per-output-feature bias.
    set_attribute(plan.operation, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
    set_attribute(plan.operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, call.bias);
  } else if (call.bias_grad != nullptr) {
    // BGRADB sums op(B') (k x n) over k into n values, with the product's float32 accumulators,
    // rounded once to the output's dtype: for grad_weight' = x^T grad, B' is grad and the sums
    // are its columns' over the rows, the bias gradient.
    set_attribute(plan.operation, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BGRADB);
    set_attribute(plan.operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, call.bias_grad);
  }
  // Stored shapes: op N reads A' as m x k, op T as k x m (and B' likewise with n).
  const cudaDataType_t type = cuda_type(call.dtype);
  plan.layout_a = make_layout(type, call.trans_a ? call.k : call.m, call.trans_a ? call.m : call.k,
                              call.lda, call.count, call.stride_a);
  plan.layout_b = make_layout(type, call.trans_b ? call.n : call.k, call.trans_b ? call.k : call.n,
                              call.ldb, call.count, call.stride_b);
  plan.layout_c = make_layout(type, call.m, call.n, call.ldc, call.count, call.stride_c);

  cublasLtMatmulPreference_t preference = nullptr;
  GROVE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  const auto max_workspace = static_cast<std::uint64_t>(workspace_bytes);
  const auto attribute = [&](cublasLtMatmulPreferenceAttributes_t name, const auto& value) {
    GROVE_CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(preference, name, &value, sizeof(value)));
  };
  attribute(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, max_workspace);
  // key[15..17]: the alignments of A', B' and C'.
  attribute(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, static_cast<std::uint32_t>(key[15]));
  attribute(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, static_cast<std::uint32_t>(key[16]));
  attribute(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, static_cast<std::uint32_t>(key[17]));
  attribute(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, static_cast<std::uint32_t>(key[17]));
  std::array<cublasLtMatmulHeuristicResult_t, kCandidates> results{};
  int returned = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      handle, plan.operation, plan.layout_a, plan.layout_b, plan.layout_c, plan.layout_c,
      preference, std::min(wanted, kCandidates), results.data(), &returned);
  (void)cublasLtMatmulPreferenceDestroy(preference);
  // NOT_SUPPORTED is the heuristic's "nothing fits", which the cuBLAS path handles.
  if (status != CUBLAS_STATUS_NOT_SUPPORTED) GROVE_CUBLAS_CHECK(status);
  std::vector<cublasLtMatmulAlgo_t> candidates;
  if (status != CUBLAS_STATUS_SUCCESS) return candidates;
  for (int i = 0; i < returned; ++i) {
    if (results[i].state == CUBLAS_STATUS_SUCCESS) candidates.push_back(results[i].algo);
  }
  plan.found = !candidates.empty();
  if (plan.found) plan.algo = candidates.front();
  return candidates;
}

// One cublasLtMatmul of `call` with `algo` on `stream`.
cublasStatus_t run_lt(const LtPlan& plan, const cublasLtMatmulAlgo_t& algo, const GemmCall& call,
                      cublasLtHandle_t handle, const BlasWorkspace& workspace,
                      cudaStream_t stream) {
  const float alpha = 1.0f;
  const float beta = call.accumulate ? 1.0f : 0.0f;
  return cublasLtMatmul(handle, plan.operation, &alpha, call.a, plan.layout_a, call.b,
                        plan.layout_b, &beta, call.c, plan.layout_c, call.c, plan.layout_c, &algo,
                        workspace.data, workspace.bytes, stream);
}

// Benchmark mode: the fastest of `candidates` on the call's own buffers, in GPU time (of those
// within 5% of it, the first in the heuristic's rank). See Note [Timing matmul kernels].
// Synchronises the host.
cublasLtMatmulAlgo_t fastest(const LtPlan& plan,
                             const std::vector<cublasLtMatmulAlgo_t>& candidates,
                             const GemmCall& call, cublasLtHandle_t handle,
                             const BlasWorkspace& workspace, cudaStream_t stream) {
  constexpr int kTimedRuns = 5;
  constexpr std::int64_t kHoldMicroseconds = 300;  // longer than queuing the runs takes
  const TimingEvents events;
  std::vector<float> times(candidates.size(), std::numeric_limits<float>::infinity());
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    // Listed but refused at run time (nothing was launched): skip it.
    if (run_lt(plan, candidates[i], call, handle, workspace, stream) != CUBLAS_STATUS_SUCCESS) {
      continue;
    }
    hold_stream(stream, kHoldMicroseconds);
    GROVE_CUDA_CHECK(cudaEventRecord(events.start, stream));
    for (int r = 0; r < kTimedRuns; ++r) {
      GROVE_CUBLAS_CHECK(run_lt(plan, candidates[i], call, handle, workspace, stream));
    }
    GROVE_CUDA_CHECK(cudaEventRecord(events.stop, stream));
    GROVE_CUDA_CHECK(cudaEventSynchronize(events.stop));
    GROVE_CUDA_CHECK(cudaEventElapsedTime(&times[i], events.start, events.stop));
  }
  const float fastest_ms = *std::min_element(times.begin(), times.end());
  if (!(fastest_ms < std::numeric_limits<float>::infinity())) return candidates.front();
  std::size_t best = 0;
  while (times[best] > fastest_ms * 1.05f) ++best;
  return candidates[best];
}

// float32, bfloat16 or float16 through cuBLASLt; false if it has no algorithm for this call
// (nothing launched).
bool try_lt_gemm(const GemmCall& call, Stream stream) {
  const bool tf32 = allow_tf32() && call.dtype == DType::Float32;
  const auto element = static_cast<std::int64_t>(element_size(call.dtype));
  // Benchmark mode times a new shape's kernels where the host may wait (not while capturing).
  const bool benchmark = matmul_benchmark();
  const bool timed = benchmark && !call.accumulate && host_sync_allowed(stream.device);
  // The fields, in the order build_plan reads them (15 to 17: the alignments of A', B', C').
  LtKey key = {stream.device.index,
               tf32 ? 1 : 0,
               call.bias != nullptr ? 1 : (call.bias_grad != nullptr ? 2 : 0),
               call.trans_a ? 1 : 0,
               call.trans_b ? 1 : 0,
               call.m,
               call.n,
               call.k,
               call.lda,
               call.ldb,
               call.ldc,
               call.count,
               call.stride_a,
               call.stride_b,
               call.stride_c,
               alignment(call.a, call.stride_a * element, call.count),
               alignment(call.b, call.stride_b * element, call.count),
               alignment(call.c, call.stride_c * element, call.count),
               call.bias != nullptr        ? alignment(call.bias, 0, 1)
               : call.bias_grad != nullptr ? alignment(call.bias_grad, 0, 1)
                                           : 0,
               timed ? 1 : 0,
               static_cast<std::int64_t>(call.dtype)};
  thread_local std::unordered_map<LtKey, LtPlan, LtKeyHash> plans;
  cublasLtHandle_t handle = blas_lt_handle(stream.device);
  const BlasWorkspace workspace = blas_workspace(stream);
  cudaStream_t cuda_stream = cuda_backend::cuda_stream(stream);
  if (benchmark && !timed) {  // a capture: the plan an earlier eager call measured, if any
    LtKey measured = key;
    measured[19] = 1;
    if (plans.count(measured) != 0) key = measured;
  }
  auto [entry, inserted] = plans.try_emplace(key);
  LtPlan& plan = entry->second;
  try {
    std::vector<cublasLtMatmulAlgo_t> candidates;
    if (inserted) {
      candidates =
          build_plan(plan, call, key, handle, workspace.bytes, tf32, timed ? kCandidates : 1);
    }
    if (!plan.found) return false;
    // The bias (or its gradient) is this call's: set on the plan before it runs, timed or not.
    if (call.bias != nullptr) {
      set_attribute(plan.operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, call.bias);
    } else if (call.bias_grad != nullptr) {
      set_attribute(plan.operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, call.bias_grad);
    }
    if (candidates.size() > 1) {
      plan.algo = fastest(plan, candidates, call, handle, workspace, cuda_stream);
    }
  } catch (...) {
    if (inserted) plans.erase(entry);  // a plan half made is not kept
    throw;
  }
  GROVE_CUBLAS_CHECK(run_lt(plan, plan.algo, call, handle, workspace, cuda_stream));
  return true;
}

int as_int(std::int64_t value, const char* what) {
  GROVE_CHECK(value <= INT_MAX, "matmul on CUDA: expected ", what, " of at most ", INT_MAX,
              " for cuBLAS, but got ", value);
  return static_cast<int>(value);
}

// float32, bfloat16, float16 (no bias epilogue) or float64 through cuBLAS.
void blas_gemm(const GemmCall& call, Stream stream) {
  cublasHandle_t handle = blas_handle(stream);
  const cublasOperation_t trans_a = call.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t trans_b = call.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = as_int(call.m, "sizes"), n = as_int(call.n, "sizes"), k = as_int(call.k, "sizes");
  const int lda = as_int(call.lda, "strides"), ldb = as_int(call.ldb, "strides");
  const int ldc = as_int(call.ldc, "strides"), count = as_int(call.count, "batch sizes");
  if (call.dtype == DType::Float64) {
    const double alpha = 1.0;
    const double beta = call.accumulate ? 1.0 : 0.0;
    GROVE_CUBLAS_CHECK(cublasDgemmStridedBatched(
        handle, trans_a, trans_b, m, n, k, &alpha, static_cast<const double*>(call.a), lda,
        call.stride_a, static_cast<const double*>(call.b), ldb, call.stride_b, &beta,
        static_cast<double*>(call.c), ldc, call.stride_c, count));
    return;
  }
  const float alpha = 1.0f;
  const float beta = call.accumulate ? 1.0f : 0.0f;
  const cublasComputeType_t compute = allow_tf32() && call.dtype == DType::Float32
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  const cudaDataType_t type = cuda_type(call.dtype);
  GROVE_CUBLAS_CHECK(
      cublasGemmStridedBatchedEx(handle, trans_a, trans_b, m, n, k, &alpha, call.a, type, lda,
                                 call.stride_a, call.b, type, ldb, call.stride_b, &beta, call.c,
                                 type, ldc, call.stride_c, count, compute, CUBLAS_GEMM_DEFAULT));
}

// A coalesced batch dim: its size and each operand's element stride (0 where broadcast).
struct BatchDim {
  std::int64_t size = 1;
  std::int64_t a_stride = 0;
  std::int64_t b_stride = 0;
};

// The batch dims of a and b aligned from the right, size-1 dims dropped, and neighbours merged
// where both operands step through them as one dim. Outermost first; a fixed array, so that a
// call allocates nothing on the heap here.
struct BatchDims {
  std::array<BatchDim, kMaxKernelDims> dims;
  std::size_t size = 0;

  BatchDim& back() { return dims[size - 1]; }
  BatchDim& operator[](std::size_t d) { return dims[d]; }
};

BatchDims coalesced_batch(const Operand& a, const Operand& b, std::size_t ndim) {
  BatchDims batch;
  for (std::size_t d = 0; d < ndim; ++d) {
    auto size_and_stride = [&](const Operand& operand, std::int64_t& stride) {
      const std::size_t missing = ndim - operand.batch_sizes.size();
      stride = 0;
      if (d < missing) return std::int64_t{1};
      const std::int64_t size = operand.batch_sizes[d - missing];
      if (size != 1) stride = operand.batch_strides[d - missing];
      return size;
    };
    BatchDim dim;
    const std::int64_t a_size = size_and_stride(a, dim.a_stride);
    const std::int64_t b_size = size_and_stride(b, dim.b_stride);
    dim.size = std::max(a_size, b_size);
    if (dim.size == 1) continue;
    if (batch.size > 0) {
      BatchDim& outer = batch.back();
      if (outer.a_stride == dim.a_stride * dim.size && outer.b_stride == dim.b_stride * dim.size) {
        outer.size *= dim.size;
        outer.a_stride = dim.a_stride;
        outer.b_stride = dim.b_stride;
        continue;
      }
    }
    batch.dims[batch.size++] = dim;
  }
  return batch;
}

// Note [Packing batches for one strided call]: whether some product reads an operand twice.
bool broadcasts(const BatchDims& batch) {
  for (std::size_t d = 0; d < batch.size; ++d) {
    if (batch.dims[d].a_stride == 0 || batch.dims[d].b_stride == 0) return true;
  }
  return false;
}

// Note [Packing batches for one strided call]: a loop of at least kPackFromCalls calls, with no
// broadcast operand, and a batch count cuBLAS takes (an int).
constexpr std::int64_t kPackFromCalls = 4;
bool worth_packing(const BatchDims& batch) {
  if (batch.size < 2 || broadcasts(batch)) return false;
  std::int64_t calls = 1, count = 1;
  for (std::size_t d = 0; d < batch.size; ++d) {
    count *= batch.dims[d].size;
    if (d + 1 < batch.size) calls *= batch.dims[d].size;
  }
  return calls >= kPackFromCalls && count <= INT_MAX;
}

// Whether an operand's matrices form one stack: each batch dim (size-1 dims aside) steps over
// all of the dims inside it.
bool stacked(const Operand& operand) {
  std::int64_t inner_stride = -1, inner_size = 1;
  for (std::size_t d = operand.batch_sizes.size(); d-- > 0;) {
    if (operand.batch_sizes[d] == 1) continue;
    if (inner_stride >= 0 && operand.batch_strides[d] != inner_stride * inner_size) return false;
    inner_stride = operand.batch_strides[d];
    inner_size = operand.batch_sizes[d];
  }
  return true;
}

// A copy of `tensor` with its matrices stacked, each keeping its orientation.
Operand packed(const Tensor& tensor, Role role, bool row_major) {
  GROVE_INTERNAL_ASSERT(role != Role::Transposed, "linear's weight has no batch dims to pack");
  const Tensor copy =
      row_major ? tensor.contiguous() : tensor.transpose(-2, -1).contiguous().transpose(-2, -1);
  Operand operand = prepare(copy, role);
  operand.scratch = copy;  // alive until after the launch
  return operand;
}

// out (contiguous: count x M x N) = a @ b, with linear's bias when `bias` is defined. When
// `bias_grad` is defined (linear_weight_grad: left is grad^T), it is written with the sums of
// left's rows if the product's epilogue could do it; returns whether it did.
bool launch_gemm(const OpCall& op_call, const Tensor& out, const Tensor& left, const Tensor& right,
                 Role right_role, const Tensor& bias, const Tensor& bias_grad = Tensor()) {
  if (out.numel() == 0) return false;
  cuda_backend::DeviceGuard guard(out.device());
  const Stream stream = current_stream(out.device());
  const std::int64_t inner = left.size(-1);
  if (inner == 0) {  // K = 0: the empty sum
    if (bias.defined()) {
      cuda_backend::launch_copy(out, bias.expand(out.sizes()));
    } else {
      GROVE_CUDA_CHECK(
          cudaMemsetAsync(out.data_ptr(), 0, out.nbytes(), cuda_backend::cuda_stream(stream)));
    }
    return false;
  }
  Operand a = prepare(left, Role::Left);
  Operand b = prepare(right, right_role);
  const std::size_t batch_ndim = std::max(a.batch_sizes.size(), b.batch_sizes.size());
  GROVE_OP_CHECK(op_call, batch_ndim <= static_cast<std::size_t>(kMaxKernelDims), "at most ",
                 kMaxKernelDims, " batch dims are supported, but got ", batch_ndim);
  BatchDims batch = coalesced_batch(a, b, batch_ndim);
  if (worth_packing(batch)) {  // Note [Packing batches for one strided call]
    if (!stacked(a)) a = packed(left, Role::Left, a.row_major);
    if (!stacked(b)) b = packed(right, right_role, b.row_major);
    batch = coalesced_batch(a, b, batch_ndim);
    GROVE_INTERNAL_ASSERT(batch.size <= 1, "packed operands must coalesce into one batch dim");
  }
  // Fold the batch into M when every product uses the same b and a's matrices are one
  // row-major stack of rows (after coalescing: one dim, stride rows * leading).
  bool b_shared = true;
  for (std::size_t d = 0; d < batch.size; ++d) b_shared = b_shared && batch[d].b_stride == 0;
  std::int64_t rows = a.rows;
  if (b_shared && a.row_major && batch.size == 1 && batch[0].a_stride == a.rows * a.leading) {
    rows *= batch[0].size;
    batch.size = 0;
  } else if (bias.defined() && batch.size > 0) {
    // linear with an input that does not fold (a transposed 3-d x): fold a contiguous copy so
    // that the bias epilogue sees one product.
    const Tensor left_contiguous = left.contiguous();
    a = prepare(left_contiguous, Role::Left);
    a.scratch = left_contiguous;  // alive until after the launch
    rows = a.rows * product(IntArrayRef(a.batch_sizes));
    batch.size = 0;
  }
  const std::size_t element = element_size(out.dtype());
  GemmCall call;
  call.dtype = out.dtype();
  call.trans_a = !b.row_major;
  call.trans_b = !a.row_major;
  call.m = b.cols;
  call.n = rows;
  call.k = inner;
  call.lda = b.leading;
  call.ldb = a.leading;
  call.ldc = b.cols;
  call.stride_c = rows * b.cols;
  if (batch.size > 0) {
    call.count = batch.back().size;
    call.stride_a = batch.back().b_stride;  // A' is b
    call.stride_b = batch.back().a_stride;
  }
  // float64's bias (and the others' when cuBLASLt has no algorithm): copied in, then beta = 1.
  auto copy_bias = [&] {
    cuda_backend::launch_copy(out, bias.expand(out.sizes()));
    call.bias = nullptr;
    call.accumulate = true;
  };
  Tensor bias_contiguous;
  if (bias.defined() && out.dtype() != DType::Float64) {
    bias_contiguous = bias.contiguous();  // the epilogue reads a packed vector
    call.bias = bias_contiguous.data_ptr();
  } else if (bias.defined()) {
    copy_bias();
  }
  const bool epilogue_bias_grad =
      bias_grad.defined() && batch.size == 0 && out.dtype() != DType::Float64;
  if (epilogue_bias_grad) call.bias_grad = bias_grad.data_ptr();
  bool bias_grad_written = false;
  // The outer batch dims (all but the innermost), walked as a flat index.
  std::int64_t outer_count = 1;
  for (std::size_t d = 0; d + 1 < batch.size; ++d) outer_count *= batch[d].size;
  for (std::int64_t outer = 0; outer < outer_count; ++outer) {
    std::int64_t a_offset = 0, b_offset = 0, index = outer;
    for (auto d = static_cast<std::ptrdiff_t>(batch.size) - 2; d >= 0; --d) {
      const BatchDim& dim = batch[static_cast<std::size_t>(d)];
      const std::int64_t coordinate = index % dim.size;
      index /= dim.size;
      a_offset += coordinate * dim.a_stride;
      b_offset += coordinate * dim.b_stride;
    }
    GemmCall one = call;
    one.a = b.data + b_offset * static_cast<std::int64_t>(element);
    one.b = a.data + a_offset * static_cast<std::int64_t>(element);
    one.c = static_cast<char*>(out.data_ptr()) +
            outer * call.count * call.stride_c * static_cast<std::int64_t>(element);
    // cuBLASLt for float32, unless a batch broadcasts an operand (stride 0): cuBLAS's strided
    // batch is documented for that.
    const bool broadcast = one.count > 1 && (one.stride_a == 0 || one.stride_b == 0);
    if (one.dtype != DType::Float64 && !broadcast && try_lt_gemm(one, stream)) {
      bias_grad_written = one.bias_grad != nullptr;
      continue;
    }
    one.bias_grad = nullptr;  // cuBLAS has no epilogue: the caller sums
    if (one.bias != nullptr) {
      copy_bias();
      one.bias = nullptr;
      one.accumulate = true;
    }
    blas_gemm(one, stream);
  }
  // a.scratch, b.scratch and bias_contiguous die here, after the launches: see
  // Note [Scratch copies before a CPU kernel] in ops/cpu/linalg.h.
  return bias_grad_written;
}

void check_float(const Tensor& out, const char* op) {
  GROVE_INTERNAL_ASSERT(is_floating_point(out.dtype()), op, " reached the CUDA kernel with dtype ",
                        out.dtype());
}

}  // namespace

void matmul(const OpCall& call, const OpOutputs& outputs) {
  check_float(outputs[0], op_name(call.kind).data());
  launch_gemm(call, outputs[0], call.input(0), call.input(1), Role::Right, Tensor());
}

void linear(const OpCall& call, const OpOutputs& outputs) {
  check_float(outputs[0], "linear");
  const Tensor bias = call.inputs.size() == 3 ? call.input(2) : Tensor();
  launch_gemm(call, outputs[0], call.input(0), call.input(1), Role::Transposed, bias);
}

// grad_weight = grad^T x, and grad_bias from the product's BGRADB epilogue, or else from sum's
// kernel (float64, no cuBLASLt algorithm, or no rows).
void linear_weight_grad(const OpCall& call, const OpOutputs& outputs) {
  check_float(outputs[0], "linear_weight_grad");
  const Tensor& grad = call.input(0);
  const Tensor bias_grad = outputs.size() == 2 ? outputs[1] : Tensor();
  const bool written = launch_gemm(call, outputs[0], grad.transpose(0, 1), call.input(1),
                                   Role::Right, Tensor(), bias_grad);
  if (bias_grad.defined() && !written) {
    const OpAttributes sum = ReduceAttributes{{0}}.to_attributes();
    const Tensor inputs[] = {grad};
    OpOutputs sums;
    sums.push_back(bias_grad);
    reduce_sum(OpCall{OpKind::Sum, inputs, sum}, sums);
  }
}

}  // namespace grove::ops::cuda
