// CUDA devices and streams, for the files of the CUDA backend (this header needs the CUDA
// toolkit's headers; core files use core/cuda/cuda_backend.h instead).
//
// Note [CUDA stream ids]
// ~~~~~~~~~~~~~~~~~~~~~~
// A grove Stream is a value {device, id}; the CUDA backend maps each id of a device to one
// cudaStream_t, made on first use and never destroyed (like the allocator, streams live as long
// as the process, so a Stream value can never dangle). Id 0, the default stream of every device
// in grove, is *not* CUDA's legacy default stream (stream 0 / cudaStreamLegacy): that one cannot
// be captured and implicitly synchronises with every blocking stream. Instead id 0 is a stream
// created with cudaStreamNonBlocking the first time the device is used, so code that never names
// a stream can still be captured. Ids 1, 2, ... are handed out by new_stream() (core/stream.cpp),
// up to kMaxCudaStreams per device; release_stream() takes an id back and the next new_stream()
// hands it out again with the same cudaStream_t, so a process can make and release streams
// without end while creating at most kMaxCudaStreams of them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/stream.h"

namespace grove::cuda_backend {

inline constexpr std::uint32_t kMaxCudaStreams = 1024;
// Devices the registries (streams, allocators, per-thread events) hold; later ones are not used.
inline constexpr int kMaxCudaDevices = 16;

// Throws "no CUDA device is available: ..." unless `device` is a CUDA device that exists.
// `what` names the operation for the message.
void check_device(Device device, const char* what);

// The cudaStream_t of a grove stream, created on first use for id 0. Throws for ids that
// new_stream() never handed out.
cudaStream_t cuda_stream(Stream stream);
// The same, or nullptr if the stream has not been created yet (does not create it).
cudaStream_t cuda_stream_if_created(Stream stream);
// Makes the cudaStream_t (non-blocking) for an id new_stream() handed out, unless the id had one
// from an earlier holder (see Note [CUDA stream ids]).
void create_stream(Stream stream);

// Makes `device` the calling thread's current CUDA device until the guard dies.
class DeviceGuard {
 public:
  explicit DeviceGuard(Device device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// Puts the calling thread into cudaStreamCaptureModeRelaxed until the guard dies. Allocator
// calls (cudaMalloc, events) may happen while this thread captures in thread-local mode, which
// would otherwise refuse them as "potentially unsafe"; they do not touch the captured stream.
class RelaxedCaptureModeGuard {
 public:
  RelaxedCaptureModeGuard();
  ~RelaxedCaptureModeGuard();
  RelaxedCaptureModeGuard(const RelaxedCaptureModeGuard&) = delete;
  RelaxedCaptureModeGuard& operator=(const RelaxedCaptureModeGuard&) = delete;

 private:
  cudaStreamCaptureMode previous_ = cudaStreamCaptureModeRelaxed;
};

}  // namespace grove::cuda_backend
