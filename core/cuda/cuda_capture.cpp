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
// (Note [Private pools during capture]); this backend never allocates device memory.
#include <memory>
#include <mutex>

#include "core/cuda/cuda_backend.h"
#include "core/cuda/cuda_device.h"
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

// Captures begun and not yet ended by the calling thread (thread-local capture mode refuses
// unsafe calls on every stream of the thread, so the whole thread counts as capturing).
thread_local int captures_begun_by_this_thread = 0;

class CudaCaptureBackend final : public CaptureBackend {
 public:
  Stream new_stream(Device device) override { return create_stream(device); }

  void synchronize(Stream stream) override {
    cudaStream_t cuda = cuda_stream(stream);
    DeviceGuard guard(stream.device);
    GROVE_CUDA_CHECK(cudaStreamSynchronize(cuda));
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
