// CPU kernels for matmul, bmm and linear, and the shared GEMM block (ops/cpu/linalg.h).
//
// Every call becomes a BatchedGemm: `count` products c_i = a_i @ b_i (+ bias), where a_i and b_i
// are found from the flat batch index through per-operand batch strides (0 where an operand is
// broadcast), and c is the contiguous output. Each operand's last two dims are read in place as a
// row- or column-major Eigen::Map, or copied first (Note [Scratch copies before a CPU kernel]).
// When b is the same for every product and a's batch rows are evenly spaced (x @ W^T in a model),
// the batch is folded into M: one large product instead of many small ones, as PyTorch does.
#include "ops/cpu/linalg.h"

#include <omp.h>

#include <Eigen/Core>
#include <algorithm>

#ifdef GROVE_HAS_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif
#include <type_traits>

#include "core/strided_loop.h"
#include "ops/attributes.h"
#include "ops/cpu/reduce.h"

namespace grove::ops::cpu {

int max_threads() {
  return omp_get_max_threads();
}

ThreadsGuard::ThreadsGuard(int threads) : saved_(omp_get_max_threads()) {
  omp_set_num_threads(threads);
}

ThreadsGuard::~ThreadsGuard() {
  omp_set_num_threads(saved_);
}

namespace {

template <typename T, int Order>
using ConstMatrixMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Order>,
                                  Eigen::Unaligned, Eigen::OuterStride<>>;
template <typename T>
using OutputMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
                             Eigen::Unaligned, Eigen::OuterStride<>>;

template <typename T, int Order>
ConstMatrixMap<T, Order> map(const MatrixRef<const T>& matrix) {
  return ConstMatrixMap<T, Order>(matrix.data, matrix.rows, matrix.cols,
                                  Eigen::OuterStride<>(matrix.leading));
}

template <typename T, int OrderA, int OrderB>
void multiply(const MatrixRef<const T>& a, const MatrixRef<const T>& b, OutputMap<T>& c,
              bool accumulate) {
  if (accumulate) {
    c.noalias() += map<T, OrderA>(a) * map<T, OrderB>(b);
  } else {
    c.noalias() = map<T, OrderA>(a) * map<T, OrderB>(b);
  }
}

// c (+)= a @ b in whichever of the four layouts a and b have.
template <typename T>
void multiply_any(const MatrixRef<const T>& a, const MatrixRef<const T>& b, OutputMap<T>& c,
                  bool accumulate) {
  constexpr int kRow = Eigen::RowMajor;
  constexpr int kColumn = Eigen::ColMajor;
  if (a.row_major) {
    b.row_major ? multiply<T, kRow, kRow>(a, b, c, accumulate)
                : multiply<T, kRow, kColumn>(a, b, c, accumulate);
  } else {
    b.row_major ? multiply<T, kColumn, kRow>(a, b, c, accumulate)
                : multiply<T, kColumn, kColumn>(a, b, c, accumulate);
  }
}

// Note [float32 GEMM through oneDNN]: c (+)= a @ b by dnnl_sgemm, or false (nothing written)
// where this build has no oneDNN or oneDNN refuses the arguments.
bool onednn_sgemm(const MatrixRef<const float>& a, const MatrixRef<const float>& b, float* c,
                  std::int64_t ldc, bool accumulate) {
#ifdef GROVE_HAS_DNNL
  // Row-major BLAS: a row-major operand is read as is ('N'); a column-major one is the
  // transpose of a row-major matrix with the same leading dimension ('T').
  const dnnl_status_t status =
      dnnl_sgemm(a.row_major ? 'N' : 'T', b.row_major ? 'N' : 'T', a.rows, b.cols, a.cols, 1.0f,
                 a.data, a.leading, b.data, b.leading, accumulate ? 1.0f : 0.0f, c, ldc);
  return status == dnnl_success;
#else
  (void)a, (void)b, (void)c, (void)ldc, (void)accumulate;
  return false;
#endif
}

template <typename T>
void multiply_fastest(const MatrixRef<const T>& a, const MatrixRef<const T>& b, T* c,
                      std::int64_t ldc, bool accumulate) {
  if constexpr (std::is_same_v<T, float>) {
    if (onednn_sgemm(a, b, c, ldc, accumulate)) return;
  }
  OutputMap<T> out(c, a.rows, b.cols, Eigen::OuterStride<>(ldc));
  multiply_any(a, b, out, accumulate);
}

}  // namespace

template <typename T>
void gemm(const MatrixRef<const T>& a, const MatrixRef<const T>& b, T* c, std::int64_t ldc,
          const T* bias, Bias bias_layout) {
  if (a.rows == 0 || b.cols == 0) return;
  OutputMap<T> out(c, a.rows, b.cols, Eigen::OuterStride<>(ldc));
  const bool has_bias = bias != nullptr && bias_layout.mode != BiasMode::None;
  if (has_bias) {  // c = bias, then c += a @ b: one pass over c
    using Stride = Eigen::InnerStride<>;
    if (bias_layout.mode == BiasMode::PerColumn) {
      using Row = Eigen::Matrix<T, 1, Eigen::Dynamic>;
      out.rowwise() = Eigen::Map<const Row, 0, Stride>(bias, b.cols, Stride(bias_layout.stride));
    } else {
      using Column = Eigen::Matrix<T, Eigen::Dynamic, 1>;
      out.colwise() = Eigen::Map<const Column, 0, Stride>(bias, a.rows, Stride(bias_layout.stride));
    }
  }
  if (a.cols == 0) {  // K = 0: the empty sum
    if (!has_bias) out.setZero();
    return;
  }
  multiply_fastest(a, b, c, ldc, has_bias);
}

template <typename T>
void gemm_accumulate(const MatrixRef<const T>& a, const MatrixRef<const T>& b, T* c,
                     std::int64_t ldc) {
  if (a.rows == 0 || b.cols == 0 || a.cols == 0) return;
  multiply_fastest(a, b, c, ldc, true);
}

template void gemm<float>(const MatrixRef<const float>&, const MatrixRef<const float>&, float*,
                          std::int64_t, const float*, Bias);
template void gemm<double>(const MatrixRef<const double>&, const MatrixRef<const double>&, double*,
                           std::int64_t, const double*, Bias);
template void gemm_accumulate<float>(const MatrixRef<const float>&, const MatrixRef<const float>&,
                                     float*, std::int64_t);
template void gemm_accumulate<double>(const MatrixRef<const double>&,
                                      const MatrixRef<const double>&, double*, std::int64_t);

namespace {

// What a matmul kernel captures: trivially copyable (Note [CPU streams simulate CUDA capture]).
template <typename T>
struct BatchedGemm {
  MatrixRef<const T> a;  // product 0's operands; product i is offset by the batch strides
  MatrixRef<const T> b;
  T* c = nullptr;
  std::int64_t ldc = 0;
  std::int64_t c_stride = 0;  // elements between consecutive products' results
  const T* bias = nullptr;
  Bias bias_layout;
  std::int64_t count = 1;
  int batch_ndim = 0;
  std::int64_t batch_sizes[kMaxKernelDims] = {};
  std::int64_t a_strides[kMaxKernelDims] = {};
  std::int64_t b_strides[kMaxKernelDims] = {};
};

template <typename T>
void run_product(const BatchedGemm<T>& plan, std::int64_t index) {
  MatrixRef<const T> a = plan.a;
  MatrixRef<const T> b = plan.b;
  T* c = plan.c + index * plan.c_stride;
  for (int d = plan.batch_ndim - 1; d >= 0; --d) {
    const std::int64_t coordinate = index % plan.batch_sizes[d];
    index /= plan.batch_sizes[d];
    a.data += coordinate * plan.a_strides[d];
    b.data += coordinate * plan.b_strides[d];
  }
  gemm(a, b, c, plan.ldc, plan.bias, plan.bias_layout);
}

// See Note [Threads in CPU GEMM].
template <typename T>
void run_batched(const BatchedGemm<T>& plan) {
  const std::int64_t product_work = plan.a.rows * plan.a.cols * plan.b.cols;
  const int threads = max_threads();
  if (product_work * plan.count < kMinParallelWork || threads == 1) {
    ThreadsGuard one_thread(1);
    for (std::int64_t i = 0; i < plan.count; ++i) run_product(plan, i);
  } else if (plan.count >= 2 * threads || (plan.count > 1 && product_work < kMinParallelWork)) {
    // Each product runs serially inside the team (Eigen sees omp_get_num_threads() > 1).
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::int64_t i = 0; i < plan.count; ++i) run_product(plan, i);
  } else {
    for (std::int64_t i = 0; i < plan.count; ++i) run_product(plan, i);  // Eigen's threads
  }
}

// One operand, ready for the kernel: its first matrix and its batch dims.
template <typename T>
struct Operand {
  MatrixRef<const T> matrix;
  DimVector batch_sizes;
  DimVector batch_strides;
  Tensor scratch;  // a contiguous copy, when the tensor's layout cannot be mapped
};

template <typename T>
Operand<T> prepare(const Tensor& tensor, Role role) {
  Operand<T> operand;
  const Tensor* source = &tensor;
  DimVector sizes, strides;
  matrix_view(tensor, role, sizes, strides);
  std::size_t n = sizes.size();
  MatrixRef<const T>& m = operand.matrix;
  m.rows = sizes[n - 2];
  m.cols = sizes[n - 1];
  if (!matrix_layout(m.rows, m.cols, strides[n - 2], strides[n - 1], m.row_major, m.leading)) {
    // See Note [Scratch copies before a CPU kernel].
    operand.scratch = tensor.contiguous();
    source = &operand.scratch;
    matrix_view(operand.scratch, role, sizes, strides);
    const bool mapped =
        matrix_layout(m.rows, m.cols, strides[n - 2], strides[n - 1], m.row_major, m.leading);
    GROVE_INTERNAL_ASSERT(mapped, "a contiguous matrix must map onto Eigen");
  }
  m.data = static_cast<const T*>(source->data_ptr());
  operand.batch_sizes.assign(IntArrayRef(sizes.data(), n - 2));
  operand.batch_strides.assign(IntArrayRef(strides.data(), n - 2));
  return operand;
}

// Launches out = left @ right (+ bias) for operands of any rank (see matmul() in linalg.h).
template <typename T>
void launch_gemm(const OpCall& call, const Tensor& out, const Tensor& left, const Tensor& right,
                 Role right_role, const Tensor* bias) {
  if (out.numel() == 0) return;
  const Operand<T> a = prepare<T>(left, Role::Left);
  const Operand<T> b = prepare<T>(right, right_role);
  BatchedGemm<T> plan;
  plan.a = a.matrix;
  plan.b = b.matrix;
  const std::size_t batch_ndim = std::max(a.batch_sizes.size(), b.batch_sizes.size());
  GROVE_OP_CHECK(call, batch_ndim <= static_cast<std::size_t>(kMaxKernelDims), "at most ",
                 kMaxKernelDims, " batch dims are supported, but got ", batch_ndim);
  plan.batch_ndim = static_cast<int>(batch_ndim);
  // Batch dims, aligned from the right; an operand's stride is 0 where it is broadcast.
  bool b_is_shared = true;
  for (std::size_t d = 0; d < batch_ndim; ++d) {
    auto size_and_stride = [&](const Operand<T>& operand, std::int64_t& stride) {
      const std::size_t missing = batch_ndim - operand.batch_sizes.size();
      if (d < missing) return std::int64_t{1};
      const std::int64_t size = operand.batch_sizes[d - missing];
      stride = size == 1 ? 0 : operand.batch_strides[d - missing];
      return size;
    };
    const std::int64_t a_size = size_and_stride(a, plan.a_strides[d]);
    const std::int64_t b_size = size_and_stride(b, plan.b_strides[d]);
    plan.batch_sizes[d] = std::max(a_size, b_size);
    plan.count *= plan.batch_sizes[d];
    b_is_shared = b_is_shared && (plan.b_strides[d] == 0 || plan.batch_sizes[d] == 1);
  }
  // Fold the batch into M when every product uses the same b and a's matrices are one
  // row-major stack of rows: batch item i, row r at i * rows * leading + r * leading.
  bool fold = b_is_shared && plan.a.row_major && plan.count > 1;
  std::int64_t expected = plan.a.rows * plan.a.leading;
  for (int d = plan.batch_ndim - 1; d >= 0 && fold; --d) {
    if (plan.batch_sizes[d] == 1) continue;
    fold = plan.a_strides[d] == expected;
    expected *= plan.batch_sizes[d];
  }
  if (fold) {
    plan.a.rows *= plan.count;
    plan.count = 1;
    plan.batch_ndim = 0;
  }
  // out is contiguous: (count, rows, cols) in memory, whatever dims matmul squeezed.
  plan.c = static_cast<T*>(out.data_ptr());
  plan.ldc = plan.b.cols;
  plan.c_stride = plan.a.rows * plan.b.cols;
  if (bias != nullptr) {
    plan.bias = static_cast<const T*>(bias->data_ptr());
    plan.bias_layout = {BiasMode::PerColumn, bias->stride(0)};
  }
  launch_cpu(current_stream(out.device()), [plan] { run_batched(plan); });
  // a.scratch and b.scratch die here, after the launch: see
  // Note [Scratch copies before a CPU kernel].
}

}  // namespace

