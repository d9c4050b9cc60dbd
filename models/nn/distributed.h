// DistributedDataParallel: the same model on every rank of a process group, each rank training
// on its own shard of the batch, gradients averaged across ranks while the backward still runs.
//
// What it does:
//   - at construction, broadcasts every parameter and buffer from rank 0, so all ranks start
//     equal (then every rank's optimizer makes the same updates from the same averaged
//     gradients, and the replicas stay equal);
//   - groups the parameters into buckets of about `bucket_bytes` (in reverse registration order,
//     the order in which the backward produces their gradients), each bucket with one flat
//     buffer of its own;
//   - on each parameter, a post-accumulate-grad hook: once every gradient of a bucket has been
//     accumulated, the bucket is launched: the gradients are copied into its buffer, the buffer
//     is all-reduced with the mean (ops::all_reduce_), and copied back into the gradients.
//     Buckets launch in bucket order on every rank (a bucket that is ready before an earlier one
//     waits for it), so all ranks issue the same collectives in the same order.
// All of it is ops, so a compiled whole step (graphs::compile) traces the copies and the
// all-reduces into its graph: one replay per step runs forward, backward, the reductions and
// the update. On CUDA the all-reduces run on the current stream, overlapping the backward's
// remaining kernels only as far as the stream order allows.
//
// Not a Module: the wrapped module keeps its own names (state_dict, checkpoints are unchanged),
// and is called as before. Call finish_gradient_sync() after backward and before the optimizer
// step: it checks that every bucket was reduced and names the parameters that got no gradient
// (PyTorch's find_unused_parameters is not supported: every parameter must get a gradient each
// step). No gradient accumulation across steps without a reduction (no_sync) yet.
// Thread safety: one thread runs the steps (hooks run on the backward's thread).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "models/nn/module.h"

namespace grove::nn {

struct DdpOptions {
  std::size_t bucket_bytes = std::size_t{4} << 20;  // 4 MiB
  int group = -1;                                    // the process group's id; -1: the default
};

class DistributedDataParallel {
 public:
  explicit DistributedDataParallel(std::shared_ptr<Module> module, DdpOptions options = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  Module& module() { return *module_; }
  Tensor forward(const Tensor& input) { return module_->forward(input); }
  Tensor operator()(const Tensor& input) { return forward(input); }

  // After backward, before the optimizer step: throws grove::Error naming every parameter whose
  // gradient never arrived (its bucket could not be reduced), then gets ready for the next step.
  void finish_gradient_sync();

  std::size_t num_buckets() const;
  std::size_t reductions() const { return reductions_; }  // buckets reduced so far, all steps

 private:
  struct Bucket;
  void on_gradient(std::size_t bucket, std::size_t slot);
  void launch_ready_buckets();

  std::shared_ptr<Module> module_;
  DdpOptions options_;
  std::vector<std::unique_ptr<Bucket>> buckets_;
  std::size_t next_bucket_ = 0;  // the first bucket not launched in this step
  std::size_t reductions_ = 0;
  std::shared_ptr<bool> alive_;  // hooks outlive this object; they check it
};

}  // namespace grove::nn
