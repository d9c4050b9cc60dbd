// Streams: current-stream bookkeeping and the CPU stream's capture state.
// See Note [CPU streams simulate CUDA capture] in stream.h.
#include "core/stream.h"

#include <array>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/device_graph.h"
#include "core/error.h"

namespace grove {
namespace {

constexpr int kMaxDevicesPerType = 16;

// The calling thread's current stream id per device.
thread_local std::array<std::array<std::uint32_t, kMaxDevicesPerType>, kNumDeviceTypes>
    current_ids{};

// The stream ids of one device: those handed out, with their holders, and those given back.
// See Note [Streams are handed out and given back].
struct StreamIds {
  std::mutex mutex;
  std::uint32_t next_unused = 1;                 // ids below it have been handed out at least once
  std::vector<std::uint32_t> released;           // handed out before, free now
  std::map<std::uint32_t, std::string> holders;  // in use, by id
};

StreamIds& stream_ids_of(Device device) {
  // Never destroyed: managers owned by thread_local storage give their streams back at exit.
  static auto* all = new std::array<std::array<StreamIds, kMaxDevicesPerType>, kNumDeviceTypes>();
  return (*all)[static_cast<int>(device.type)][device.index];
}

// "61 by graph-tree managers, 2 by callers of new_stream()"
std::string describe_holders(const StreamIds& ids) {
  std::map<std::string, int> counts;
  for (const auto& [id, holder] : ids.holders) ++counts[holder];
  std::string text;
  for (const auto& [holder, count] : counts) {
    text += str(text.empty() ? "" : ", ", count, " by ", holder);
  }
  return text;
}

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

Stream new_stream(Device device, const char* holder) {
  checked_index(device);
  CaptureBackend& backend = capture_backend_for(device);  // throws if the device has no backend
  StreamIds& ids = stream_ids_of(device);
  Stream stream{device, 0};
  {
    std::lock_guard<std::mutex> lock(ids.mutex);
    const std::uint32_t limit = backend.num_stream_ids();
    GROVE_CHECK(!ids.released.empty() || ids.next_unused < limit, "new_stream: all ", limit - 1,
                " streams of ", device, " besides its default stream are in use (held ",
                describe_holders(ids),
                "). Give back streams that are no longer needed: destroy the "
                "graph-tree managers you are done with (each holds a stream until it is "
                "destroyed; tree_manager(device) keeps one per thread until the thread ends), and "
                "call release_stream() on streams from new_stream().");
    if (!ids.released.empty()) {
      stream.id = ids.released.back();
      ids.released.pop_back();
    } else {
      stream.id = ids.next_unused++;
    }
    ids.holders.emplace(stream.id, holder);
  }
  try {
    backend.create_stream(stream);
  } catch (...) {
    std::lock_guard<std::mutex> lock(ids.mutex);
    ids.holders.erase(stream.id);
    ids.released.push_back(stream.id);
    throw;
  }
  return stream;
}

void release_stream(Stream stream) {
  checked_index(stream.device);
  GROVE_CHECK(stream.id != 0, "release_stream: ", stream,
              " is the device's default stream, which is never handed out by new_stream() and "
              "cannot be given back");
  GROVE_CHECK(!is_capturing(stream), "release_stream: ", stream,
              " is capturing a graph; end the capture before giving the stream back");
  StreamIds& ids = stream_ids_of(stream.device);
  std::lock_guard<std::mutex> lock(ids.mutex);
  GROVE_CHECK(ids.holders.erase(stream.id) == 1, "release_stream: ", stream,
              " is not handed out (it was never returned by new_stream(), or it was already "
              "given back); give back each stream from new_stream() exactly once");
  ids.released.push_back(stream.id);
}

std::size_t streams_in_use(Device device) {
  checked_index(device);
  StreamIds& ids = stream_ids_of(device);
  std::lock_guard<std::mutex> lock(ids.mutex);
  return ids.holders.size();
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
