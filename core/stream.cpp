// Streams: current-stream bookkeeping and the CPU stream's capture state.
// See Note [CPU streams simulate CUDA capture] in stream.h.
#include "core/stream.h"

#include <array>
#include <atomic>
#include <vector>

#include "core/device_graph.h"
#include "core/error.h"

namespace grove {
namespace {

constexpr int kMaxDevicesPerType = 16;

// The calling thread's current stream id per device.
thread_local std::array<std::array<std::uint32_t, kMaxDevicesPerType>, kNumDeviceTypes>
    current_ids{};

std::atomic<std::uint32_t> next_cpu_stream_id{1};

int checked_index(Device device) {
  GROVE_CHECK(device.index >= 0 && device.index < kMaxDevicesPerType, "device index ",
              static_cast<int>(device.index), " is out of range [0, ", kMaxDevicesPerType, ")");
  return device.index;
}

void check_cpu_stream(Stream stream) {
  GROVE_CHECK(stream.id < kMaxCpuStreams, "stream id ", stream.id,
              " is not a CPU stream (ids go up to ", kMaxCpuStreams - 1, ")");
}

}  // namespace

std::ostream& operator<<(std::ostream& out, Stream stream) {
  return out << "stream " << stream.id << " on " << stream.device;
}

Stream default_stream(Device device) {
  checked_index(device);
  return Stream{device, 0};
}

Stream new_stream(Device device) {
  if (device.is_cpu()) {
    std::uint32_t id = next_cpu_stream_id.fetch_add(1);
    GROVE_CHECK(id < kMaxCpuStreams, "new_stream: all ", kMaxCpuStreams - 1,
                " CPU streams are in use; reuse the streams you have");
    return Stream{device, id};
  }
  return capture_backend_for(device).new_stream(device);
}

Stream current_stream(Device device) {
  return Stream{device, current_ids[static_cast<int>(device.type)][checked_index(device)]};
}

StreamGuard::StreamGuard(Stream stream) : previous_(current_stream(stream.device)) {
  if (stream.device.is_cpu()) check_cpu_stream(stream);
  current_ids[static_cast<int>(stream.device.type)][stream.device.index] = stream.id;
}

StreamGuard::~StreamGuard() {
  current_ids[static_cast<int>(previous_.device.type)][previous_.device.index] = previous_.id;
}

void synchronize(Stream stream) {
  GROVE_CHECK(!is_capturing(stream),
              "operation not permitted when stream is capturing: synchronize(", stream,
              ") was called while that stream captures a graph (CUDA reports this as "
              "cudaErrorStreamCaptureUnsupported). Synchronise before begin_capture or after "
              "end_capture.");
  capture_backend_for(stream.device).synchronize(stream);
}

void wait_stream(Stream waiter, Stream producer) {
  GROVE_CHECK(waiter.device == producer.device,
              "wait_stream: the streams are on different devices (", waiter, " waits for ",
              producer, ")");
  if (waiter == producer) return;  // a stream runs its work in order
  capture_backend_for(waiter.device).wait_stream(waiter, producer);
}

bool is_capturing(Stream stream) {
  return capture_backend_for(stream.device).is_capturing(stream);
}

bool host_sync_allowed(Device device) {
  CaptureBackend& backend = capture_backend_for(device);
  return !backend.is_capturing(current_stream(device)) && !backend.this_thread_is_capturing();
}

void check_not_capturing(Device device, const char* what) {
  GROVE_CHECK(host_sync_allowed(device), "operation not permitted when stream is capturing: ", what,
              " reads tensor data on the host or synchronises, but this thread is capturing a "
              "graph on ",
              device,
              " (CUDA reports this as cudaErrorStreamCaptureUnsupported). "
              "Move the host read out of the captured region, or read the result after replay.");
}

}  // namespace grove
