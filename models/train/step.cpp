// TrainStep and LossLog (see models/train/step.h for what a step is and why losses are read in
// windows). Not a training loop: models/train/trainer.cpp drives the steps.
#include "models/train/step.h"

#include "autograd/autograd.h"
#include "core/error.h"
#include "models/optim/clip.h"
#include "ops/autocast.h"
#include "ops/collective.h"
#include "ops/softmax.h"

namespace grove::train {

Tensor batch_loss(nn::Module& model, const Tensor& inputs, const Tensor& targets) {
  const Tensor logits = model(inputs);
  if (logits.dim() == 3) {
    // language models: logits (B, T, V), targets (B, T) -> (B*T, V) against (B*T)
    const std::int64_t vocab = logits.size(2);
    return ops::cross_entropy(logits.reshape({-1, vocab}), targets.reshape({-1}));
  }
  return ops::cross_entropy(logits, targets);  // logits (B, classes), targets (B)
}

TrainStep::TrainStep(nn::Module& model, optim::Optimizer& optimizer, const TrainConfig& config,
                     nn::DistributedDataParallel* ddp)
    : model_(model),
      optimizer_(optimizer),
      ddp_(ddp),
      clip_grad_norm_(config.clip_grad_norm),
      mode_(config.mode),
      precision_(config.precision) {
  if (precision_ == Precision::Float16) {
    scaler_ = std::make_unique<optim::GradScaler>(optimizer.device());
  }
  if (mode_ == Mode::Graphed) {
    graphs::CompileOptions options;
    options.name = config.model + " step";
    options.explain = config.explain;
    compiled_ = graphs::compile(
        [this](const graphs::TensorList& batch) { return run_eagerly(batch); }, options);
  }
}

graphs::TensorList TrainStep::run_eagerly(const graphs::TensorList& batch) {
  optimizer_.zero_grad(/*set_to_none=*/true);
  Tensor loss;
  {
    const AutocastGuard autocast(autocast_dtype(precision_));  // off for fp32
    loss = batch_loss(model_, batch[0], batch[1]);
  }
  // fp16: backward from the scaled loss, unscale before clipping (it needs the true gradients),
  // and an update the device skips when a gradient overflowed.
  (scaler_ != nullptr ? scaler_->scale(loss) : loss).backward();
  if (ddp_ != nullptr) ddp_->finish_gradient_sync();  // the gradients are the ranks' mean now
  if (scaler_ != nullptr) scaler_->unscale_(optimizer_);
  if (clip_grad_norm_ > 0) optim::clip_grad_norm_(optimizer_.params(), clip_grad_norm_);
  if (scaler_ != nullptr) {
    scaler_->step(optimizer_);
    scaler_->update();
  } else {
    optimizer_.step();
  }
  return {loss.detach()};
}

Tensor TrainStep::operator()(const Tensor& inputs, const Tensor& targets) {
  if (mode_ == Mode::Graphed) return compiled_({inputs, targets})[0];
  return run_eagerly({inputs, targets})[0];
}

graphs::CompileStats TrainStep::compile_stats() const {
  return mode_ == Mode::Graphed ? compiled_.stats() : graphs::CompileStats{};
}

LossLog::LossLog(Device device, std::int64_t capacity)
    : slots_(zeros({capacity}, TensorOptions(DType::Float32).device(device))) {
  GROVE_CHECK(capacity >= 1, "LossLog: expected a capacity of at least 1, got ", capacity);
}

bool LossLog::record(const Tensor& loss) {
  GROVE_CHECK(count_ < slots_.size(0), "LossLog: full (", count_,
              " losses); read() it before recording more");
  autograd::NoGradGuard no_grad;
  slots_.select(0, count_).copy_(loss.reshape({}));
  ++count_;
  return count_ == slots_.size(0);
}

std::vector<double> LossLog::read(int group) {
  std::vector<double> losses;
  if (count_ == 0) return losses;
  if (group >= 0) {
    autograd::NoGradGuard no_grad;
    ops::all_reduce_(slots_.narrow(0, 0, count_), ops::ReduceOp::kMean, group);
  }
  const std::vector<float> values = slots_.narrow(0, 0, count_).to(kCPU).to_vector<float>();
  losses.assign(values.begin(), values.end());
  count_ = 0;
  return losses;
}

}  // namespace grove::train
