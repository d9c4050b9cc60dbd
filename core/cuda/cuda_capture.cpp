// The CUDA stream and capture backend: grove streams as cudaStream_t (Note [CUDA stream ids] in
// cuda_device.h), synchronisation, and DeviceGraph capture as CUDA graphs.
//
// begin_capture is cudaStreamBeginCapture in cudaStreamCaptureModeThreadLocal: while a thread
// captures, CUDA refuses "potentially unsafe" calls (synchronisation, pageable copies, ...) made
// by that thread, on any stream, which is what Note [CPU streams simulate CUDA capture]
// describes; grove checks the same rules itself first (check_not_capturing, synchronize) so the
// user gets a grove::Error and the capture is not invalidated. end_capture is
// cudaStreamEndCapture + cudaGraphInstantiate; replay is cudaGraphLaunch on the given stream
// (asynchronous, like any launch). The private pool of the capture is the DeviceGraph's business
// (Note [Private pools during capture]); the only device memory this backend allocates is each
// graph's PhiloxCell (16 bytes, cudaMalloc'd before the capture begins), which it writes before
// every replay with a stream-ordered copy from a ring of pinned host slots: see
// Note [Random numbers in captured graphs] in core/rng.h.
#include <array>
#include <memory>
#include <mutex>

#include "core/cuda/cuda_backend.h"
#include "core/cuda/cuda_device.h"
#include "core/cuda/device_errors.h"
#include "core/device_graph.h"

namespace grove::cuda_backend {
namespace {

// One instantiated CUDA graph. Owns the graph and its executable form.
class CudaCapturedWork final : public CapturedWork {
 public:
  CudaCapturedWork(Device device, cudaGraph_t graph, cudaGraphExec_t exec, std::size_t num_nodes)
      : device_(device), graph_(graph), exec_(exec), num_nodes_(num_nodes) {}
  ~CudaCapturedWork() override {
    DeviceGuard guard(device_);
    (void)cudaGraphExecDestroy(exec_);
    (void)cudaGraphDestroy(graph_);
  }
  CudaCapturedWork(const CudaCapturedWork&) = delete;
  CudaCapturedWork& operator=(const CudaCapturedWork&) = delete;

  void replay(Stream stream) override {
    cudaStream_t cuda = cuda_stream(stream);
    DeviceGuard guard(device_);
    GROVE_CUDA_CHECK(cudaGraphLaunch(exec_, cuda));
  }
  std::size_t num_nodes() const override { return num_nodes_; }

 private:
  Device device_;
  cudaGraph_t graph_;
  cudaGraphExec_t exec_;
  std::size_t num_nodes_;
};

// Pinned host slots that the values of a PhiloxCell are copied from. A slot is written again
// only after the copy that last read it has finished (its event), so the host never changes
// bytes a queued copy has yet to read. With kSlots slots, a writer waits only when kSlots
// replays are queued and the oldest has not started.
class PhiloxCellWriter {
 public:
  void write(Stream stream, PhiloxCell* cell, const PhiloxCell& values) {
    cudaStream_t cuda = cuda_stream(stream);
    std::lock_guard<std::mutex> lock(mutex_);
    DeviceGuard guard(stream.device);
    if (host_ == nullptr) {
      void* memory = nullptr;
      GROVE_CUDA_CHECK(cudaHostAlloc(&memory, kSlots * sizeof(PhiloxCell), cudaHostAllocPortable));
      host_ = static_cast<PhiloxCell*>(memory);
    }
    const std::size_t index = next_++ % kSlots;
    Slot& slot = slots_[index];
    if (slot.event != nullptr) {
      // Waits for the copy that last read this slot (done long ago unless kSlots are queued).
      GROVE_CUDA_CHECK(cudaEventSynchronize(slot.event));
      if (slot.device != stream.device) {
        DeviceGuard old(slot.device);
        GROVE_CUDA_CHECK(cudaEventDestroy(slot.event));
        slot.event = nullptr;
      }
    }
    if (slot.event == nullptr) {
      GROVE_CUDA_CHECK(cudaEventCreateWithFlags(&slot.event, cudaEventDisableTiming));
      slot.device = stream.device;
    }
    host_[index] = values;
    GROVE_CUDA_CHECK(
        cudaMemcpyAsync(cell, &host_[index], sizeof(PhiloxCell), cudaMemcpyHostToDevice, cuda));
    GROVE_CUDA_CHECK(cudaEventRecord(slot.event, cuda));
  }

 private:
  static constexpr std::size_t kSlots = 256;
  struct Slot {
    cudaEvent_t event = nullptr;
    Device device;
  };
  std::mutex mutex_;
  PhiloxCell* host_ = nullptr;  // kSlots cells of pinned memory, never freed (like streams)
  std::array<Slot, kSlots> slots_{};
  std::size_t next_ = 0;
};

// Set when the calling thread's WaitEvents is destroyed. A trivially destructible thread_local
// stays readable through the whole of the thread's end, unlike WaitEvents itself.
thread_local constinit bool wait_events_destroyed = false;

// The events a thread's wait_stream calls record, one per device; destroyed with the thread.
// (Destroying an event whose record is still pending is allowed: CUDA frees it once done.)
// Objects destroyed later in the thread's end may still wait (a thread's tree managers, made
// before its first wait, wait for their last replay when they go): wait_stream then makes and
// destroys an event of its own, as wait_events_destroyed tells it.
struct WaitEvents {
  std::array<cudaEvent_t, kMaxCudaDevices> events{};
  WaitEvents() = default;
  WaitEvents(const WaitEvents&) = delete;
  WaitEvents& operator=(const WaitEvents&) = delete;
  ~WaitEvents() {
    for (cudaEvent_t event : events) {
      if (event != nullptr) (void)cudaEventDestroy(event);  // fails harmlessly at process exit
    }
    wait_events_destroyed = true;
  }
};

// Captures begun and not yet ended by the calling thread (thread-local capture mode refuses
// unsafe calls on every stream of the thread, so the whole thread counts as capturing).
thread_local int captures_begun_by_this_thread = 0;

class CudaCaptureBackend final : public CaptureBackend {
 public:
  std::uint32_t num_stream_ids() const override { return kMaxCudaStreams; }
  void create_stream(Stream stream) override { cuda_backend::create_stream(stream); }