void matmul(const OpCall& call, const OpOutputs& outputs) {
  dispatch_floating(outputs[0].dtype(), op_name(call.kind), [&]<typename T>() {
    launch_gemm<T>(call, outputs[0], call.input(0), call.input(1), Role::Right, nullptr);
  });
}

void linear(const OpCall& call, const OpOutputs& outputs) {
  const Tensor* bias = call.inputs.size() == 3 ? &call.input(2) : nullptr;
  dispatch_floating(outputs[0].dtype(), "linear", [&]<typename T>() {
    launch_gemm<T>(call, outputs[0], call.input(0), call.input(1), Role::Transposed, bias);
  });
}

// grad_weight = grad^T x (grad read transposed in place), then grad_bias as sum's kernel
// computes it (the column sums of grad, in double).
void linear_weight_grad(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& grad = call.input(0);
  dispatch_floating(outputs[0].dtype(), "linear_weight_grad", [&]<typename T>() {
    launch_gemm<T>(call, outputs[0], grad.transpose(0, 1), call.input(1), Role::Right, nullptr);
  });
  if (outputs.size() == 2) {
    const OpAttributes sum = ReduceAttributes{{0}}.to_attributes();
    const Tensor inputs[] = {grad};
    OpOutputs bias_grad;
    bias_grad.push_back(outputs[1]);
    reduce_sum(OpCall{OpKind::Sum, inputs, sum}, bias_grad);
  }
}

}  // namespace grove::ops::cpu
