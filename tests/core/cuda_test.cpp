// Tests of the CUDA part of core (core/cuda/): the cudaMalloc allocator backend with caching,
// cross-stream reuse, private pools, checkpoints and out-of-memory; host <-> device copies;
// the copy and fill kernels against the CPU ones; item(); and DeviceGraph capture and replay on
// CUDA streams, with host reads and synchronisation refused while capturing.
//
// Every test needs a GPU and skips without one (CTest label `gpu`); the last test checks the
// error a machine without a GPU gives. The tests use the process-wide allocator of cuda:0, so
// they compare stats before and after rather than absolute values.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "core/caching_allocator.h"
#include "core/cuda/cuda_device.h"
#include "core/device_graph.h"
#include "core/format.h"
#include "core/storage.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "tests/core/cuda_test_util.h"
#include "tests/sanitizer_scale.h"

namespace grove {
namespace {

using testing::error_of;
using testing::kGpu;

constexpr const char* kCaptureMessage = "operation not permitted when stream is capturing";
constexpr std::size_t kMiB = 1024 * 1024;

// One extra stream for the whole binary (stream ids are never given back).
Stream side_stream() {
  static const Stream stream = new_stream(kGpu);
  return stream;
}

::testing::AssertionResult has_substr(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << part << "\" not found in: " << text;
}

// --- streams ---

TEST(CudaStreamTest, StreamsAreDistinctAndTheDefaultIsNotCapturing) {
  SKIP_WITHOUT_GPU();
  const Stream a = new_stream(kGpu);
  const Stream b = new_stream(kGpu);
  EXPECT_NE(a.id, 0u);
  EXPECT_NE(a.id, b.id);
  EXPECT_NE(cuda_backend::cuda_stream(a), cuda_backend::cuda_stream(b));
  // Note [CUDA stream ids]: id 0 is a stream of its own, not CUDA's legacy default stream.
  cudaStream_t zero = cuda_backend::cuda_stream(default_stream(kGpu));
  EXPECT_NE(zero, nullptr);
  EXPECT_NE(zero, cudaStreamLegacy);
  EXPECT_FALSE(is_capturing(default_stream(kGpu)));
  EXPECT_NO_THROW(synchronize(a));
  EXPECT_TRUE(has_substr(error_of([] { synchronize(Stream{kGpu, 1000}); }), "new_stream()"));
  if (cuda_device_count() < 16) {
    EXPECT_TRUE(has_substr(error_of([] { (void)empty({2}, cuda(15)); }), "no CUDA device cuda:15"));
  }
}

// --- allocator ---

TEST(CudaAllocatorTest, AllocateFreeAndReuseTheCachedBlock) {
  SKIP_WITHOUT_GPU();
  CachingAllocator& allocator = allocator_for(kGpu);
  EXPECT_EQ(allocator.device(), kGpu);
  const AllocatorStats before = allocator.stats();
  StoragePtr storage = Storage::allocate(4000, kGpu);
  void* first = storage->data();
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, first), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attributes.device, 0);
  EXPECT_EQ(allocator.stats().allocated_bytes, before.allocated_bytes + 4096);  // rounded
  EXPECT_GE(allocator.stats().reserved_bytes, before.reserved_bytes);
  storage.reset();
  EXPECT_EQ(allocator.stats().allocated_bytes, before.allocated_bytes);
  const AllocatorStats freed = allocator.stats();
  storage = Storage::allocate(4000, kGpu);
  EXPECT_EQ(storage->data(), first);  // the cached block, no new segment
  EXPECT_EQ(allocator.stats().cache_hits, freed.cache_hits + 1);
  EXPECT_EQ(allocator.stats().num_segment_allocations, freed.num_segment_allocations);
  storage.reset();
  allocator.empty_cache();
  EXPECT_EQ(allocator.stats().reserved_bytes, allocator.stats().private_pool_bytes);
  EXPECT_GT(allocator.stats().num_segment_frees, before.num_segment_frees);
}

// Keeps a stream busy in a host function until release() (or destruction, so that a failing
// test never leaves the stream blocked).
class StreamBlocker {
 public:
  explicit StreamBlocker(Stream stream) {
    EXPECT_EQ(cudaLaunchHostFunc(cuda_backend::cuda_stream(stream), &wait, &released_),
              cudaSuccess);
  }
  ~StreamBlocker() { release(); }
  void release() { released_.store(true); }

