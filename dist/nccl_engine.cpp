// The CUDA engine: collectives between CUDA tensors over NCCL, enqueued on grove's current CUDA
// stream, so they order with the kernels around them and a CUDA graph captures them (NCCL
// collectives on a capturing stream are captured). Built only with the CUDA backend and NCCL
// found by CMake (GROVE_HAS_NCCL); without it make_nccl_engine refuses and says why.
//
// Note [NCCL never hangs]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A blocking NCCL call waits for its peers forever, and a kernel of a collective whose peer died
// spins on the GPU forever. grove's communicator is non-blocking (config.blocking = 0): every
// call returns at once and is polled with ncclCommGetAsyncError until it completes or the
// group's timeout passes, then the communicator is aborted and the call throws. A watchdog
// thread looks at the rendezvous store once a second while the communicator lives; when the
// store says a rank exited without finishing (Note [Who went away] in dist/tcp_store.h) it aborts
// the communicator, which ends the spinning kernels, and the next call throws an error that names
// that rank.
//
// The price, measured on two H200s: NCCL finishes a non-blocking call's launch asynchronously
// and the caller polls, which costs an eager call 30-60 us of host time (a 4 MiB all-reduce 65 us
// back to back, 35.6 us with a blocking communicator; 256 KiB 70 against 10 us). A collective
// captured in a graph is replayed without a launch and pays nothing, so graphed data-parallel
// steps keep the safety for free. A blocking communicator with a watchdog over CUDA events, as
// PyTorch's, would be cheaper eagerly but a host call stuck while connecting to a dead peer could
// then not be ended.
#include "dist/process_group.h"

#if defined(GROVE_HAS_NCCL)

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_device.h"
#include "core/error.h"

namespace grove::dist {
namespace {

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return ncclFloat32;
    case DType::Float64: return ncclFloat64;
    case DType::Int64: return ncclInt64;
    case DType::Int32: return ncclInt32;
    case DType::Bool: return ncclUint8;  // one byte; max is "any", min "all", sum is refused
    case DType::BFloat16: return ncclBfloat16;
    case DType::Float16: return ncclFloat16;
  }
  return ncclUint8;
}

ncclRedOp_t nccl_op(ops::ReduceOp op) {
  switch (op) {
    case ops::ReduceOp::kSum: return ncclSum;
    case ops::ReduceOp::kMean: return ncclAvg;
    case ops::ReduceOp::kMax: return ncclMax;
    case ops::ReduceOp::kMin: return ncclMin;
  }
  return ncclSum;
}

