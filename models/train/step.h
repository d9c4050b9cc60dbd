// One training step of a model, eager or graphed, and the log its losses go into.
//
// A step is: forget the gradients (set to none), forward to the loss (under autocast in bf16 and
// fp16: TrainConfig::precision), backward, clip the gradients' global norm (when asked), the
// optimizer's update. In fp16 the backward runs from the loss times a GradScaler's scale, the
// gradients are unscaled before clipping, and an overflowed step is skipped on the device
// (models/optim/grad_scaler.h): still one graph in graphed mode. In graphed mode the same C++ is
// compiled once as a whole step (Note [Whole training steps] in
// graphs/compile/traced_function.h): parameters, their gradients and the optimizer's state are
// static state the graph updates in place, the batch is the call's input (copied into the
// graph's buffers), and the learning rate is a device tensor the schedule writes between steps,
// so a schedule never records again. A batch of another shape (an epoch's last, smaller batch)
// is another signature: traced and recorded once, replayed after.
//
// Losses are not read on the host each step: a read waits for the device, and on a GPU that
// would stop the host from queueing the next step while this one runs. LossLog copies each
// step's loss into a slot of a device buffer (one small copy, outside any graph) and reads the
// whole buffer when it is full or asked to (one wait per `capacity` steps).
//
// Not thread-safe; a TrainStep and its LossLog belong to the thread that trains.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "graphs/compile/compile.h"
#include "models/nn/distributed.h"
#include "models/nn/module.h"
#include "models/optim/grad_scaler.h"
#include "models/optim/optimizer.h"
#include "models/train/config.h"

namespace grove::train {

// The loss of a batch: cross entropy of the model's logits against the targets. Classifiers:
// logits (B, classes), targets (B). Language models: logits (B, T, vocab), targets (B, T), every
// position.
Tensor batch_loss(nn::Module& model, const Tensor& inputs, const Tensor& targets);

class TrainStep {
 public:
  // With `ddp` (data-parallel training; it must wrap `model`), the step averages the gradients
  // across the ranks before clipping and the update (ddp->finish_gradient_sync()).
  TrainStep(nn::Module& model, optim::Optimizer& optimizer, const TrainConfig& config,
            nn::DistributedDataParallel* ddp = nullptr);
  // Runs one step on a batch on the model's device; returns the loss (a one-element tensor on
  // the device; in graphed mode memory the next call overwrites: read or copy it before then).
  Tensor operator()(const Tensor& inputs, const Tensor& targets);
  // Graphed mode: what compile did (traces, eager calls); zeros in eager mode.
  graphs::CompileStats compile_stats() const;
  // fp16: the loss scaler (its scale, for a log or a checkpoint); null in other precisions.
  const optim::GradScaler* scaler() const { return scaler_.get(); }

 private:
  graphs::TensorList run_eagerly(const graphs::TensorList& batch);

  nn::Module& model_;
  optim::Optimizer& optimizer_;
  nn::DistributedDataParallel* ddp_ = nullptr;
  double clip_grad_norm_ = 0.0;
  Mode mode_ = Mode::Eager;
  Precision precision_ = Precision::Float32;
  std::unique_ptr<optim::GradScaler> scaler_;  // fp16 only
  graphs::CompiledFunction compiled_;
};

class LossLog {
 public:
  LossLog(Device device, std::int64_t capacity);
  // Copies `loss` (one element) into the next slot. Returns true when the log is full and
  // must be read (read()) before the next record.
  bool record(const Tensor& loss);
  // The losses recorded since the last read, in order, as doubles (waits for the device);
  // empties the log. With a process group (`group` >= 0, data-parallel training), each loss is
  // first averaged across the ranks (one all-reduce for the whole window), so every rank reads
  // the loss of the global batch; every rank must then read at the same steps.
  std::vector<double> read(int group = -1);
  std::int64_t pending() const { return count_; }

 private:
  Tensor slots_;  // (capacity) float32 on the device
  std::int64_t count_ = 0;
};

}  // namespace grove::train
