// cuBLAS / cuBLASLt handles and workspaces: see ops/cuda/blas_handle.h and
// Note [cuBLAS workspaces and capture] there.
#include "ops/cuda/blas_handle.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "core/cuda/cuda_device.h"

namespace grove::ops::cuda {
namespace {

using cuda_backend::kMaxCudaDevices;

// Bytes of one stream's workspace on `device`: cuBLAS recommends 32 MiB for Hopper (sm_90) and
// 4 MiB for earlier architectures (cublasSetWorkspace in the cuBLAS documentation).
std::size_t workspace_bytes(Device device) {
  int major = 0;
  GROVE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device.index));
  return major >= 9 ? std::size_t{32} << 20 : std::size_t{4} << 20;
}

// The workspaces of one device, one slot per stream id, written once under the mutex and read
// without it (as the stream registry in core/cuda/cuda_device.cpp).
struct DeviceWorkspaces {
  std::mutex mutex;
  std::size_t bytes = 0;
  std::array<std::atomic<void*>, cuda_backend::kMaxCudaStreams> buffers{};
};

DeviceWorkspaces& workspaces_of(Device device) {
  static auto* all = new std::array<DeviceWorkspaces, kMaxCudaDevices>();  // never destroyed
  return (*all)[static_cast<std::size_t>(device.index)];
}

// Handles no thread holds, per device; never destroyed (see blas_handle.h).
struct HandlePool {
  std::mutex mutex;
  std::array<std::vector<cublasHandle_t>, kMaxCudaDevices> blas;
  std::array<std::vector<cublasLtHandle_t>, kMaxCudaDevices> lt;
};

HandlePool& handle_pool() {
  static auto* pool = new HandlePool();
  return *pool;
}

// The calling thread's handles; returned to the pool when the thread exits.
struct ThreadHandles {
  std::array<cublasHandle_t, kMaxCudaDevices> blas{};
  std::array<cublasLtHandle_t, kMaxCudaDevices> lt{};

  ThreadHandles() = default;
  ThreadHandles(const ThreadHandles&) = delete;
  ThreadHandles& operator=(const ThreadHandles&) = delete;
  ~ThreadHandles() {
    HandlePool& pool = handle_pool();
    std::lock_guard<std::mutex> lock(pool.mutex);
    for (std::size_t d = 0; d < blas.size(); ++d) {
      if (blas[d] != nullptr) pool.blas[d].push_back(blas[d]);
      if (lt[d] != nullptr) pool.lt[d].push_back(lt[d]);
    }
  }
};

ThreadHandles& thread_handles() {
  thread_local ThreadHandles handles;
  return handles;
}

void check_index(Device device) {
  GROVE_CHECK(device.is_cuda() && device.index >= 0 && device.index < kMaxCudaDevices,
              "cuBLAS: expected a CUDA device cuda:0 to cuda:", kMaxCudaDevices - 1, ", but got ",
              device);
}

// Takes a pooled handle or makes one (cublasCreate may allocate device memory, hence the
// relaxed capture mode: the first GEMM of a thread may be launched while it captures).
template <typename Handle, typename Create>
Handle take_handle(std::vector<Handle>& pooled, Create create) {
  {
    std::lock_guard<std::mutex> lock(handle_pool().mutex);
    if (!pooled.empty()) {
      Handle handle = pooled.back();
      pooled.pop_back();
      return handle;
    }
  }
  cuda_backend::RelaxedCaptureModeGuard mode_guard;
  Handle handle = nullptr;
  GROVE_CUBLAS_CHECK(create(&handle));
  return handle;
}

}  // namespace

BlasWorkspace blas_workspace(Stream stream) {
  check_index(stream.device);
  GROVE_INTERNAL_ASSERT(stream.id < cuda_backend::kMaxCudaStreams, "CUDA stream id out of range");
  DeviceWorkspaces& workspaces = workspaces_of(stream.device);
  void* data = workspaces.buffers[stream.id].load(std::memory_order_acquire);
  if (data == nullptr) [[unlikely]] {
    std::lock_guard<std::mutex> lock(workspaces.mutex);
    data = workspaces.buffers[stream.id].load(std::memory_order_relaxed);
    if (data == nullptr) {
      // See Note [cuBLAS workspaces and capture]: outside any pool, made once, never freed.
      if (workspaces.bytes == 0) workspaces.bytes = workspace_bytes(stream.device);
      cuda_backend::DeviceGuard guard(stream.device);
      cuda_backend::RelaxedCaptureModeGuard mode_guard;
      GROVE_CUDA_CHECK(cudaMalloc(&data, workspaces.bytes));
      workspaces.buffers[stream.id].store(data, std::memory_order_release);
    }
  }
  return {data, workspaces.bytes};
}

cublasHandle_t blas_handle(Stream stream) {
  check_index(stream.device);
  const auto d = static_cast<std::size_t>(stream.device.index);
  cublasHandle_t& handle = thread_handles().blas[d];
  if (handle == nullptr) [[unlikely]] {
    handle = take_handle(handle_pool().blas[d], [](cublasHandle_t* h) { return cublasCreate(h); });
  }
  const BlasWorkspace workspace = blas_workspace(stream);
  // cublasSetStream resets the handle to cuBLAS's own workspace pool; set ours after it.
  GROVE_CUBLAS_CHECK(cublasSetStream(handle, cuda_backend::cuda_stream(stream)));
  GROVE_CUBLAS_CHECK(cublasSetWorkspace(handle, workspace.data, workspace.bytes));
  return handle;
}

cublasLtHandle_t blas_lt_handle(Device device) {
  check_index(device);
  const auto d = static_cast<std::size_t>(device.index);
  cublasLtHandle_t& handle = thread_handles().lt[d];
  if (handle == nullptr) [[unlikely]] {
    handle =
        take_handle(handle_pool().lt[d], [](cublasLtHandle_t* h) { return cublasLtCreate(h); });
  }
  return handle;
}

}  // namespace grove::ops::cuda