class NcclEngine final : public ops::CollectiveEngine {
 public:
  NcclEngine(TcpStore& store, const ProcessGroupOptions& options)
      : store_(store), rank_(options.rank), world_size_(options.world_size),
        device_(options.local_rank), timeout_(options.timeout) {
    int devices = 0;
    GROVE_CUDA_CHECK(cudaGetDeviceCount(&devices));
    GROVE_CHECK(device_ < devices, "rank ", rank_, " has local rank ", device_,
                " but this host has ", devices,
                " GPU(s); start at most one process per GPU (grove train --nproc)");
    GROVE_CUDA_CHECK(cudaSetDevice(device_));
    ncclUniqueId id;
    if (rank_ == 0) {
      check(ncclGetUniqueId(&id), "ncclGetUniqueId");
      store_.set("nccl/unique_id", std::vector<char>(id.internal, id.internal + sizeof(id)));
    } else {
      const std::vector<char> bytes = store_.get("nccl/unique_id");
      GROVE_INTERNAL_ASSERT(bytes.size() == sizeof(id), "NCCL unique id of ", bytes.size(),
                            " bytes");
      std::memcpy(id.internal, bytes.data(), sizeof(id));
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // Note [NCCL never hangs]
    const ncclResult_t started = ncclCommInitRankConfig(&comm_, world_size_, id, rank_, &config);
    GROVE_CHECK(started == ncclSuccess || started == ncclInProgress, "ncclCommInitRankConfig on rank ",
                rank_, " failed: ", ncclGetErrorString(started));
    wait_for_comm("creating the NCCL communicator");
    watchdog_ = std::thread([this] { watch(); });
  }

  ~NcclEngine() override {
    {
      std::lock_guard<std::mutex> lock(watch_mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    watchdog_.join();
    if (comm_ == nullptr || aborted_) return;
    // Finalize flushes outstanding work with the peers (non-blocking: polled up to the timeout).
    ncclCommFinalize(comm_);
    ncclResult_t state = ncclInProgress;
    const auto deadline = Clock::now() + timeout_;
    while (ncclCommGetAsyncError(comm_, &state) == ncclSuccess && state == ncclInProgress &&
           Clock::now() < deadline) {
      std::this_thread::yield();
    }
    if (state == ncclSuccess) {
      ncclCommDestroy(comm_);
    } else {
      ncclCommAbort(comm_);
    }
  }

  void all_reduce(void* data, std::int64_t count, DType dtype, ops::ReduceOp op,
                  Stream stream) override {
    GROVE_CHECK(dtype != DType::Bool || op == ops::ReduceOp::kMax || op == ops::ReduceOp::kMin,
                "all_reduce_ of bool CUDA tensors supports max (any) and min (all), not ",
                ops::reduce_op_name(op), "; convert to int32 first");
    std::lock_guard<std::mutex> guard(comm_mutex_);
    before_call("all_reduce_");
    check(ncclAllReduce(data, data, static_cast<std::size_t>(count), nccl_type(dtype),
                        nccl_op(op), comm_, cuda_backend::cuda_stream(stream)),
          "all_reduce_");
    wait_for_comm("all_reduce_");
  }

  void broadcast(void* data, std::int64_t count, DType dtype, int root, Stream stream) override {
    std::lock_guard<std::mutex> guard(comm_mutex_);
    before_call("broadcast_");
    check(ncclBroadcast(data, data, static_cast<std::size_t>(count), nccl_type(dtype), root,
                        comm_, cuda_backend::cuda_stream(stream)),
          "broadcast_");
    wait_for_comm("broadcast_");
  }

  void all_gather(const void* input, void* output, std::int64_t count, DType dtype,
                  Stream stream) override {
    std::lock_guard<std::mutex> guard(comm_mutex_);
    before_call("all_gather");
    check(ncclAllGather(input, output, static_cast<std::size_t>(count), nccl_type(dtype), comm_,
                        cuda_backend::cuda_stream(stream)),
          "all_gather");
    wait_for_comm("all_gather");
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  std::string name() const override { return "nccl"; }

 private:
  void before_call(const char* what) {
    if (aborted_) fail(what, "the communicator was aborted earlier");
  }

  void check(ncclResult_t result, const char* what) {
    if (result != ncclSuccess && result != ncclInProgress) fail(what, ncclGetErrorString(result));
  }

  // Polls the communicator until its last call completed; aborts it past the timeout.
  void wait_for_comm(const char* what) {
    const auto deadline = Clock::now() + timeout_;
    for (;;) {
      ncclResult_t state = ncclSuccess;
      const ncclResult_t asked = ncclCommGetAsyncError(comm_, &state);
      if (asked != ncclSuccess) fail(what, ncclGetErrorString(asked));
      if (state == ncclSuccess) return;
      if (lost_) {  // the watchdog saw a rank go; it waits for comm_mutex_, which we hold
        abort_locked();
        fail(what, "a rank exited while this call waited for it");
      }
      if (state != ncclInProgress) fail(what, ncclGetErrorString(state));
      if (Clock::now() >= deadline) {
        abort_locked();
        fail(what, "the timeout passed (GROVE_TIMEOUT_S)");
      }
      std::this_thread::yield();
    }
  }

  [[noreturn]] void fail(const char* what, const std::string& reason) {
    store_.throw_collective_failure(what, "nccl", reason);
  }

  // Needs comm_mutex_. After it, the communicator is gone and every call refuses.
  void abort_locked() {
    if (!aborted_) ncclCommAbort(comm_);
    aborted_ = true;
  }

  // Note [NCCL never hangs]: aborts the communicator once the store says a rank is lost.
  void watch() {
    std::unique_lock<std::mutex> lock(watch_mutex_);
    while (!stopping_) {
      wake_.wait_for(lock, std::chrono::seconds(1));
      if (stopping_) break;
      if (!store_.gone_ranks().lost.empty()) {
        lost_ = true;  // a call polling in wait_for_comm aborts at once
        std::lock_guard<std::mutex> guard(comm_mutex_);
        abort_locked();  // ends kernels still spinning for the lost rank
        break;
      }
    }
  }

  TcpStore& store_;
  int rank_;
  int world_size_;
  int device_;
  std::chrono::milliseconds timeout_;
  ncclComm_t comm_ = nullptr;
  std::mutex comm_mutex_;  // held by every use of comm_ after construction
  bool aborted_ = false;   // guarded by comm_mutex_
  std::atomic<bool> lost_{false};
  std::mutex watch_mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by watch_mutex_
  std::thread watchdog_;
};

}  // namespace

bool has_nccl() { return true; }

std::unique_ptr<ops::CollectiveEngine> make_nccl_engine(TcpStore& store,
                                                        const ProcessGroupOptions& options) {
  return std::make_unique<NcclEngine>(store, options);
}

}  // namespace grove::dist

#else  // no NCCL in this build

#include "core/error.h"

namespace grove::dist {

bool has_nccl() { return false; }

std::unique_ptr<ops::CollectiveEngine> make_nccl_engine(TcpStore&, const ProcessGroupOptions&) {
  GROVE_CHECK(false, "this build of grove has no NCCL, the engine of collectives between CUDA "
                     "tensors: build with the CUDA backend and NCCL installed (CMake looks in "
                     "the system and in Python's nvidia-nccl package; set NCCL_ROOT otherwise)");
  return nullptr;
}

}  // namespace grove::dist

#endif
