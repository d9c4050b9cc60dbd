// DataLoader: batches of a dataset held in memory, assembled on a background thread ahead of
// the training loop, in an order that depends only on (seed, epoch).
//
// What it is not: a multi-process loader, a streaming reader of files, or an augmentation
// library (LoaderOptions::transform is the hook for that).
//
// Invariants:
// - An epoch visits every sample exactly once, in epoch_permutation(size(), seed, epoch) order
//   when shuffled and in index order otherwise (epoch_order.h says how the order is made).
//   Batch i holds the samples at positions [i * batch_size, (i + 1) * batch_size) of that order;
//   the last, partial batch is kept unless drop_last.
// - The worker thread only reads the dataset's bytes (through raw pointers taken when the
//   loader is made) and makes new tensors; it never touches a tensor the consumer holds.
//   Its allocations go to a CPU stream of the loader's own, so a graph that the consumer
//   captures on the default stream never receives them (Note [Private pools during capture]).
// - On a CUDA device, batches are gathered into pinned host memory on the worker and copied
//   with to(device, non_blocking=true) on the consumer's thread when next() hands them out: the
//   copy is queued on the consumer's current stream and the host does not wait for it
//   (Note [Reuse of pinned host blocks] in core/cuda/pinned_memory.h keeps the pinned block
//   alive until the copy has read it). On the CPU, batches are handed out as assembled.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "core/stream.h"
#include "core/tensor.h"

namespace grove::data {

namespace detail {
struct LoaderEpoch;  // the state one epoch's worker shares with the consumer (loader.cpp)
}  // namespace detail

// One batch: rows of the dataset's inputs and targets, first dimension the batch.
struct Batch {
  Tensor inputs;   // (b, ...inputs' other sizes), b <= batch_size; on LoaderOptions::device
  Tensor targets;  // (b, ...targets' other sizes)
  std::int64_t epoch = 0;
  std::int64_t index = 0;  // position of the batch in its epoch, from 0
};

struct LoaderOptions {
  std::int64_t batch_size = 1;
  bool shuffle = true;
  std::uint64_t seed = 0;
  bool drop_last = false;     // drop the last batch if it is smaller than batch_size
  Device device = kCPU;       // where next() hands batches out
  std::int64_t prefetch = 2;  // batches assembled ahead of the consumer (at least 1)
  // Optional, called on the worker thread with each assembled batch (CPU tensors, pinned when
  // device is CUDA) before it is queued: it may change the batch's values in place or replace
  // its tensors by new CPU tensors (grove ops are fine; they run on the loader's stream). It must
  // not touch tensors that other threads use. An exception it throws reaches the consumer from
  // next().
  std::function<void(Batch&)> transform = nullptr;
};

// Contract:
// - Ownership: holds the dataset tensors (CPU; copied once into contiguous memory if they are
//   not contiguous). Do not write to them while an epoch runs: the worker reads them.
// - Thread safety: one consumer thread calls the methods (not thread-safe); the worker thread
//   is the loader's own. Destruction, and start_epoch, stop the worker and wait for it (within
//   one batch's assembly), dropping the batches it had prepared.
// - Blocking: next() blocks until the worker has assembled the batch (it usually already has).
// - Errors: an exception on the worker (out of memory, a failing transform) is rethrown by
//   next() after the batches assembled before it, and by every later next() of that epoch.
class DataLoader {
 public:
  // inputs: (N, ...) and targets: (N, ...) on the CPU, same N. Throws grove::Error for
  // batch_size < 1, prefetch < 1, undefined or 0-d tensors, tensors off the CPU, different
  // sample counts, and a CUDA device when none is available.
  DataLoader(Tensor inputs, Tensor targets, LoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Starts epoch `epoch` (>= 0) at batch `first_batch` (0..batches_per_epoch(); a resumed run
  // skips the batches it already trained on, and gets exactly the batches an uninterrupted
  // epoch would have given from there). Stops the previous epoch's worker first. Starts a
  // thread; returns at once.
  void start_epoch(std::int64_t epoch, std::int64_t first_batch = 0);

  // The next batch of the current epoch, or nullopt once the epoch is over. Throws if no epoch
  // was started, or rethrows the worker's error.
  std::optional<Batch> next();

  // ceil(size() / batch_size), or floor with drop_last.
  std::int64_t batches_per_epoch() const;
  // The number of samples N.
  std::int64_t size() const { return sample_count_; }
  const LoaderOptions& options() const { return options_; }

 private:
  void stop_worker();

  LoaderOptions options_;
  Tensor inputs_;   // (N, ...) contiguous, CPU
  Tensor targets_;  // (N, ...) contiguous, CPU
  std::int64_t sample_count_ = 0;
  Stream worker_stream_;  // a CPU stream of the loader's own (new_stream / release_stream)
  std::shared_ptr<detail::LoaderEpoch> epoch_;
  std::int64_t next_index_ = 0;  // the index of the batch next() hands out next
};

}  // namespace grove::data
