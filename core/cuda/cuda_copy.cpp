// Copies and fills of CUDA tensors: the device-side kernels (copy_kernel.cu) launched on the
// current stream, and copies between the host and a CUDA device.
//
// Host <-> device copies use cudaMemcpyAsync on the current stream of the CUDA device, for
// dense data of one dtype; anything else (strided, broadcast, or a dtype change) is staged
// through a dense temporary: converted and made dense on the side the data comes from, copied,
// then scattered into the destination on the side it goes to. A copy to the host synchronises
// the stream before it returns, since CPU code reads the result at once; a copy from the
// host's (pageable) memory returns once CUDA has taken the bytes, so the source may be freed.
// Pinned host memory (Tensor::pin_memory) is the exception the data loader needs: with
// non_blocking, a dense copy from a pinned source or into a pinned destination is only queued,
// and an event recorded after it keeps the pinned block from being reused before the copy is done
// (Note [Reuse of pinned host blocks] in pinned_memory.h); without non_blocking the copy waits
// for the stream, as one from pageable memory would. Both directions are refused while the
// thread captures a graph, as CUDA refuses them.
#include <cstring>

#include "core/copy_kernel.h"
#include "core/cuda/copy_kernel.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/cuda_device.h"
#include "core/cuda/device_errors.h"
#include "core/cuda/pinned_memory.h"
#include "core/host_reads.h"
#include "core/strided_loop.h"
#include "core/tensor.h"

namespace grove::cuda_backend {

static_assert(sizeof(std::uint64_t) >= sizeof(double), "fill values travel in 64 bits");

void launch_copy(const Tensor& dst, const Tensor& src) {
  check_device(dst.device(), "copy_");
  GROVE_INTERNAL_ASSERT(src.device() == dst.device(), "launch_copy needs one device");
  if (dst.numel() == 0) return;
  const IntArrayRef strides[2] = {dst.strides(), src.strides()};
  const StridedLoop<2> loop = make_loop<2>(dst.sizes(), strides, "copy_");
  cudaStream_t stream = cuda_stream(current_stream(dst.device()));
  DeviceGuard guard(dst.device());
  copy_kernel(dst.data_ptr(), dst.dtype(), src.data_ptr(), src.dtype(), loop, stream);
}

void launch_fill(const Tensor& dst, const Scalar& value) {
  check_device(dst.device(), "fill_");
  if (dst.numel() == 0) return;
  const IntArrayRef strides[1] = {dst.strides()};
  const StridedLoop<1> loop = make_loop<1>(dst.sizes(), strides, "fill_");
  std::uint64_t value_bits = 0;
  dispatch_dtype<DTypes::Stored>(dst.dtype(), "fill_", [&]<typename T>() {
    const T typed = value.to<T>();
    std::memcpy(&value_bits, &typed, sizeof(T));
  });
  cudaStream_t stream = cuda_stream(current_stream(dst.device()));
  DeviceGuard guard(dst.device());
  fill_kernel(dst.data_ptr(), dst.dtype(), value_bits, loop, stream);
}

void copy_between_devices(const Tensor& dst, const Tensor& src, bool non_blocking) {
  GROVE_CHECK(dst.device().is_cpu() || src.device().is_cpu(), "copy_: copying from ", src.device(),
              " to ", dst.device(),
              " directly is not supported yet; copy through the host (.to(kCPU).to(device))");
  const Device device = dst.device().is_cuda() ? dst.device() : src.device();
  check_device(device, "copy_");
  if (dst.device().is_cpu()) {
    check_host_read(device, "copy_ from a CUDA device to the host");
  } else {
    check_not_capturing(device, "copy_ between the host and a CUDA device");
  }
  if (dst.numel() == 0) return;
  const std::size_t nbytes = static_cast<std::size_t>(dst.numel()) * element_size(dst.dtype());
  const Stream grove_stream = current_stream(device);
  cudaStream_t stream = cuda_stream(grove_stream);
  DeviceGuard guard(device);
  if (dst.device().is_cuda()) {
    // host -> device. The source, dense and in dst's dtype, on the host (a no-op if it is).
    const Tensor host = src.to(dst.dtype()).contiguous();
    const bool direct = dst.is_contiguous();
    const Tensor landing = direct ? dst : empty_like(dst);
    GROVE_CUDA_CHECK(cudaMemcpyAsync(landing.data_ptr(), host.data_ptr(), nbytes,
                                     cudaMemcpyHostToDevice, stream));
    if (!direct) cuda_backend::launch_copy(dst, landing);
    if (is_pinned(host.data_ptr())) {
      // From pinned memory the copy is truly asynchronous: a non-blocking one is only queued
      // (the block records it, so it is not reused before the copy has read it).
      if (non_blocking) {
        record_pinned_use(host.data_ptr(), grove_stream);
      } else {
        GROVE_CUDA_CHECK(cudaStreamSynchronize(stream));
        check_device_errors(device, "a copy to the device");  // Note [Device-side error reports]
      }
    }
  } else {
    // device -> host. The source, dense and in dst's dtype, on the device.
    const Tensor dense = src.to(dst.dtype()).contiguous();
    const bool direct = dst.is_contiguous();
    const Tensor landing = direct ? dst : empty_like(dst);
    GROVE_CUDA_CHECK(cudaMemcpyAsync(landing.data_ptr(), dense.data_ptr(), nbytes,
                                     cudaMemcpyDeviceToHost, stream));
    if (direct && non_blocking && is_pinned(dst.data_ptr())) {
      record_pinned_use(dst.data_ptr(), grove_stream);
      return;  // the caller synchronises the stream before reading dst
    }
    GROVE_CUDA_CHECK(cudaStreamSynchronize(stream));
    // Note [Device-side error reports]: reading results on the host is where bad indices surface.
    check_device_errors(device, "a copy to the host (to(kCPU), item())");
    if (!direct) grove::launch_copy(dst, landing);
  }
}

}  // namespace grove::cuda_backend
