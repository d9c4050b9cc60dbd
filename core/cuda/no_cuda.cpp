// The CUDA backend's entry points in a build without CUDA (GROVE_CUDA=OFF): each one refuses
// with the same kind of error that a CUDA build gives on a machine without a GPU.
// See core/cuda/cuda_backend.h.
#include "core/cuda/cuda_backend.h"

#include "core/data_ptr.h"
#include "core/error.h"
#include "core/tensor.h"

namespace grove {
namespace {

[[noreturn]] void refuse(Device device, const char* what) {
  GROVE_CHECK(false, "no CUDA device is available: ", what, " needs ", device,
              ", but this build of grove has no CUDA backend (it was configured with "
              "GROVE_CUDA=OFF or without the CUDA toolkit). Use the CPU, or rebuild with "
              "-DGROVE_CUDA=ON on a machine with the toolkit.");
  __builtin_unreachable();
}

}  // namespace

int cuda_device_count() {
  return 0;
}

bool cuda_is_available() {
  return false;
}

namespace cuda_backend {

CachingAllocator& allocator(Device device) {
  refuse(device, "allocating memory");
}
CaptureBackend& capture_backend(Device device) {
  refuse(device, "using a stream");
}
void launch_copy(const Tensor& dst, const Tensor& /*src*/) {
  refuse(dst.device(), "copy_");
}
void launch_fill(const Tensor& dst, const Scalar& /*value*/) {
  refuse(dst.device(), "fill_");
}
void copy_between_devices(const Tensor& dst, const Tensor& src, bool /*non_blocking*/) {
  refuse(dst.device().is_cuda() ? dst.device() : src.device(), "copy_");
}
DataPtr allocate_pinned(std::size_t /*nbytes*/) {
  refuse(cuda(0), "pin_memory (page-locked host memory)");
}
bool is_pinned(const void* /*ptr*/) {
  return false;
}

}  // namespace cuda_backend
}  // namespace grove
