// Benchmark mode of the CUDA convolutions (set_conv_benchmark in ops/conv.h): timing a plan's
// usable algorithms on the call's own buffers to pick the fastest. The plan cache that calls it
// is ops/cuda/conv_plans.cpp; see Note [cuDNN convolution plans] there. Library calls and
// stream_hold.cu's spin, compiled by g++.
#include <algorithm>
#include <limits>
#include <vector>

#include "core/cuda/cuda_device.h"
#include "core/stream.h"
#include "ops/cuda/conv_plans.h"
#include "ops/cuda/stream_hold.h"

namespace grove::ops::cuda::convolution {

// Benchmark mode: times every usable algorithm on the call's own buffers (one warm-up run, then
// kTimedRuns between two CUDA events on the current stream, queued behind a 1 ms spin) and
// returns the index of the fastest in GPU time (of those within 5% of it, the first in cuDNN's
// rank). Synchronises the host; see Note [cuDNN convolution plans]. Throws if cuDNN refuses
// every candidate when it runs.
std::size_t fastest(cudnnHandle_t handle, Direction direction, const ConvPlan& plan,
                    const std::vector<Usable>& usable, const CallBuffers& buffers, DType dtype,
                    Device device, const char* op_name) {
  constexpr int kTimedRuns = 5;
  constexpr std::int64_t kHoldMicroseconds = 1000;  // longer than queuing the runs takes
  std::size_t most = 0;
  for (const Usable& u : usable) most = std::max(most, u.bytes);
  const Workspace space = workspace(most, device);
  void* space_data = space.data;
  const Scale scale(dtype);
  cudaStream_t stream = cuda_backend::cuda_stream(current_stream(device));
  const TimingEvents events;
  std::vector<float> times(usable.size(), std::numeric_limits<float>::infinity());
  for (std::size_t i = 0; i < usable.size(); ++i) {
    GROVE_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.convolution, usable[i].math));
    auto run = [&] {
      return run_convolution(handle, direction, plan, usable[i].algorithm, buffers, space_data,
                             usable[i].bytes, scale);
    };
    if (run() != CUDNN_STATUS_SUCCESS) continue;  // listed but refused at run time: skip it
    // The timed runs queue up behind a spin of the stream, so the events see GPU time only, not
    // the host's launch overhead (which differs between algorithms and dominates small shapes).
    hold_stream(stream, kHoldMicroseconds);
    GROVE_CUDA_CHECK(cudaEventRecord(events.start, stream));
    for (int r = 0; r < kTimedRuns; ++r) GROVE_CUDNN_CHECK(run());
    GROVE_CUDA_CHECK(cudaEventRecord(events.stop, stream));
    GROVE_CUDA_CHECK(cudaEventSynchronize(events.stop));
    GROVE_CUDA_CHECK(cudaEventElapsedTime(&times[i], events.start, events.stop));
  }
  // Within 5% of the fastest counts as a tie (timing noise), won by cuDNN's higher-ranked pick.
  const float fastest_ms = *std::min_element(times.begin(), times.end());
  GROVE_CHECK(fastest_ms < std::numeric_limits<float>::infinity(), op_name,
              " on CUDA: cuDNN listed ", usable.size(),
              " algorithms for this shape but refused each of them when run");
  std::size_t best = 0;
  while (times[best] > fastest_ms * 1.05f) ++best;
  return best;
}

}  // namespace grove::ops::cuda::convolution
