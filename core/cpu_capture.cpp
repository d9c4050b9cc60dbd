// The CPU stream backend: kernels run at once, or are recorded while their stream captures.
// See Note [CPU streams simulate CUDA capture] in stream.h.
#include <array>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "core/device_graph.h"
#include "core/error.h"

namespace grove {
namespace {

// The kernels recorded by one capture, in launch order.
class CpuCapturedWork final : public CapturedWork {
 public:
  explicit CpuCapturedWork(std::vector<detail::CpuKernel> kernels) : kernels_(std::move(kernels)) {}
  void replay(Stream /*stream*/) override {
    for (const detail::CpuKernel& kernel : kernels_) kernel();
  }
  std::size_t num_nodes() const override { return kernels_.size(); }

 private:
  std::vector<detail::CpuKernel> kernels_;
};

struct CpuCapture {
  std::thread::id thread;
  std::vector<detail::CpuKernel> kernels;
};

// Capture state of each CPU stream; a stream's slot is written only by begin/end_capture.
std::array<std::atomic<CpuCapture*>, kMaxCpuStreams> captures{};
std::atomic<int> active_captures{0};
thread_local int captures_begun_by_this_thread = 0;

class CpuCaptureBackend final : public CaptureBackend {
 public:
  std::uint32_t num_stream_ids() const override { return kMaxCpuStreams; }
  void create_stream(Stream /*stream*/) override {}  // a CPU stream is just its id
  void synchronize(Stream /*stream*/) override {}    // CPU kernels have already run
  void wait_stream(Stream /*waiter*/, Stream /*producer*/) override {}  // likewise
  bool is_capturing(Stream stream) override {
    return stream.id < kMaxCpuStreams &&
           captures[stream.id].load(std::memory_order_acquire) != nullptr;
  }
  bool this_thread_is_capturing() override { return captures_begun_by_this_thread > 0; }

  void begin_capture(Stream stream) override {
    GROVE_CHECK(stream.id < kMaxCpuStreams, "begin_capture: ", stream, " is not a CPU stream");
    auto* capture = new CpuCapture{std::this_thread::get_id(), {}};
    CpuCapture* expected = nullptr;
    if (!captures[stream.id].compare_exchange_strong(expected, capture)) {
      delete capture;
      GROVE_CHECK(false, "begin_capture: ", stream, " is already capturing");
    }
    active_captures.fetch_add(1);
    ++captures_begun_by_this_thread;
  }

  std::unique_ptr<CapturedWork> end_capture(Stream stream) override {
    GROVE_CHECK(stream.id < kMaxCpuStreams, "end_capture: ", stream, " is not a CPU stream");
    CpuCapture* capture = captures[stream.id].load(std::memory_order_acquire);
    GROVE_CHECK(capture != nullptr, "end_capture: ", stream, " is not capturing");
    GROVE_CHECK(capture->thread == std::this_thread::get_id(), "end_capture: the capture on ",
                stream, " was begun by another thread; end it on the thread that began it");
    captures[stream.id].store(nullptr, std::memory_order_release);
    active_captures.fetch_sub(1);
    --captures_begun_by_this_thread;
    auto work = std::make_unique<CpuCapturedWork>(std::move(capture->kernels));
    delete capture;
    return work;
  }
};

}  // namespace

CaptureBackend& cpu_capture_backend() {
  static CpuCaptureBackend backend;
  return backend;
}

namespace detail {

bool any_cpu_capture_active() {
  return active_captures.load(std::memory_order_relaxed) > 0;
}

bool record_if_capturing(Stream stream, CpuKernel&& kernel) {
  if (stream.id >= kMaxCpuStreams) return false;
  CpuCapture* capture = captures[stream.id].load(std::memory_order_acquire);
  if (capture == nullptr) return false;
  capture->kernels.push_back(std::move(kernel));
  return true;
}

}  // namespace detail
}  // namespace grove