  void synchronize(Stream stream) override {
    cudaStream_t cuda = cuda_stream(stream);
    DeviceGuard guard(stream.device);
    GROVE_CUDA_CHECK(cudaStreamSynchronize(cuda));
    check_device_errors(stream.device, "synchronize");  // Note [Device-side error reports]
  }

  // One event per thread and device, recorded again for every wait: cudaStreamWaitEvent waits
  // for the record that is current when it is called, so later records cannot disturb an
  // earlier wait, and no event is created or destroyed per call. The events are destroyed when
  // the thread ends, so threads that come and go (a tree manager per thread) leave none behind.
  void wait_stream(Stream waiter, Stream producer) override {
    cudaStream_t producer_stream = cuda_stream(producer);
    cudaStream_t waiter_stream = cuda_stream(waiter);
    DeviceGuard guard(waiter.device);
    if (wait_events_destroyed) {  // the thread is ending: one event for this wait alone
      cudaEvent_t event = nullptr;
      GROVE_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
      const cudaError_t recorded = cudaEventRecord(event, producer_stream);
      const cudaError_t waited =
          recorded == cudaSuccess ? cudaStreamWaitEvent(waiter_stream, event, 0) : recorded;
      (void)cudaEventDestroy(event);
      GROVE_CUDA_CHECK(waited);
      return;
    }
    thread_local WaitEvents events;
    cudaEvent_t& event = events.events[static_cast<std::size_t>(waiter.device.index)];
    if (event == nullptr) {
      GROVE_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    }
    GROVE_CUDA_CHECK(cudaEventRecord(event, producer_stream));
    GROVE_CUDA_CHECK(cudaStreamWaitEvent(waiter_stream, event, 0));
  }

  bool is_capturing(Stream stream) override {
    check_device(stream.device, "is_capturing");
    cudaStream_t cuda = cuda_stream_if_created(stream);
    if (cuda == nullptr) return false;  // never used, so not capturing
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    GROVE_CUDA_CHECK(cudaStreamIsCapturing(cuda, &status));
    // An invalidated capture still has to be ended, so it counts as capturing.
    return status != cudaStreamCaptureStatusNone;
  }

  bool this_thread_is_capturing() override { return captures_begun_by_this_thread > 0; }

  void begin_capture(Stream stream) override {
    cudaStream_t cuda = cuda_stream(stream);
    DeviceGuard guard(stream.device);
    prepare_device_errors(stream.device);  // captured kernels may report into it
    GROVE_CUDA_CHECK(cudaStreamBeginCapture(cuda, cudaStreamCaptureModeThreadLocal));
    ++captures_begun_by_this_thread;
  }

  std::unique_ptr<CapturedWork> end_capture(Stream stream) override {
    cudaStream_t cuda = cuda_stream(stream);
    DeviceGuard guard(stream.device);
    cudaGraph_t graph = nullptr;
    const cudaError_t error = cudaStreamEndCapture(cuda, &graph);
    if (error == cudaErrorStreamCaptureWrongThread) {
      (void)cudaGetLastError();
      GROVE_CHECK(false, "end_capture: the capture on ", stream,
                  " was begun by another thread; end it on the thread that began it");
    }
    --captures_begun_by_this_thread;  // the capture is over, whether it succeeded or not
    GROVE_CUDA_CHECK(error);
    std::size_t num_nodes = 0;
    cudaGraphExec_t exec = nullptr;
    try {
      GROVE_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &num_nodes));
      GROVE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    } catch (...) {
      (void)cudaGraphDestroy(graph);
      throw;
    }
    return std::make_unique<CudaCapturedWork>(stream.device, graph, exec, num_nodes);
  }

  PhiloxCell* new_philox_cell(Device device) override {
    check_device(device, "a CUDA graph's random number cell");
    DeviceGuard guard(device);
    void* cell = nullptr;
    GROVE_CUDA_CHECK(cudaMalloc(&cell, sizeof(PhiloxCell)));
    // Left unset: every replay writes it on the replay stream before the graph's kernels read
    // it, and nothing else reads it. (A cudaMemset here would run on the legacy default stream,
    // unordered with grove's non-blocking streams.)
    return static_cast<PhiloxCell*>(cell);
  }

  void delete_philox_cell(Device device, PhiloxCell* cell) override {
    DeviceGuard guard(device);
    // A replay may still be queued; cudaFree waits for the device's work in flight before it
    // frees. The relaxed mode lets a graph be reset while this thread captures another one.
    RelaxedCaptureModeGuard relaxed;
    GROVE_CUDA_CHECK(cudaFree(cell));
  }

  void write_philox_cell(Stream stream, PhiloxCell* cell, const PhiloxCell& values) override {
    writer_.write(stream, cell, values);
  }

 private:
  PhiloxCellWriter writer_;
};

}  // namespace

CaptureBackend& capture_backend(Device device) {
  check_device(device, "using a CUDA stream");
  static CudaCaptureBackend backend;
  static std::once_flag registered;
  std::call_once(registered, [] { register_capture_backend(DeviceType::CUDA, &backend); });
  return backend;
}

}  // namespace grove::cuda_backend