 private:
  static void CUDART_CB wait(void* flag) {
    while (!static_cast<std::atomic<bool>*>(flag)->load()) std::this_thread::yield();
  }
  std::atomic<bool> released_{false};
};

TEST(CudaAllocatorTest, CrossStreamReuseWaitsForTheEvent) {
  SKIP_WITHOUT_GPU();
  CachingAllocator& allocator = allocator_for(kGpu);
  allocator.empty_cache();  // no cached blocks from earlier tests to compete with ours
  const Stream home = default_stream(kGpu);
  StoragePtr block = Storage::allocate(4000, kGpu, home);
  void* address = block->data();
  {
    StreamBlocker blocker(side_stream());  // work queued on the side stream that has not run
    allocator.record_stream(address, side_stream());
    block.reset();  // records an event on the side stream: not complete while it is blocked
    StoragePtr meanwhile = Storage::allocate(4000, kGpu, home);
    EXPECT_NE(meanwhile->data(), address) << "reused while the side stream may still use it";
    blocker.release();
    synchronize(side_stream());
    StoragePtr after = Storage::allocate(4000, kGpu, home);
    EXPECT_EQ(after->data(), address) << "not reused once the side stream was done";
  }
}

// wait_stream orders two streams on the device: a copy queued on the default stream right after
// a long series of fills on the side stream sees the last fill. (A host-function blocker, as in
// the allocator tests, is not used here: the host would queue the wait while CUDA's callback
// thread is busy, which is not what the ordering is about.)
TEST(CudaStreamTest, WaitStreamOrdersWorkWithoutBlockingTheHost) {
  SKIP_WITHOUT_GPU();
  // 64 MiB per fill; 256 KiB under compute-sanitizer (Note [GPU tests under compute-sanitizer]).
  const Tensor source = full({grove::testing::sanitizer_scaled(1 << 24, 1 << 16)}, 0.0f).to(kGpu);
  synchronize(default_stream(kGpu));
  for (int round = 0; round < 3; ++round) {
    {
      const StreamGuard on_side(side_stream());
      for (int i = 1; i <= 40; ++i) source.fill_(static_cast<float>(100 * round + i));
    }
    wait_stream(default_stream(kGpu), side_stream());
    const Tensor copy = source.clone();  // on the default stream, after the last fill
    const std::vector<float> values = copy.to(kCPU).to_vector<float>();
    EXPECT_EQ(values.front(), static_cast<float>(100 * round + 40));
    EXPECT_EQ(values.back(), static_cast<float>(100 * round + 40));
    synchronize(side_stream());
  }
  EXPECT_TRUE(has_substr(error_of([] { wait_stream(default_stream(kGpu), default_stream(kCPU)); }),
                         "wait_stream: the streams are on different devices"));
}

