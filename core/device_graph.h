// DeviceGraph: a captured sequence of kernels that can be replayed.
//
// Usage:
//   DeviceGraph graph(kCPU);
//   graph.begin_capture(stream);        // allocations on `stream` now go to graph.pool()
//   ... launch kernels on `stream` ...  // recorded, not run
//   graph.end_capture();
//   graph.replay();                     // runs them, reading and writing the same memory
//
// A graph owns one use of its private pool (create a fresh one, or pass an existing PoolId to
// share it; see Note [Private pools during capture]); the pool is released when the graph is
// reset or destroyed. The device-specific part sits behind CaptureBackend: the CPU backend
// records kernels into a list (Note [CPU streams simulate CUDA capture]); the CUDA backend maps
// begin/end/replay to cudaStreamBeginCapture (thread-local mode), cudaStreamEndCapture +
// cudaGraphInstantiate, and cudaGraphLaunch.
//
// Random numbers: while a graph captures, the device's default generator hands out offsets
// relative to a cell the graph owns; each replay writes the generator's current seed and offset
// into the cell, in stream order, and advances the generator, so every replay draws fresh
// numbers. The backend decides where the cell lives (host or device memory) and how it is
// written: Note [Random numbers in captured graphs] in rng.h.
//
// Not thread-safe; one capture per stream at a time.
#pragma once

#include <cstddef>
#include <memory>

#include "core/caching_allocator.h"
#include "core/rng.h"
#include "core/stream.h"

namespace grove {

// The captured work of one graph, ready to replay.
class CapturedWork {
 public:
  virtual ~CapturedWork() = default;
  virtual void replay(Stream stream) = 0;
  virtual std::size_t num_nodes() const = 0;
};

// What a device type provides for streams and capture.
class CaptureBackend {
 public:
  virtual ~CaptureBackend() = default;
  // Stream ids are handed out and taken back by new_stream/release_stream (core/stream.cpp);
  // the backend makes the stream behind an id the first time it is handed out, and keeps it
  // when the id is released (a released id is handed out again, with the same stream).
  virtual std::uint32_t num_stream_ids() const = 0;  // ids 0 .. num_stream_ids() - 1
  virtual void create_stream(Stream stream) = 0;
  virtual void synchronize(Stream stream) = 0;
  virtual void wait_stream(Stream waiter, Stream producer) = 0;  // see core/stream.h
  virtual bool is_capturing(Stream stream) = 0;
  virtual bool this_thread_is_capturing() = 0;
  virtual void begin_capture(Stream stream) = 0;
  virtual std::unique_ptr<CapturedWork> end_capture(Stream stream) = 0;

  // The PhiloxCell of a graph: made before its capture begins (never while capturing), deleted
  // when the graph is reset, and written before each replay so that work queued on `stream`
  // before the write still sees the old values and work queued after sees `values`. The
  // defaults keep the cell in host memory and write it at once, which suits a backend whose
  // replays run immediately (the CPU); see Note [Random numbers in captured graphs] in rng.h.
  virtual PhiloxCell* new_philox_cell(Device /*device*/) { return new PhiloxCell(); }
  virtual void delete_philox_cell(Device /*device*/, PhiloxCell* cell) { delete cell; }
  virtual void write_philox_cell(Stream /*stream*/, PhiloxCell* cell, const PhiloxCell& values) {
    *cell = values;
  }
};

CaptureBackend& capture_backend_for(Device device);
void register_capture_backend(DeviceType type, CaptureBackend* backend);

class DeviceGraph {
 public:
  explicit DeviceGraph(Device device = kCPU);
  ~DeviceGraph();
  DeviceGraph(const DeviceGraph&) = delete;
  DeviceGraph& operator=(const DeviceGraph&) = delete;

  // Starts capturing work launched on `stream`; allocations on it go to `pool` (a new private
  // pool if none is given).
  void begin_capture(Stream stream, PoolId pool = {});
  void end_capture();
  // Runs the captured work again, on the capture stream, ordered after the work already queued
  // on the calling thread's current stream and before the work queued there afterwards
  // (wait_stream in stream.h; nothing to do when that is the capture stream).
  void replay();
  // Runs the captured work on `stream`, another stream of the graph's device than the capture
  // stream included, with no ordering of its own: the caller orders it with the work around it,
  // and with the capture stream's, whose cuBLAS workspace the captured products use
  // (Note [The caller's stream and the manager's stream] in graphs/tree/tree_manager.h).
  void replay_on(Stream stream);
  // Drops the captured work and the RNG cell, and releases the pool.
  void reset();

  Device device() const { return device_; }
  PoolId pool() const { return pool_; }
  bool is_capturing() const { return capturing_; }
  bool has_work() const { return work_ != nullptr; }
  std::size_t num_nodes() const;

 private:
  Device device_;
  Stream stream_;
  PoolId pool_;
  bool capturing_ = false;
  std::unique_ptr<CapturedWork> work_;
  PhiloxCell* rng_cell_ = nullptr;  // from the backend's new_philox_cell; may be device memory
  std::uint64_t rng_counters_per_replay_ = 0;
};

}  // namespace grove
