// DataLoader (loader.h): one worker thread per epoch filling a bounded queue, and the consumer
// side that hands batches out (copying them to the device without waiting).
//
// What it is not: a pool of workers; one thread gathers rows with memcpy, which keeps up with
// any model this framework trains (a batch of 512 Fashion-MNIST images is 1.6 MB).
//
// Invariants: the queue never holds more than options.prefetch batches; batches enter it in
// index order; once `error` is set, the worker has stopped and queues nothing more.
#include "models/data/loader.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/cuda/cuda_backend.h"
#include "core/data_ptr.h"
#include "core/error.h"
#include "core/storage.h"
#include "models/data/epoch_order.h"

namespace grove::data {

namespace detail {

struct LoaderEpoch {
  std::mutex mutex;
  std::condition_variable ready;  // the consumer waits: a batch or an error is queued
  std::condition_variable room;   // the worker waits: the queue has room, or stop
  std::deque<Batch> queue;
  std::exception_ptr error;
  bool stop = false;
  std::thread worker;
};

}  // namespace detail

namespace {

// The rows of one dataset tensor as the worker sees them: raw bytes and shape, no handle.
struct RowSource {
  const std::byte* data = nullptr;
  std::size_t row_bytes = 0;
  DType dtype = DType::Float32;
  std::vector<std::int64_t> row_sizes;  // the sizes after the first
};

RowSource rows_of(const Tensor& tensor) {
  RowSource source;
  source.data = static_cast<const std::byte*>(tensor.data_ptr());
  source.row_bytes =
      tensor.size(0) == 0 ? 0 : tensor.nbytes() / static_cast<std::size_t>(tensor.size(0));
  source.dtype = tensor.dtype();
  source.row_sizes.assign(tensor.sizes().begin() + 1, tensor.sizes().end());
  return source;
}

// A new contiguous CPU tensor, in pinned memory if asked.
Tensor new_host_tensor(const std::vector<std::int64_t>& sizes, DType dtype, bool pinned) {
  if (!pinned) return empty(sizes, dtype);
  std::size_t bytes = element_size(dtype);
  for (std::int64_t size : sizes) bytes *= static_cast<std::size_t>(size);
  StoragePtr storage = Storage::wrap(cuda_backend::allocate_pinned(bytes), bytes);
  return Tensor(IntrusivePtr<TensorImpl>::make(std::move(storage), dtype, sizes,
                                               contiguous_strides(sizes), 0));
}

// Gathers the rows order[first, first + count) of `source` into a new (count, ...) tensor.
Tensor gather(const RowSource& source, const std::vector<std::int64_t>& order, bool in_order,
              std::int64_t first, std::int64_t count, bool pinned) {
  std::vector<std::int64_t> sizes{count};
  sizes.insert(sizes.end(), source.row_sizes.begin(), source.row_sizes.end());
  Tensor batch = new_host_tensor(sizes, source.dtype, pinned);
  auto* out = static_cast<std::byte*>(batch.data_ptr());
  if (in_order) {  // rows first .. first + count - 1: one block
    std::memcpy(out, source.data + static_cast<std::size_t>(first) * source.row_bytes,
                static_cast<std::size_t>(count) * source.row_bytes);
    return batch;
  }
  for (std::int64_t k = 0; k < count; ++k) {
    const auto row = static_cast<std::size_t>(order[static_cast<std::size_t>(first + k)]);
    std::memcpy(out + static_cast<std::size_t>(k) * source.row_bytes,
                source.data + row * source.row_bytes, source.row_bytes);
  }
  return batch;
}

// What one epoch's worker needs: plain values only (no tensor handles of the consumer's).
struct WorkerPlan {
  RowSource inputs;
  RowSource targets;
  std::vector<std::int64_t> order;  // empty when not shuffled
  std::int64_t sample_count = 0;
  std::int64_t batch_size = 1;
  std::int64_t epoch = 0;
  std::int64_t first_batch = 0;
  std::int64_t end_batch = 0;
  std::size_t prefetch = 2;
  bool pinned = false;
  Stream stream;
  std::function<void(Batch&)> transform;
};

// The body of one epoch's worker thread: assembles batches first_batch .. end_batch - 1 into
// the queue, waiting for room; stops early when asked, and stores any exception for next().
void run_worker(detail::LoaderEpoch* state, WorkerPlan plan) {
  try {
    const StreamGuard stream_guard(plan.stream);  // allocations on the loader's own stream
    for (std::int64_t index = plan.first_batch; index < plan.end_batch; ++index) {
      {
        std::unique_lock<std::mutex> lock(state->mutex);
        state->room.wait(lock, [&] { return state->stop || state->queue.size() < plan.prefetch; });
        if (state->stop) return;
      }
      const std::int64_t first = index * plan.batch_size;
      const std::int64_t count = std::min(plan.batch_size, plan.sample_count - first);
      const bool in_order = plan.order.empty();
      Batch batch;
      batch.inputs = gather(plan.inputs, plan.order, in_order, first, count, plan.pinned);
      batch.targets = gather(plan.targets, plan.order, in_order, first, count, plan.pinned);
      batch.epoch = plan.epoch;
      batch.index = index;
      if (plan.transform) plan.transform(batch);
      {
        std::lock_guard<std::mutex> lock(state->mutex);
        if (state->stop) return;
        state->queue.push_back(std::move(batch));
      }
      state->ready.notify_one();
    }
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      state->error = std::current_exception();
    }
    state->ready.notify_one();
  }
}

}  // namespace

