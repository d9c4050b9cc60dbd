// Random numbers: a counter-based generator (Philox 4x32 with 10 rounds).
//
// Philox maps (counter, key) to four 32-bit random words; any element can be computed on its own,
// which suits parallel kernels. A Generator holds a seed (the key) and an offset (how many
// counters have been used). A random op reserves the counters it needs with reserve() and gets
// PhiloxArgs; element i of its output uses counter offset + i / 4, word i % 4.
//
// Note [Random numbers in captured graphs]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A captured kernel is replayed with the arguments it was captured with, so a seed and offset
// baked into it would repeat the same numbers on every replay. While a graph captures, reserve()
// instead returns offsets relative to a PhiloxCell owned by the graph, and the kernel reads the
// cell when it runs (PhiloxArgs::resolve on the host, its device twin in ops/cuda/philox.cuh).
// Before each replay the graph takes the generator's current seed and offset and advances the
// generator by what the capture used (reserve_replay), so replays draw fresh numbers and eager
// calls never reuse a replay's counters.
// A capture's state (its cell and the counters it reserved) belongs to the capture, kept for the
// thread that captures (captures are per thread, as CUDA's thread-local capture mode): random ops
// of other threads meanwhile draw eagerly from the generator as usual, and captures on several
// threads, with one generator, are independent. A graph without random ops never touches the
// generator, neither when it records nor when it replays. (PyTorch registers generator states
// per graph for the same reason.)
//
// Where the cell lives and how it is written belong to the graph's CaptureBackend
// (core/device_graph.h): a CPU graph's cell is host memory, written directly, since CPU replays
// run at once. A CUDA graph's cell is device memory (a kernel cannot read host memory),
// allocated before the capture begins; a replay is asynchronous, and the previous replay may
// still be queued, so writing the cell from the host would race with it. Instead the new
// {seed, offset} is copied into the cell on the replay stream just before the graph launch
// (cudaMemcpyAsync from a pinned slot that is not reused until that copy is done), so each of
// several back-to-back replays sees its own values.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <utility>

#include "core/device.h"

namespace grove {

inline constexpr std::uint64_t kDefaultSeed = 67280421310721ULL;

// Seed and base offset read by captured kernels at run time: host memory for CPU graphs, device
// memory for CUDA graphs (see the Note above).
struct PhiloxCell {
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;
};

// What a random kernel needs: plain values, so it may be recorded (trivially copyable).
struct PhiloxArgs {
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;          // absolute, or relative to *cell when captured
  const PhiloxCell* cell = nullptr;  // set while capturing; a device pointer for CUDA graphs

  // The seed and first counter to use, read when the kernel runs (host kernels only: a CUDA
  // kernel reads a device cell with its own twin of this function).
  std::pair<std::uint64_t, std::uint64_t> resolve() const {
    if (cell != nullptr) return {cell->seed, cell->offset + offset};
    return {seed, offset};
  }
};

// The Philox 4x32-10 function: four random 32-bit words for a 128-bit counter and 64-bit key.
std::array<std::uint32_t, 4> philox4x32_10(std::uint64_t counter_low, std::uint64_t counter_high,
                                           std::uint64_t key);

// A float uniformly distributed in [0, 1) from 24 random bits, and a double from 53.
inline float uniform_float(std::uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}
inline double uniform_double(std::uint32_t high, std::uint32_t low) {
  std::uint64_t bits = (static_cast<std::uint64_t>(high) << 21) ^ (low >> 11);
  return static_cast<double>(bits & ((1ULL << 53) - 1)) * (1.0 / 9007199254740992.0);
}

// Thread-safe: reserve() and seeding take a lock; captures are per thread (see the Note).
class Generator {
 public:
  explicit Generator(std::uint64_t seed = kDefaultSeed) : seed_(seed) {}

  void manual_seed(std::uint64_t seed);
  std::uint64_t seed() const;
  std::uint64_t offset() const;
  void set_offset(std::uint64_t offset);

  // Reserves `counters` Philox counters (4 random words each) and advances.
  PhiloxArgs reserve(std::uint64_t counters);

  // Used by DeviceGraph, on the capturing thread. See Note [Random numbers in captured graphs].
  // One capture per generator per thread at a time.
  void begin_capture(PhiloxCell* cell);
  std::uint64_t end_capture();  // returns the counters the capture reserved
  // The seed and offset a replay's cell must hold; advances the generator by `counters`.
  PhiloxCell reserve_replay(std::uint64_t counters);

 private:
  mutable std::mutex mutex_;
  std::uint64_t seed_;
  std::uint64_t offset_ = 0;
};

// The default generator of a device, used by random ops unless they are given one.
Generator& default_generator(Device device);
// Seeds the default generator of every device and resets its offset.
void manual_seed(std::uint64_t seed);

}  // namespace grove
