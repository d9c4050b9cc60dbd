// The per-(thread, device) cuDNN handles of ops/cuda/cudnn_handle.h.
#include "ops/cuda/cudnn_handle.h"

#include <vector>

#include "core/cuda/cuda_device.h"
#include "core/stream.h"

namespace grove::ops::cuda {

void throw_cudnn_error(cudnnStatus_t status, const char* expression, const char* file, int line) {
  detail::throw_error(
      detail::join_message("cuDNN error ", cudnnGetErrorString(status), " from ", expression), file,
      line);
}

cudnnHandle_t cudnn_handle(Device device) {
  GROVE_INTERNAL_ASSERT(device.is_cuda(), "cudnn_handle takes a CUDA device, got ", device);
  // Indexed by device index; never destroyed (see the header).
  thread_local std::vector<cudnnHandle_t> handles;
  const auto index = static_cast<std::size_t>(device.index);
  if (index >= handles.size()) handles.resize(index + 1, nullptr);
  cudaStream_t stream = cuda_backend::cuda_stream(current_stream(device));
  if (handles[index] == nullptr) {
    cuda_backend::DeviceGuard guard(device);
    const cuda_backend::RelaxedCaptureModeGuard relaxed;
    GROVE_CUDNN_CHECK(cudnnCreate(&handles[index]));
  }
  GROVE_CUDNN_CHECK(cudnnSetStream(handles[index], stream));
  return handles[index];
}

}  // namespace grove::ops::cuda
