// DeviceGraph: ties a capture to its private pool and to the RNG cell, over a CaptureBackend.
#include "core/device_graph.h"

#include <array>
#include <atomic>
#include <utility>

#include "core/cuda/cuda_backend.h"
#include "core/error.h"

namespace grove {
namespace {
std::array<std::atomic<CaptureBackend*>, kNumDeviceTypes> capture_backends{};
}  // namespace

CaptureBackend& cpu_capture_backend();  // cpu_capture.cpp

void register_capture_backend(DeviceType type, CaptureBackend* backend) {
  capture_backends[static_cast<int>(type)].store(backend, std::memory_order_release);
}

CaptureBackend& capture_backend_for(Device device) {
  if (device.is_cpu()) return cpu_capture_backend();
  CaptureBackend* backend =
      capture_backends[static_cast<int>(device.type)].load(std::memory_order_acquire);
  // The CUDA backend registers itself on first use, or says why it cannot.
  if (backend == nullptr && device.is_cuda()) return cuda_backend::capture_backend(device);
  GROVE_CHECK(backend != nullptr, "no stream backend for device ", device,
              ": this build of grove has no backend for it");
  return *backend;
}

DeviceGraph::DeviceGraph(Device device) : device_(device), stream_(default_stream(device)) {}

DeviceGraph::~DeviceGraph() {
  try {
    reset();
  } catch (const Error& error) {
    std::fprintf(stderr, "grove: error while destroying a DeviceGraph: %s\n", error.what());
  }
}

void DeviceGraph::begin_capture(Stream stream, PoolId pool) {
  GROVE_CHECK(stream.device == device_, "begin_capture: the graph is for ", device_,
              " but the stream is on ", stream.device);
  GROVE_CHECK(!capturing_, "begin_capture: this graph is already capturing; call end_capture");
  GROVE_CHECK(work_ == nullptr,
              "begin_capture: this graph already holds captured work; call "
              "reset() before capturing again");
  GROVE_CHECK(!grove::is_capturing(stream), "begin_capture: ", stream,
              " is already capturing another graph");
  CachingAllocator& allocator = allocator_for(device_);
  if (pool_.is_private()) allocator.release_pool(std::exchange(pool_, PoolId{}));
  if (pool.is_private()) {
    allocator.retain_pool(pool);
  } else {
    pool = allocator.create_pool();
  }
  // Set up the route, the generator's capture and the backend's capture in that order; if a
  // step fails, undo the ones before it so that nothing is left half-capturing (a stream still
  // routed to a pool, or the default generator stuck handing out cell-relative offsets).
  // The cell is made before the capture begins: a CUDA cell is a cudaMalloc, which a capture
  // would refuse. One cell per graph, kept across recaptures until reset().
  CaptureBackend& backend = capture_backend_for(device_);
  if (rng_cell_ == nullptr) {
    try {
      rng_cell_ = backend.new_philox_cell(device_);
    } catch (...) {
      allocator.release_pool(pool);
      throw;
    }
  }
  Generator& generator = default_generator(device_);
  try {
    allocator.begin_allocate_to_pool(stream, pool);
    try {
      generator.begin_capture(rng_cell_);
      try {
        backend.begin_capture(stream);
      } catch (...) {
        generator.end_capture();
        throw;
      }
    } catch (...) {
      allocator.end_allocate_to_pool(stream, pool);
      throw;
    }
  } catch (...) {
    allocator.release_pool(pool);
    throw;
  }
  pool_ = pool;
  stream_ = stream;
  capturing_ = true;
}

void DeviceGraph::end_capture() {
  GROVE_CHECK(capturing_, "end_capture: this graph is not capturing; call begin_capture first");
  // The backend may refuse (the capture was begun on another thread); the graph then stays
  // capturing, so that the right thread can still end it.
  try {
    work_ = capture_backend_for(device_).end_capture(stream_);
  } catch (...) {
    // If the stream is no longer capturing, the capture is over even though it failed (CUDA
    // ends an invalidated capture with an error): undo the pool route and the generator's
    // capture so that nothing stays half-capturing, then report the error.
    if (!grove::is_capturing(stream_)) {
      capturing_ = false;
      allocator_for(device_).end_allocate_to_pool(stream_, pool_);
      default_generator(device_).end_capture();
    }
    throw;
  }
  capturing_ = false;
  allocator_for(device_).end_allocate_to_pool(stream_, pool_);
  rng_counters_per_replay_ = default_generator(device_).end_capture();
}

void DeviceGraph::replay() {
  GROVE_CHECK(!capturing_, "replay: the graph is still capturing; call end_capture first");
  GROVE_CHECK(work_ != nullptr,
              "replay: nothing was captured; call begin_capture and "
              "end_capture first");
  // Order the replay with the caller's current stream, if that is another one: what the caller
  // queued before (refilling inputs) runs first, and what it queues after (reading outputs)
  // runs after the replay. A capturing caller stream is left alone (the capture decides).
  const Stream caller = current_stream(device_);
  const bool join = caller != stream_ && !grove::is_capturing(caller);
  if (join) wait_stream(stream_, caller);
  replay_on(stream_);
  if (join) wait_stream(caller, stream_);
}

void DeviceGraph::replay_on(Stream stream) {
  GROVE_CHECK(!capturing_, "replay: the graph is still capturing; call end_capture first");
  GROVE_CHECK(work_ != nullptr,
              "replay: nothing was captured; call begin_capture and "
              "end_capture first");
  GROVE_CHECK(stream.device == device_, "replay_on: ", stream, " is not a stream of ", device_,
              ", where the graph was captured");
  if (rng_counters_per_replay_ > 0) {
    const PhiloxCell values = default_generator(device_).reserve_replay(rng_counters_per_replay_);
    capture_backend_for(device_).write_philox_cell(stream, rng_cell_, values);
  }
  work_->replay(stream);
}

void DeviceGraph::reset() {
  if (capturing_) end_capture();
  work_.reset();
  rng_counters_per_replay_ = 0;
  if (rng_cell_ != nullptr) {
    capture_backend_for(device_).delete_philox_cell(device_, std::exchange(rng_cell_, nullptr));
  }
  if (pool_.is_private()) {
    allocator_for(device_).release_pool(std::exchange(pool_, PoolId{}));
  }
}

std::size_t DeviceGraph::num_nodes() const {
  return work_ ? work_->num_nodes() : 0;
}

}  // namespace grove
