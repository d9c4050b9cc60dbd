// Streams: where kernels run, in order.
//
// A Stream is a small value: a device and an id (0 is the device's default stream). Each thread
// has a current stream per device (current_stream / StreamGuard). Kernels are launched on a
// stream:
// - CPU: launch_cpu(stream, kernel) runs the kernel at once, unless the stream is capturing;
//   then the kernel is recorded into the capturing DeviceGraph and not run. See
//   Note [CPU streams simulate CUDA capture].
// - CUDA: a stream is a cudaStream_t (Note [CUDA stream ids] in core/cuda/cuda_device.h: id 0
//   is a non-blocking stream of grove's own, not CUDA's legacy default stream); kernels are
//   launched on it asynchronously, and the same capture calls map to cudaStreamBeginCapture
//   (thread-local mode) / cudaStreamEndCapture (core/cuda/cuda_capture.cpp).
//
// Note [CPU streams simulate CUDA capture]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// While a stream captures, work launched on it is recorded, not run, and its allocations go to
// the capture's private pool (Note [Private pools during capture] in caching_allocator.h).
// CUDA forbids host synchronisation and host reads of device data during capture
// (cudaErrorStreamCaptureUnsupported); the CPU stream enforces the same rules, so code that
// works when captured on the CPU also works when captured on a GPU. A kernel recorded on the
// CPU must hold only raw pointers, sizes and scalars (never tensor handles): like a CUDA graph
// node, it must not keep memory alive or look at tensor metadata when replayed. launch_cpu
// enforces this by requiring the kernel to be trivially copyable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>

#include "core/device.h"

namespace grove {

struct Stream {
  Device device;
  std::uint32_t id = 0;

  friend bool operator==(Stream a, Stream b) { return a.device == b.device && a.id == b.id; }
};
std::ostream& operator<<(std::ostream& out, Stream stream);

inline constexpr std::uint32_t kMaxCpuStreams = 64;

Stream default_stream(Device device);

// Note [Streams are handed out and given back]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A device has a fixed number of stream ids (CPU: kMaxCpuStreams; CUDA: kMaxCudaStreams in
// core/cuda/cuda_device.h), id 0 being the default stream. new_stream() hands out a free id and
// release_stream() takes it back for the next new_stream(), so whatever holds a stream for a
// while (a graph-tree manager holds one for its life) must give it back when done. The backend's
// stream behind an id is made once and kept (Note [CUDA stream ids]), so a Stream value never
// dangles: using a released stream is not a memory error, it merely shares the stream with its
// next holder. Every id in use is labelled with its holder, and the error when a device has
// none left names the holders and what to do.

// A stream of its own until release_stream(). `holder` says who holds it, in the plural, for
// the message when all are in use (e.g. "graph-tree managers"). Thread-safe; throws grove::Error
// when every id of the device is in use.
Stream new_stream(Device device, const char* holder = "callers of new_stream()");
// Gives a stream from new_stream() back. Throws for the default stream, a stream that is not
// handed out (never, or already given back), or one that is capturing. Work already queued on it
// still runs; the next holder's work runs after it.
void release_stream(Stream stream);
// How many streams of `device` new_stream() has handed out and release_stream() not taken back.
std::size_t streams_in_use(Device device);
// The calling thread's current stream for `device` (the default stream unless a guard is active).
Stream current_stream(Device device);

// Makes `stream` current for its device on this thread until the guard dies.
class StreamGuard {
 public:
  explicit StreamGuard(Stream stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_;
};

// Blocks until all work on the stream is done. Throws if the stream is capturing.
void synchronize(Stream stream);

// Makes work queued on `waiter` from now on wait until the work queued on `producer` so far has
// finished, without blocking the host (CUDA: an event recorded on `producer` and waited for on
// `waiter`; CPU streams run kernels as they are launched, so there is nothing to wait for). Both
// streams must be on one device. Neither may be capturing unless both are part of one capture.
void wait_stream(Stream waiter, Stream producer);

// True while `stream` is being captured into a DeviceGraph.
bool is_capturing(Stream stream);
// False while the current stream of `device` is capturing, or this thread is capturing on any
// stream: then a host synchronisation would break the capture.
bool host_sync_allowed(Device device);
// Throws, in the words CUDA uses, if the current stream of `device` (or any stream this thread
// is capturing on) is capturing: `what` names the operation, e.g. "item()".
void check_not_capturing(Device device, const char* what);

namespace detail {
// A kernel as recorded into a CPU graph.
using CpuKernel = std::function<void()>;
// Records `kernel` if `stream` is capturing and returns true; returns false otherwise.
bool record_if_capturing(Stream stream, CpuKernel&& kernel);
// Fast check used by launch_cpu before it builds a std::function.
bool any_cpu_capture_active();
}  // namespace detail

// Runs `kernel` on a CPU stream now, or records it if the stream is capturing.
template <typename Kernel>
void launch_cpu(Stream stream, Kernel kernel) {
  static_assert(std::is_trivially_copyable_v<Kernel>,
                "CPU kernels may capture only raw pointers, sizes and scalars (see "
                "Note [CPU streams simulate CUDA capture]); tensor handles or containers are not "
                "allowed");
  // A replay runs a copy of the kernel made on its own stack, as the call below does: invoked
  // in place, inside the std::function's heap object, the kernel's captured scalars could be
  // written through any pointer of their type as far as the compiler knows, so it reloads them
  // on every iteration and does not vectorise (relu's backward ran about 10x slower replayed).
  if (detail::any_cpu_capture_active() &&
      detail::record_if_capturing(stream, detail::CpuKernel([kernel] {
                                    Kernel local = kernel;
                                    local();
                                  }))) {
    return;
  }
  kernel();
}

}  // namespace grove

template <>
struct std::hash<grove::Stream> {
  std::size_t operator()(grove::Stream stream) const noexcept {
    return (static_cast<std::size_t>(stream.device.type) << 40) ^
           (static_cast<std::size_t>(static_cast<std::uint8_t>(stream.device.index)) << 32) ^
           stream.id;
  }
};
