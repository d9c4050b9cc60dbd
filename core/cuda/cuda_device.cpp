// CUDA devices and streams: whether a device exists, the current-device guard, and the map from
// grove stream ids to cudaStream_t. See Note [CUDA stream ids] in cuda_device.h.
#include "core/cuda/cuda_device.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "core/cuda/cuda_backend.h"

namespace grove {
namespace {

using cuda_backend::kMaxCudaDevices;

struct DeviceCount {
  int count = 0;
  std::string reason;  // why there is none, when count is 0
};

const DeviceCount& device_count_once() {
  static const DeviceCount result = [] {
    DeviceCount found;
    const cudaError_t error = cudaGetDeviceCount(&found.count);
    if (error != cudaSuccess) {
      found.count = 0;
      found.reason = str("the CUDA runtime reports ", cudaGetErrorName(error), " (",
                         cudaGetErrorString(error), ")");
      (void)cudaGetLastError();  // clear it, so that later checks of the last error are clean
    } else if (found.count == 0) {
      found.reason = "the CUDA runtime finds no device";
    }
    return found;
  }();
  return result;
}

// The streams of one device. Slots are written once (under the mutex) and read without it.
struct DeviceStreams {
  std::once_flag default_created;
  std::mutex mutex;
  std::array<std::atomic<cudaStream_t>, cuda_backend::kMaxCudaStreams> streams{};
};

DeviceStreams& streams_of(Device device) {
  // Never destroyed, like the streams themselves.
  static auto* all = new std::array<DeviceStreams, kMaxCudaDevices>();
  return (*all)[device.index];
}

cudaStream_t make_stream(Device device) {
  cuda_backend::DeviceGuard guard(device);
  cudaStream_t stream = nullptr;
  GROVE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return stream;
}

}  // namespace

int cuda_device_count() {
  return std::min(device_count_once().count, kMaxCudaDevices);
}

bool cuda_is_available() {
  return cuda_device_count() > 0;
}

namespace cuda_backend {

void check_device(Device device, const char* what) {
  GROVE_CHECK(device.is_cuda(), what, ": expected a CUDA device but got ", device);
  const DeviceCount& found = device_count_once();
  GROVE_CHECK(found.count > 0, "no CUDA device is available: ", what, " needs ", device, ", but ",
              found.reason,
              ". The CUDA backend needs an NVIDIA GPU and its driver; use the CPU on this "
              "machine.");
  GROVE_CHECK(device.index >= 0 && device.index < cuda_device_count(), "no CUDA device ", device,
              ": ", what, " needs it, but this machine has ", cuda_device_count(),
              " CUDA device(s), cuda:0 to cuda:", cuda_device_count() - 1);
}

cudaStream_t cuda_stream_if_created(Stream stream) {
  if (stream.id >= kMaxCudaStreams || stream.device.index < 0 ||
      stream.device.index >= kMaxCudaDevices) {
    return nullptr;
  }
  return streams_of(stream.device).streams[stream.id].load(std::memory_order_acquire);
}

cudaStream_t cuda_stream(Stream stream) {
  check_device(stream.device, "a CUDA stream");
  GROVE_CHECK(stream.id < kMaxCudaStreams, stream, " is not a CUDA stream (ids go up to ",
              kMaxCudaStreams - 1, ")");
  DeviceStreams& streams = streams_of(stream.device);
  if (stream.id == 0) {
    std::call_once(streams.default_created, [&] {
      streams.streams[0].store(make_stream(stream.device), std::memory_order_release);
    });
  }
  cudaStream_t result = streams.streams[stream.id].load(std::memory_order_acquire);
  GROVE_CHECK(result != nullptr, stream,
              " does not exist: CUDA stream ids other than 0 come from new_stream()");
  return result;
}

void create_stream(Stream stream) {
  check_device(stream.device, "new_stream");
  GROVE_INTERNAL_ASSERT(stream.id > 0 && stream.id < kMaxCudaStreams,
                        "new_stream handed out CUDA stream id ", stream.id);
  DeviceStreams& streams = streams_of(stream.device);
  std::lock_guard<std::mutex> lock(streams.mutex);
  if (streams.streams[stream.id].load(std::memory_order_acquire) != nullptr) return;  // reused id
  streams.streams[stream.id].store(make_stream(stream.device), std::memory_order_release);
}

DeviceGuard::DeviceGuard(Device device) {
  GROVE_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device.index) {
    GROVE_CUDA_CHECK(cudaSetDevice(device.index));
  } else {
    previous_ = -1;  // nothing to restore
  }
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) (void)cudaSetDevice(previous_);
}

RelaxedCaptureModeGuard::RelaxedCaptureModeGuard() {
  GROVE_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&previous_));
}

RelaxedCaptureModeGuard::~RelaxedCaptureModeGuard() {
  (void)cudaThreadExchangeStreamCaptureMode(&previous_);
}

}  // namespace cuda_backend
}  // namespace grove
