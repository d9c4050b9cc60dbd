// DeviceGraph: ties a capture to its private pool and to the RNG cell, over a CaptureBackend.
#include "core/device_graph.h"

#include <array>

#include "core/error.h"

namespace grove {
namespace {
std::array<CaptureBackend*, kNumDeviceTypes> capture_backends{};
}  // namespace

CaptureBackend& cpu_capture_backend();  // cpu_capture.cpp

void register_capture_backend(DeviceType type, CaptureBackend* backend) {
  capture_backends[static_cast<int>(type)] = backend;
}

CaptureBackend& capture_backend_for(Device device) {
  if (device.is_cpu()) return cpu_capture_backend();
  CaptureBackend* backend = capture_backends[static_cast<int>(device.type)];
  GROVE_CHECK(backend != nullptr, "no stream backend for device ", device,
              ": this build of grove has no backend for it (CUDA support arrives with the CUDA "
              "backend)");
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
  GROVE_CHECK(work_ == nullptr, "begin_capture: this graph already holds captured work; call "
              "reset() before capturing again");
  GROVE_CHECK(!grove::is_capturing(stream), "begin_capture: ", stream,
              " is already capturing another graph");
  CachingAllocator& allocator = allocator_for(device_);
  if (pool_.is_private()) allocator.release_pool(pool_);  // left from an earlier capture
  if (pool.is_private()) {
    allocator.retain_pool(pool);
    pool_ = pool;
  } else {
    pool_ = allocator.create_pool();
  }
  stream_ = stream;
  allocator.begin_allocate_to_pool(stream, pool_);
  rng_cell_ = std::make_unique<PhiloxCell>();
  try {
    default_generator(device_).begin_capture(rng_cell_.get());
  } catch (...) {
    allocator.end_allocate_to_pool(stream, pool_);
    throw;
  }
  capture_backend_for(device_).begin_capture(stream);
  capturing_ = true;
}

void DeviceGraph::end_capture() {
  GROVE_CHECK(capturing_, "end_capture: this graph is not capturing; call begin_capture first");
  capturing_ = false;
  work_ = capture_backend_for(device_).end_capture(stream_);
  allocator_for(device_).end_allocate_to_pool(stream_, pool_);
  rng_counters_per_replay_ = default_generator(device_).end_capture();
}

void DeviceGraph::replay() {
  GROVE_CHECK(!capturing_, "replay: the graph is still capturing; call end_capture first");
  GROVE_CHECK(work_ != nullptr, "replay: nothing was captured; call begin_capture and "
              "end_capture first");
  if (rng_counters_per_replay_ > 0) {
    default_generator(device_).prepare_replay(rng_cell_.get(), rng_counters_per_replay_);
  }
  work_->replay(stream_);
}

void DeviceGraph::reset() {
  if (capturing_) end_capture();
  work_.reset();
  if (pool_.is_private()) {
    allocator_for(device_).release_pool(std::exchange(pool_, PoolId{}));
  }
}

std::size_t DeviceGraph::num_nodes() const { return work_ ? work_->num_nodes() : 0; }

}  // namespace grove
