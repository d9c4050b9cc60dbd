// CPU kernels of the linear algebra family (ops/linalg.h), and the GEMM building block that
// other CPU kernels share (conv2d's im2col + GEMM): oneDNN's sgemm for float32
// (Note [float32 GEMM through oneDNN]) and Eigen's GEMM for the rest, over row- or column-major
// views of tensor memory, with grove's policy for threads.
//
// Note [Scratch copies before a CPU kernel]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Eigen's GEMM reads a matrix in place when one of its two dims has unit stride (a row-major or
// a column-major map with a leading dimension). Any other operand (a strided slice, an expanded
// matrix) is first copied: the host side of the kernel calls contiguous(), which allocates a
// scratch tensor and launches the copy on the current stream, takes the scratch's data_ptr(),
// launches the GEMM on the same stream, and then lets the scratch tensor die when the host
// function returns. Kernels hold raw pointers only (Note [CPU streams simulate CUDA capture] in
// core/stream.h), so nothing keeps the scratch alive, and nothing needs to: its block goes back
// to the caching allocator tagged with this stream, and memory freed on a stream is handed out
// again only to work launched later on that stream (Note [Stream reuse of cached blocks]). So
// the copy and the GEMM, already launched, have read the scratch before any later kernel can
// write it. While the stream captures, the same holds inside the capture's private pool
// (Note [Private pools during capture]): the scratch block may be reused by a later kernel of the
// same graph, and replay runs the kernels in the recorded order. Buffers that a kernel fills itself
// (conv2d's im2col columns) follow the same rule: allocate before launch, let die after.
//
// Note [Threads in CPU GEMM]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// The library is built with OpenMP. Eigen splits one GEMM over omp_get_max_threads() threads
// of the calling thread (grove never calls Eigen::setNbThreads, which is process-wide), and runs
// it serially inside an OpenMP team that already has several threads. Eigen's own rule takes two
// threads from about 100,000 multiply-adds, so a 64x64x64 product (262,144) would fork, and for
// such a product the second thread does not pay. Measured with bench/matmul_bench (BM_EigenGemm,
// the default x86-64-v3 build, medians of 5 repetitions; two runs on the Xeon, four on the EPYC):
//   - idle 16-core Xeon: 64x64x64 8.3-9.2 us on one thread, 11.8-12.1 us on two;
//     128x784x256 0.72-0.78 ms on one, 0.42-0.46 ms on two;
//   - 2-core AMD EPYC shared with other jobs (load average 2 to 4): 64x64x64 4.9-7.0 us on one
//     thread, 8.6 us to 17 ms on two; 128x784x256 0.56-0.82 ms on one, 3.0 to 28 ms on two
//     (each fork/join waits for a descheduled thread).
// So two threads win only for large products on a quiet machine, and lose by orders of magnitude
// on a busy one. grove's rule, per op call:
//   - below kMinParallelWork multiply-adds in total (about a 128x128x128 product): one thread
//     (ThreadsGuard(1));
//   - many products (a batch, or conv2d's images): an OpenMP loop over them, each product
//     serial inside it;
//   - one large product: Eigen's parallel GEMM with all threads.
// The thread count is read when the kernel runs, so a captured kernel follows the replaying
// thread's setting (conv2d fixes it at launch, because its scratch is one buffer per thread).
//
// Note [float32 GEMM through oneDNN]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// In a build with oneDNN (GROVE_HAS_DNNL, the library of Note [Convolutions through oneDNN] in
// ops/cpu/conv_dnnl.h), float32 products go to its dnnl_sgemm, whose kernels are generated for
// the CPU it runs on (AVX-512 where there is one; Eigen's are compiled for the build's x86-64-v3,
// AVX2). float64 products, and any call dnnl_sgemm refuses, stay with Eigen. dnnl_sgemm follows
// the same thread rule as Eigen: omp_get_max_threads() threads outside an OpenMP team, one
// inside. As with Eigen's, a product split over several threads may round differently from one
// thread's (the sum over K may be cut), so float32 products agree across thread counts to
// rounding, not bit for bit; a given thread count repeats its bits. Measured on a 2-core AVX-512
// machine, 2 threads, microseconds, dnnl_sgemm / Eigen: 128x784 @ 784x256 (the mlp's first layer)
// 123 / 207; 128x256 @ 256x256 46 / 73; the gpt's 2048x384x128 430 / 787 and 2048x128x512 630 /
// 1063.
#pragma once

#include <cstdint>

#include "ops/dispatch.h"
#include "ops/matrix_view.h"

namespace grove::ops::cpu {

void matmul(const OpCall& call, const OpOutputs& outputs);  // matmul and bmm
void linear(const OpCall& call, const OpOutputs& outputs);
void linear_weight_grad(const OpCall& call, const OpOutputs& outputs);

// --- the shared GEMM block ---

// See Note [Threads in CPU GEMM]. Below this many multiply-adds an op runs on one thread.
inline constexpr std::int64_t kMinParallelWork = std::int64_t{1} << 21;

// The calling thread's OpenMP thread count, omp_get_max_threads().
int max_threads();

// Sets the calling thread's OpenMP thread count (what Eigen's GEMM uses) for its lifetime.
class ThreadsGuard {
 public:
  explicit ThreadsGuard(int threads);
  ~ThreadsGuard();
  ThreadsGuard(const ThreadsGuard&) = delete;
  ThreadsGuard& operator=(const ThreadsGuard&) = delete;

 private:
  int saved_;
};

// A rows x cols matrix with unit stride along one dim and `leading` elements between
// consecutive rows (row_major) or columns (column-major), as BLAS's lda.
template <typename T>
struct MatrixRef {
  T* data = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t leading = 1;
  bool row_major = true;
};

// How a GEMM adds a bias vector to its result c (M x N).
enum class BiasMode : std::uint8_t {
  None,
  PerColumn,  // c[i][j] += bias[j * bias_stride]   (linear)
  PerRow,     // c[i][j] += bias[i * bias_stride]   (conv2d: one bias per output channel)
};

struct Bias {
  BiasMode mode = BiasMode::None;
  std::int64_t stride = 1;
};

// c (a.rows x b.cols, row-major with leading dimension ldc) = a @ b, plus the bias if any.
// K = 0 writes zeros (or the bias). Threads: whatever the calling thread allows (see
// Note [Threads in CPU GEMM]); call it from inside launch_cpu.
template <typename T>
void gemm(const MatrixRef<const T>& a, const MatrixRef<const T>& b, T* c, std::int64_t ldc,
          const T* bias = nullptr, Bias bias_layout = {});
// c (a.rows x b.cols, row-major with leading dimension ldc) += a @ b; K = 0 adds nothing. Threads
// as gemm. (conv2d_backward_weight sums the images' products this way.)
template <typename T>
void gemm_accumulate(const MatrixRef<const T>& a, const MatrixRef<const T>& b, T* c,
                     std::int64_t ldc);

}  // namespace grove::ops::cpu
