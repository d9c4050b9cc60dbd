// cuBLAS and cuBLASLt for the CUDA kernels: the status check, one handle of each library per
// (thread, device), and one workspace buffer per (device, stream). Used by ops/cuda/linalg.cpp.
//
// Not an allocator: the workspaces come from cudaMalloc once and are never freed
// (Note [cuBLAS workspaces and capture]). Handles are made on first use by a thread and go back to
// a process-wide pool when the thread exits (so short-lived threads do not leak one each); they
// are never destroyed, like CUDA streams (Note [CUDA stream ids]), because destroying them at
// process exit can race the CUDA runtime's own teardown.
//
// Thread safety: every function may be called from any thread. A handle returned to a thread
// is that thread's alone. Only files of the CUDA backend include this header (it needs the CUDA
// toolkit's headers); it compiles with g++ and with nvcc.
//
// Note [cuBLAS workspaces and capture]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// cuBLAS and cuBLASLt kernels may use scratch memory (split-K partial sums, stream-K tiles). By
// default cuBLAS cudaMallocs a pool of its own per handle, which cannot happen inside a capture,
// and a buffer taken from grove's caching allocator would be wrong too: a captured kernel keeps
// the raw pointer forever, but the block would go back to the general pool (or a capture's
// private pool that the tree manager checkpoints and hands out again) as soon as the launching
// function returned, so a later replay would scribble over memory that now belongs to someone
// else. (The reference framework's issue: "cuBLAS workspaces must not outlive a capture in the
// general pool".)
//
// So each (device, stream) gets one workspace of kWorkspaceBytes from cudaMalloc, made the first
// time a GEMM is launched on that stream (under RelaxedCaptureModeGuard if that happens while
// the thread captures) and never freed. Every cuBLAS call on the stream sets it with
// cublasSetWorkspace (cublasSetStream resets a handle to its default pool, so this is done on
// every call after binding the stream), and every cublasLtMatmul passes it. This is safe with
// graph replays because:
//   - work on one stream runs in order, so two GEMMs on a stream never use the workspace at
//     once, whichever thread or handle launched them;
//   - a graph replays on the stream it was captured on (DeviceGraph::replay), so its GEMMs are
//     ordered with every other GEMM of that stream, eager or replayed; or, a tree manager's
//     graph, on the caller's stream, ordered with every use of the manager's stream
//     (Note [The caller's stream and the manager's stream] in graphs/tree/tree_manager.h);
//   - the buffer is in no allocator pool, so no pool reuse, release or checkpoint can hand it
//     to anyone else, and it outlives every graph.
// cuDNN's convolutions on the stream use the same buffer when their workspace fits in it
// (ops/cuda/conv_plans.cpp): the same ordering makes that safe, and a graph then keeps no
// workspace of its own for them.
// Limits: a graph launched on a stream other than its capture stream, unordered with the GEMMs
// of that stream, would share the workspace unordered (grove never does this); each stream that
// ever ran a GEMM keeps kWorkspaceBytes of device memory until the process exits.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/error.h"
#include "core/stream.h"

namespace grove::detail {

[[noreturn]] inline void throw_cublas_error(cublasStatus_t status, const char* expression,
                                            const char* file, int line) {
  throw_error(join_message("cuBLAS error ", cublasGetStatusName(status), " (",
                           cublasGetStatusString(status), ") from ", expression),
              file, line);
}

}  // namespace grove::detail

// Runs a cuBLAS or cuBLASLt call and throws grove::Error naming the status, the expression, and
// the file and line, if it failed.
#define GROVE_CUBLAS_CHECK(expr)                                                            \
  do {                                                                                      \
    const cublasStatus_t grove_cublas_status_ = (expr);                                     \
    if (grove_cublas_status_ != CUBLAS_STATUS_SUCCESS) [[unlikely]] {                       \
      ::grove::detail::throw_cublas_error(grove_cublas_status_, #expr, __FILE__, __LINE__); \
    }                                                                                       \
  } while (false)

namespace grove::ops::cuda {

// One stream's workspace (Note [cuBLAS workspaces and capture]).
struct BlasWorkspace {
  void* data = nullptr;
  std::size_t bytes = 0;
};

// The workspace of `stream` (a CUDA stream), allocated on first use: 32 MiB on Hopper and newer
// (cuBLAS's recommendation for sm_90), 4 MiB before. May cudaMalloc the first time; never
// synchronises the host otherwise.
BlasWorkspace blas_workspace(Stream stream);

// The calling thread's cuBLAS handle for stream.device, bound to `stream` and to its workspace.
// The caller has made stream.device current (DeviceGuard).
cublasHandle_t blas_handle(Stream stream);

// The calling thread's cuBLASLt handle for `device` (cublasLtMatmul takes the stream and the
// workspace per call). The caller has made `device` current.
cublasLtHandle_t blas_lt_handle(Device device);

}  // namespace grove::ops::cuda