DataLoader::DataLoader(Tensor inputs, Tensor targets, LoaderOptions options)
    : options_(std::move(options)) {
  GROVE_CHECK(options_.batch_size >= 1, "DataLoader: expected batch_size >= 1, but got ",
              options_.batch_size);
  GROVE_CHECK(options_.prefetch >= 1,
              "DataLoader: expected prefetch >= 1 (batches assembled ahead), but got ",
              options_.prefetch);
  GROVE_CHECK(inputs.defined() && targets.defined(),
              "DataLoader: expected defined inputs and targets tensors");
  GROVE_CHECK(inputs.dim() >= 1 && targets.dim() >= 1,
              "DataLoader: expected inputs and targets with a first dimension of samples, but got ",
              inputs.dim(), "-d inputs and ", targets.dim(), "-d targets");
  GROVE_CHECK(inputs.device().is_cpu() && targets.device().is_cpu(),
              "DataLoader: expected the dataset on the CPU, but inputs are on ", inputs.device(),
              " and targets on ", targets.device(),
              "; keep datasets in host memory (LoaderOptions::device says where batches go)");
  GROVE_CHECK(inputs.size(0) == targets.size(0),
              "DataLoader: expected as many targets as inputs, but got ", inputs.size(0),
              " inputs and ", targets.size(0), " targets");
  GROVE_CHECK(options_.device.is_cpu() || cuda_is_available(), "DataLoader: batches are to go to ",
              options_.device, ", but no CUDA device is available; use device cpu");
  // detach: the loader's copies never carry autograd history.
  inputs_ = inputs.detach().contiguous();
  targets_ = targets.detach().contiguous();
  sample_count_ = inputs_.size(0);
  worker_stream_ = new_stream(kCPU, "data loaders");
}

DataLoader::~DataLoader() {
  stop_worker();
  release_stream(worker_stream_);
}

std::int64_t DataLoader::batches_per_epoch() const {
  const std::int64_t full = sample_count_ / options_.batch_size;
  return options_.drop_last || sample_count_ % options_.batch_size == 0 ? full : full + 1;
}

void DataLoader::stop_worker() {
  if (!epoch_) return;
  {
    std::lock_guard<std::mutex> lock(epoch_->mutex);
    epoch_->stop = true;
  }
  epoch_->room.notify_all();
  if (epoch_->worker.joinable()) epoch_->worker.join();
  epoch_.reset();
}

void DataLoader::start_epoch(std::int64_t epoch, std::int64_t first_batch) {
  GROVE_CHECK(epoch >= 0, "DataLoader::start_epoch: expected an epoch >= 0, but got ", epoch);
  const std::int64_t batches = batches_per_epoch();
  GROVE_CHECK(first_batch >= 0 && first_batch <= batches,
              "DataLoader::start_epoch: expected first_batch in [0, ", batches,
              "] (batches per epoch), but got ", first_batch);
  stop_worker();

  WorkerPlan plan;
  plan.inputs = rows_of(inputs_);
  plan.targets = rows_of(targets_);
  if (options_.shuffle) plan.order = epoch_permutation(sample_count_, options_.seed, epoch);
  plan.sample_count = sample_count_;
  plan.batch_size = options_.batch_size;
  plan.epoch = epoch;
  plan.first_batch = first_batch;
  plan.end_batch = batches;
  plan.prefetch = static_cast<std::size_t>(options_.prefetch);
  plan.pinned = options_.device.is_cuda();
  plan.stream = worker_stream_;
  plan.transform = options_.transform;

  auto state = std::make_shared<detail::LoaderEpoch>();
  state->worker = std::thread(run_worker, state.get(), std::move(plan));
  epoch_ = std::move(state);
  next_index_ = first_batch;
}

std::optional<Batch> DataLoader::next() {
  GROVE_CHECK(epoch_ != nullptr,
              "DataLoader::next: no epoch is running; call start_epoch(epoch) before next()");
  Batch batch;
  {
    std::unique_lock<std::mutex> lock(epoch_->mutex);
    if (next_index_ == batches_per_epoch() && !epoch_->error) return std::nullopt;
    epoch_->ready.wait(lock, [&] { return !epoch_->queue.empty() || epoch_->error; });
    if (epoch_->queue.empty()) std::rethrow_exception(epoch_->error);
    batch = std::move(epoch_->queue.front());
    epoch_->queue.pop_front();
  }
  epoch_->room.notify_one();
  ++next_index_;
  if (!options_.device.is_cpu()) {
    // Queued on the current stream; the pinned source stays reserved until the copy ran.
    batch.inputs = batch.inputs.to(options_.device, /*non_blocking=*/true);
    batch.targets = batch.targets.to(options_.device, /*non_blocking=*/true);
  }
  return batch;
}

}  // namespace grove::data