TEST(CudaAllocatorTest, PrivatePoolAndCheckpoint) {
  SKIP_WITHOUT_GPU();
  CachingAllocator& allocator = allocator_for(kGpu);
  const Stream stream = side_stream();
  const PoolId pool = allocator.create_pool();
  allocator.begin_allocate_to_pool(stream, pool);
  StoragePtr a = Storage::allocate(1000, kGpu, stream);
  StoragePtr b = Storage::allocate(3000, kGpu, stream);
  allocator.end_allocate_to_pool(stream, pool);
  ASSERT_EQ(cudaMemset(a->data(), 0x5A, a->nbytes()), cudaSuccess);
  void* a_address = a->data();
  void* b_address = b->data();
  EXPECT_GE(allocator.stats().private_pool_bytes, CachingAllocator::kSmallSegment);
  const PoolState checkpoint = allocator.checkpoint_pool_state(pool);

  // Memory outside the pool never comes from the pool's segments.
  StoragePtr outside = Storage::allocate(1000, kGpu, stream);
  for (const SegmentInfo& segment : allocator.snapshot(pool)) {
    const auto address = reinterpret_cast<std::uintptr_t>(outside->data());
    EXPECT_TRUE(address < segment.address || address >= segment.address + segment.size);
  }

  // A "replay era": B dies and its memory is taken by a block that no storage owns.
  b.reset();
  allocator.begin_allocate_to_pool(stream, pool);
  DataPtr replay_memory = allocator.allocate(3000, stream);
  allocator.end_allocate_to_pool(stream, pool);
  EXPECT_EQ(replay_memory.get(), b_address);
  replay_memory.release_ownership();

  Storage* live[] = {a.get()};
  const CheckpointDelta delta = allocator.set_checkpoint_pool_state(checkpoint, live);
  EXPECT_EQ(delta.freed, std::vector<void*>{b_address});
  std::vector<void*> expected = {a_address};
  std::string report;
  EXPECT_TRUE(allocator.check_pool_live_allocations(pool, expected, &report)) << report;
  std::vector<unsigned char> bytes(a->nbytes());
  ASSERT_EQ(cudaMemcpy(bytes.data(), a->data(), bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(bytes.front(), 0x5A);
  EXPECT_EQ(bytes.back(), 0x5A);

  a.reset();
  allocator.release_pool(pool);
  EXPECT_FALSE(allocator.pool_exists(pool));
}

// Restores the allocator's reserved-bytes limit when the test ends.
struct LimitGuard {
  explicit LimitGuard(std::size_t limit) { allocator_for(kGpu).set_memory_limit(limit); }
  ~LimitGuard() { allocator_for(kGpu).set_memory_limit(0); }
};

TEST(CudaAllocatorTest, OutOfMemoryAgainstTheLimitNamesTheNumbers) {
  SKIP_WITHOUT_GPU();
  CachingAllocator& allocator = allocator_for(kGpu);
  const AllocatorStats before = allocator.stats();
  const std::size_t limit = before.reserved_bytes + 16 * kMiB;
  std::string message;
  {
    LimitGuard guard(limit);
    // Under the limit: 1 MiB comes from a 2 MiB segment (8 MiB would need a 20 MiB one).
    StoragePtr fits = Storage::allocate(1 * kMiB, kGpu);
    EXPECT_NE(fits->data(), nullptr);
  }
  {
    LimitGuard guard(limit);
    try {
      (void)Storage::allocate(64 * kMiB, kGpu);
      ADD_FAILURE() << "64 MiB under a limit of 16 MiB more than reserved did not throw";
    } catch (const OutOfMemoryError& error) {
      message = error.what();
    }
  }
  EXPECT_TRUE(has_substr(message, "out of memory on cuda:0"));
  EXPECT_TRUE(has_substr(message, format_bytes(64 * kMiB)));
  EXPECT_TRUE(has_substr(message, "reserved limit: " + format_bytes(limit)));
  EXPECT_EQ(allocator.stats().num_ooms, before.num_ooms + 1);
  StoragePtr after = Storage::allocate(64 * kMiB, kGpu);  // no limit any more
  EXPECT_NE(after->data(), nullptr);
}

TEST(CudaAllocatorTest, OutOfMemoryFromCudaMallocIsReportedAndCleared) {
  SKIP_WITHOUT_GPU();
  CachingAllocator& allocator = allocator_for(kGpu);
  const AllocatorStats before = allocator.stats();
  const std::size_t huge = std::size_t{1} << 50;  // 1 PiB: no GPU has it
  const std::string message = error_of([&] { (void)Storage::allocate(huge, kGpu); });
  EXPECT_TRUE(has_substr(message, "out of memory on cuda:0"));
  EXPECT_TRUE(has_substr(message, "reserved limit: none"));
  EXPECT_EQ(allocator.stats().num_ooms, before.num_ooms + 1);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the failed cudaMalloc left its error behind";
  StoragePtr after = Storage::allocate(1000, kGpu);
  EXPECT_NE(after->data(), nullptr);
}

// --- copies, fill, item ---

// Note [Converting floating-point values to integers]: the device's rule is the CPU's, for the
// values C++ leaves undefined too.
TEST(CudaCopyTest, FloatToIntegerConversionsMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor cpu = from_vector<double>(
      {std::nan(""), inf, -inf, 1e30, -1e30, 2.9, -2.9, 9.3e18, -9.3e18, 2147483647.5, -3e9});
  for (const DType from : {DType::Float64, DType::Float32}) {
    const Tensor source = cpu.to(from);
    const Tensor gpu = source.to(kGpu);
    for (const DType to : {DType::Int64, DType::Int32, DType::Bool}) {
      SCOPED_TRACE(std::string(dtype_name(from)) + " to " + std::string(dtype_name(to)));
      EXPECT_EQ(gpu.to(to).to(kCPU).to(DType::Int64).to_vector<std::int64_t>(),
                source.to(to).to(DType::Int64).to_vector<std::int64_t>());
    }
  }
}

TEST(CudaCopyTest, HostDeviceHostRoundTrips) {
  SKIP_WITHOUT_GPU();
  const std::vector<float> floats = {1.5f, -2.25f, 3.0f, 1e-20f, -0.0f, 7e30f};
  const std::vector<std::int64_t> ints = {1, -2, std::int64_t{1} << 40, 0,
                                          -(std::int64_t{1} << 50)};
  const std::vector<bool> bools = {true, false, false, true, true};
  const Tensor f = from_vector(floats, {2, 3}, kGpu);
  EXPECT_EQ(f.device(), kGpu);
  EXPECT_EQ(f.sizes(), (DimVector{2, 3}));
  EXPECT_EQ(f.to_vector<float>(), floats);
  EXPECT_EQ(from_vector(ints, {}, kGpu).to_vector<std::int64_t>(), ints);
  EXPECT_EQ(from_vector(bools, {}, kGpu).to_vector<bool>(), bools);
  const Tensor back = f.to(kCPU);
  EXPECT_TRUE(back.device().is_cpu());
  EXPECT_EQ(back.to_vector<float>(), floats);
  EXPECT_EQ(empty({0, 3}, kGpu).to_vector<float>(), std::vector<float>{});
}

TEST(CudaCopyTest, StridedBroadcastAndConvertingCopiesMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  const Tensor x = arange(-11, 13, 1).to(DType::Float32).view({2, 3, 4});  // CPU reference
  const Tensor g = x.to(kGpu);
  // Strided source: a permuted view made dense on the device.
  EXPECT_EQ(g.permute({2, 0, 1}).contiguous().to_vector<float>(),
            x.permute({2, 0, 1}).contiguous().to_vector<float>());
  // Strided destination, stepped source.
  const Tensor dst_gpu = zeros({4, 3, 2}, kGpu);
  const Tensor dst_cpu = zeros({4, 3, 2});
  dst_gpu.transpose(0, 2).copy_(g);
  dst_cpu.transpose(0, 2).copy_(x);
  EXPECT_EQ(dst_gpu.to_vector<float>(), dst_cpu.to_vector<float>());
  EXPECT_EQ(g.slice(2, 0, 4, 3).contiguous().to_vector<float>(),
            x.slice(2, 0, 4, 3).contiguous().to_vector<float>());
  // Broadcasting: a row into every row, a scalar into everything.
  const Tensor rows = empty({5, 4}, kGpu);
  rows.copy_(g.select(0, 1).select(0, 2));
  EXPECT_EQ(rows.to_vector<float>(),
            x.select(0, 1).select(0, 2).expand({5, 4}).contiguous().to_vector<float>());
  rows.copy_(from_vector<float>({4.5f}, {}, kGpu).view({1, 1}));
  EXPECT_EQ(rows.to_vector<float>(), std::vector<float>(20, 4.5f));
  // Conversions on the device, each compared with the same conversion on the CPU.
  for (DType dtype : {DType::Float64, DType::Int64, DType::Int32, DType::Bool}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor converted = g.to(dtype);
    EXPECT_EQ(converted.device(), kGpu);
    EXPECT_EQ(converted.dtype(), dtype);
    EXPECT_EQ(converted.to_vector<double>(), x.to(dtype).to_vector<double>());
    EXPECT_EQ(converted.to(DType::Float32).to_vector<float>(),
              x.to(dtype).to(DType::Float32).to_vector<float>());
  }
  // Host <-> device with strides, broadcasting and conversions (the staged paths).
  const Tensor strided_gpu = zeros({4, 3, 2}, TensorOptions(DType::Int64).device(kGpu));
  const Tensor strided_cpu = zeros({4, 3, 2}, DType::Int64);
  strided_gpu.transpose(0, 2).copy_(x);  // float32 on the CPU -> strided int64 on the GPU
  strided_cpu.transpose(0, 2).copy_(x);
  EXPECT_EQ(strided_gpu.to_vector<std::int64_t>(), strided_cpu.to_vector<std::int64_t>());
  const Tensor host_dst = zeros({4, 3, 2}, DType::Float64);
  host_dst.transpose(0, 2).copy_(g);  // float32 on the GPU -> strided float64 on the CPU
  EXPECT_EQ(host_dst.to_vector<double>(), dst_cpu.to(DType::Float64).to_vector<double>());
  const Tensor broadcast_gpu = empty({3, 4}, kGpu);
  broadcast_gpu.copy_(x.select(0, 1).select(0, 2));  // (4) on the CPU -> (3, 4) on the GPU
  EXPECT_EQ(broadcast_gpu.to_vector<float>(),
            x.select(0, 1).select(0, 2).expand({3, 4}).contiguous().to_vector<float>());
}

// Copies over several dims take 32-bit index arithmetic (core/cuda/copy_kernel.cu): the views
// that pack attention heads ((B, T, 3, H, D) rows read as (B, H, T, D)), sizes that are not
// powers of two, a size-1 dim among others, and a broadcast source, against the CPU.
TEST(CudaCopyTest, CopiesOverSeveralDimsMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  const Tensor rows = arange(0, 3 * 5 * 3 * 6 * 7, 1).to(DType::Float32).view({3, 5, 3 * 6 * 7});
  const Tensor heads = rows.view({3, 5, 3, 6, 7}).select(2, 1).permute({0, 2, 1, 3});
  const Tensor heads_gpu = rows.to(kGpu).view({3, 5, 3, 6, 7}).select(2, 1).permute({0, 2, 1, 3});
  EXPECT_EQ(heads_gpu.contiguous().to_vector<float>(), heads.contiguous().to_vector<float>());
  EXPECT_EQ(heads_gpu.to(DType::Float64).to_vector<double>(),
            heads.to(DType::Float64).to_vector<double>());
  const Tensor odd = arange(0, 2 * 1 * 9 * 11, 1).to(DType::Int64).view({2, 1, 9, 11});
  const Tensor odd_dst = zeros({11, 9, 1, 2}, TensorOptions(DType::Int64).device(kGpu));
  odd_dst.permute({3, 2, 1, 0}).copy_(odd.to(kGpu));
  EXPECT_EQ(odd_dst.to_vector<std::int64_t>(),
            odd.permute({3, 2, 1, 0}).contiguous().to_vector<std::int64_t>());
  const Tensor column = arange(0, 13, 1).to(DType::Float32).view({13, 1});
  const Tensor spread = empty({4, 13, 6}, kGpu);
  spread.copy_(column.to(kGpu));
  EXPECT_EQ(spread.to_vector<float>(), column.expand({4, 13, 6}).contiguous().to_vector<float>());
}

TEST(CudaCopyTest, OverlappingCopyOnTheDeviceMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  const Tensor x = arange(10).to(DType::Float32);
  const Tensor g = x.to(kGpu);
  x.slice(0, 1, 10).copy_(x.slice(0, 0, 9));  // shifted onto itself: staged through a clone
  g.slice(0, 1, 10).copy_(g.slice(0, 0, 9));
  EXPECT_EQ(g.to_vector<float>(), x.to_vector<float>());
}

TEST(CudaCopyTest, FillMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  EXPECT_EQ(full({5, 3}, 2.5, kGpu).to_vector<float>(), std::vector<float>(15, 2.5f));
  EXPECT_EQ(full({4}, std::int64_t{1} << 40, kGpu).to_vector<std::int64_t>(),
            std::vector<std::int64_t>(4, std::int64_t{1} << 40));
  EXPECT_EQ(full({3}, true, kGpu).to_vector<bool>(), std::vector<bool>(3, true));
  EXPECT_EQ(zeros({3}, TensorOptions(DType::Float64).device(kGpu)).to_vector<double>(),
            std::vector<double>(3, 0.0));
  // A strided destination: one column of a matrix.
  const Tensor gpu = arange(12).to(DType::Int32).view({3, 4}).to(kGpu);
  const Tensor cpu = arange(12).to(DType::Int32).view({3, 4});
  gpu.select(1, 2).fill_(-7);
  cpu.select(1, 2).fill_(-7);
  EXPECT_EQ(gpu.to_vector<std::int32_t>(), cpu.to_vector<std::int32_t>());
  // A large fill that needs more blocks than one wave (grid-stride loop).
  const std::int64_t n = (std::int64_t{1} << 24) + 3;
  EXPECT_EQ(full({n}, 1.0, kGpu).to(DType::Float64).to_vector<double>(),
            std::vector<double>(static_cast<std::size_t>(n), 1.0));
}

TEST(CudaCopyTest, ItemReadsOneElement) {
  SKIP_WITHOUT_GPU();
  EXPECT_EQ(from_vector<float>({3.5f}, {}, kGpu).item<float>(), 3.5f);
  EXPECT_EQ(from_vector<std::int64_t>({1, 2, 3}, {}, kGpu).select(0, 2).item<std::int64_t>(), 3);
  EXPECT_EQ(full({1, 1}, true, kGpu).item<bool>(), true);
  EXPECT_EQ(full({}, 2.0, kGpu).item<double>(), 2.0);
  EXPECT_TRUE(has_substr(error_of([] { (void)zeros({2}, kGpu).item<float>(); }), "exactly one"));
}

// --- capture ---

TEST(CudaCaptureTest, ReplayRunsTheCapturedCopiesWithNewInputs) {
  SKIP_WITHOUT_GPU();
  const Stream stream = side_stream();
  StreamGuard guard(stream);
  const Tensor input = from_vector<float>({1.0f, -2.0f, 3.5f}, {}, kGpu);
  const Tensor output = empty({2, 3}, TensorOptions(DType::Float64).device(kGpu));
  CachingAllocator& allocator = allocator_for(kGpu);
  const std::size_t pool_bytes_before = allocator.stats().private_pool_bytes;

  DeviceGraph graph(kGpu);
  graph.begin_capture(stream);
  EXPECT_TRUE(is_capturing(stream));
  EXPECT_FALSE(is_capturing(default_stream(kGpu)));
  const Tensor as_int = input.to(DType::Int64);  // a converting copy into the graph's pool
  output.select(0, 0).copy_(as_int);             // int64 -> float64, strided destination
  output.select(0, 1).fill_(0.5);
  output.select(0, 1).slice(0, 0, 1).copy_(input.slice(0, 2, 3));  // float32 -> float64
  graph.end_capture();
  EXPECT_FALSE(is_capturing(stream));
  EXPECT_GE(graph.num_nodes(), 4u);
  EXPECT_GT(allocator.stats().private_pool_bytes, pool_bytes_before);
  // Nothing ran during capture: the output is still uninitialised, so fill it to see replays.
  output.fill_(-1.0);

  graph.replay();
  EXPECT_EQ(output.to_vector<double>(), (std::vector<double>{1, -2, 3, 3.5, 0.5, 0.5}));

  input.copy_(from_vector<float>({10.75f, 20.0f, -30.5f}, {}, kCPU));  // new values, same memory
  output.fill_(-1.0);
  graph.replay();
  EXPECT_EQ(output.to_vector<double>(), (std::vector<double>{10, 20, -30, -30.5, 0.5, 0.5}));
}

// Note [Expandable segments of a private pool]: a capture maps memory for its pool's
// expandable segment, and a request larger than either of two freed blocks takes both.
TEST(CudaCaptureTest, ACaptureGrowsThePoolsExpandableSegment) {
  SKIP_WITHOUT_GPU();
  CachingAllocator& allocator = allocator_for(kGpu);
  ASSERT_TRUE(allocator.expandable_segments())
      << "the driver's virtual memory calls were not found";
  const Stream stream = side_stream();
  StreamGuard guard(stream);
  const TensorOptions floats = TensorOptions(DType::Float32).device(kGpu);
  const Tensor output = zeros({3}, floats);

  DeviceGraph graph(kGpu);
  graph.begin_capture(stream);
  {
    const Tensor first = empty({3 << 20}, floats);   // 12 MiB
    const Tensor second = empty({2 << 20}, floats);  // 8 MiB, right after it
    first.fill_(1.0);
    second.fill_(2.0);
    output.slice(0, 0, 1).copy_(first.slice(0, (3 << 20) - 1, 3 << 20));
    output.slice(0, 1, 2).copy_(second.slice(0, (2 << 20) - 1, 2 << 20));
  }                                               // both free, one block of 20 MiB within the pool
  const Tensor third = empty({5 << 20}, floats);  // 20 MiB
  third.fill_(3.0);
  output.slice(0, 2, 3).copy_(third.slice(0, (5 << 20) - 1, 5 << 20));
  graph.end_capture();

  std::size_t expandable_bytes = 0;
  int expandables = 0;
  for (const SegmentInfo& segment : allocator.snapshot(graph.pool())) {
    if (!segment.expandable) continue;
    ++expandables;
    expandable_bytes += segment.size;
    EXPECT_EQ(segment.blocks.front().address, reinterpret_cast<std::uintptr_t>(third.data_ptr()));
  }
  EXPECT_EQ(expandables, 1);
  EXPECT_EQ(expandable_bytes, 20 * kMiB);  // ordinary segments: 12 + 20 + 20 MiB

  graph.replay();
  EXPECT_EQ(output.to_vector<float>(), (std::vector<float>{1, 2, 3}));
  output.fill_(0.0);
  graph.replay();
  EXPECT_EQ(output.to_vector<float>(), (std::vector<float>{1, 2, 3}));
}

TEST(CudaCaptureTest, CaptureOnTheDefaultStream) {
  SKIP_WITHOUT_GPU();
  const Tensor output = zeros({4}, TensorOptions(DType::Int32).device(kGpu));
  DeviceGraph graph(kGpu);
  graph.begin_capture(default_stream(kGpu));
  output.fill_(9);
  graph.end_capture();
  EXPECT_EQ(output.to_vector<std::int32_t>(), std::vector<std::int32_t>(4, 0));
  graph.replay();
  EXPECT_EQ(output.to_vector<std::int32_t>(), std::vector<std::int32_t>(4, 9));
}

TEST(CudaCaptureTest, HostReadsAndSynchronisationAreRefusedWhileCapturing) {
  SKIP_WITHOUT_GPU();
  const Stream stream = side_stream();
  StreamGuard guard(stream);
  const Tensor x = full({1}, 4.0, kGpu);
  DeviceGraph graph(kGpu);
  graph.begin_capture(stream);
  EXPECT_TRUE(has_substr(error_of([&] { (void)x.item<float>(); }), kCaptureMessage));
  EXPECT_TRUE(has_substr(error_of([&] { (void)x.to_vector<float>(); }), kCaptureMessage));
  EXPECT_TRUE(has_substr(error_of([&] { (void)x.to(kCPU); }), kCaptureMessage));
  EXPECT_TRUE(
      has_substr(error_of([&] { (void)from_vector<float>({1}, {}, kGpu); }), kCaptureMessage));
  const std::string sync_error = error_of([&] { synchronize(stream); });
  EXPECT_TRUE(has_substr(sync_error, kCaptureMessage));
  EXPECT_TRUE(has_substr(sync_error, "cudaErrorStreamCaptureUnsupported"));
  // Another stream under a guard does not help: thread-local capture refuses the whole thread.
  {
    StreamGuard other(default_stream(kGpu));
    EXPECT_TRUE(has_substr(error_of([&] { (void)x.item<float>(); }), kCaptureMessage));
  }
  x.fill_(5.0);
  graph.end_capture();  // the refusals did not invalidate the capture
  EXPECT_EQ(x.item<float>(), 4.0f);
  graph.replay();
  EXPECT_EQ(x.item<float>(), 5.0f);
  EXPECT_NO_THROW(synchronize(stream));
}

// --- without a GPU ---

TEST(CudaNoDeviceTest, CudaPathsSayThereIsNoDevice) {
  if (cuda_is_available()) GTEST_SKIP() << "a CUDA device is present";
  const char* expected = "no CUDA device is available";
  EXPECT_TRUE(has_substr(error_of([] { (void)empty({2}, kGpu); }), expected));
  EXPECT_TRUE(has_substr(error_of([] { (void)arange(3).to(kGpu); }), expected));
  EXPECT_TRUE(has_substr(error_of([] { (void)new_stream(kGpu); }), expected));
  EXPECT_TRUE(has_substr(error_of([] { (void)allocator_for(kGpu); }), expected));
  EXPECT_TRUE(has_substr(error_of([] { synchronize(default_stream(kGpu)); }), expected));
  EXPECT_TRUE(has_substr(error_of([] {
                           DeviceGraph graph(kGpu);
                           graph.begin_capture(default_stream(kGpu));
                         }),
                         expected));
}

}  // namespace
}  // namespace grove
