// Trainer's evaluation: test accuracy and loss of an image classifier, validation loss and a
// sample of a language model (its task, zoo::TaskKind, decides). Eager in both modes, with the
// model in eval mode and grad mode off; the sums stay on the device and are read once at the end
// (one wait per evaluation). In a data-parallel job the ranks share the work: rank r evaluates
// batches r, r + N, r + 2N, ... of the batches one process would evaluate (the same batches, so the
// same per-batch figures), the sums are added across ranks, and rank 0 alone draws a language
// model's sample (it alone prints).
#include "autograd/autograd.h"
#include "core/error.h"
#include "models/train/trainer.h"
#include "ops/autocast.h"
#include "ops/collective.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/softmax.h"

namespace grove::train {
namespace {

constexpr std::int64_t kEvalBatch = 1000;                           // test images per forward pass
constexpr std::uint64_t kValidationStream = 0x9e3779b97f4a7c15ull;  // seeds the eval windows
constexpr std::uint64_t kSampleStream = 0xbf58476d1ce4e5b9ull;      // seeds the samples

// Puts the model in eval mode for a scope and back in train mode after; the forward passes run
// in the run's precision, as its training steps do (autocast for bf16 and fp16).
class EvalModeGuard {
 public:
  EvalModeGuard(nn::Module& model, Precision precision)
      : model_(model), autocast_(autocast_dtype(precision)) {
    model_.eval();
  }
  ~EvalModeGuard() { model_.train(); }
  EvalModeGuard(const EvalModeGuard&) = delete;
  EvalModeGuard& operator=(const EvalModeGuard&) = delete;

 private:
  nn::Module& model_;
  AutocastGuard autocast_;
};

}  // namespace

// The 0-d float64 sums of this rank, added over every rank of the job, read to the host.
std::vector<double> Trainer::sum_across_ranks(std::initializer_list<Tensor> sums) const {
  std::vector<Tensor> parts;
  for (const Tensor& sum : sums) parts.push_back(sum.view({1}));
  const Tensor all = ops::cat(std::span<const Tensor>(parts), 0);
  if (world_size_ > 1) ops::all_reduce_(all, ops::ReduceOp::kSum, group_);
  return all.to(kCPU).to_vector<double>();
}

double EvalReport::metric(zoo::Metric metric) const {
  return metric == zoo::Metric::TestAccuracy ? accuracy : loss;
}

EvalReport Trainer::evaluate() {
  switch (spec_->task) {
    case zoo::TaskKind::ImageClassification:
      return evaluate_classifier();
    case zoo::TaskKind::LanguageModel:
      return evaluate_language_model();
  }
  GROVE_INTERNAL_ASSERT(false);
  return {};
}

EvalReport Trainer::evaluate_classifier() {
  autograd::NoGradGuard no_grad;
  EvalModeGuard eval_mode(*model_, config_.precision);
  const TensorOptions on_device = TensorOptions(DType::Float64).device(config_.device);
  Tensor correct = zeros({}, on_device);
  Tensor loss_sum = zeros({}, on_device);
  const std::int64_t count = test_set_.size();
  for (std::int64_t start = 0; start < count; start += kEvalBatch) {
    if ((start / kEvalBatch) % world_size_ != rank_) continue;  // another rank's batch
    const std::int64_t length = std::min(kEvalBatch, count - start);
    const Tensor images = test_set_.images.narrow(0, start, length).to(config_.device);
    const Tensor labels = test_set_.labels.narrow(0, start, length).to(config_.device);
    const Tensor logits = (*model_)(images);  // (b, 10)
    const Tensor hits = ops::eq(ops::argmax(logits, 1), labels);
    correct = ops::add(correct, ops::sum(hits.to(DType::Float64)));
    const Tensor batch_loss = ops::cross_entropy(logits, labels).to(DType::Float64);
    loss_sum = ops::add(loss_sum, ops::mul(batch_loss, static_cast<double>(length)));
  }
  const std::vector<double> sums = sum_across_ranks({correct, loss_sum});
  EvalReport report;
  report.accuracy = sums[0] / static_cast<double>(count);
  report.loss = sums[1] / static_cast<double>(count);
  return report;
}

std::pair<Tensor, Tensor> Trainer::inputs_and_logits(std::int64_t count) {
  GROVE_CHECK(count >= 1, "inputs_and_logits: expected a count of at least 1, got ", count);
  autograd::NoGradGuard no_grad;
  EvalModeGuard eval_mode(*model_, config_.precision);
  Tensor inputs;
  if (spec_->task == zoo::TaskKind::LanguageModel) {
    const Tensor& windows = eval_windows_.front().inputs;  // (B, T)
    inputs = windows.narrow(0, 0, std::min(count, windows.size(0)));
  } else {
    inputs = test_set_.images.narrow(0, 0, std::min(count, test_set_.size())).to(config_.device);
  }
  const Tensor logits = (*model_)(inputs);
  return {inputs.to(kCPU), logits.to(kCPU)};
}

std::int64_t Trainer::context_length() const {
  GROVE_INTERNAL_ASSERT(spec_->context_length != nullptr);  // a language model's spec has one
  return spec_->context_length(*model_);
}

void Trainer::prepare_validation_windows() {
  const std::int64_t block = context_length();
  GROVE_CHECK(corpus_.train.numel() > block + 1, config_.model, ": the training part of the text (",
              corpus_.train.numel(), " characters) is shorter than one window of ", block + 1,
              "; give a longer text (--data FILE)");
  GROVE_CHECK(corpus_.validation.numel() > block + 1, config_.model,
              ": the validation part of the text (", corpus_.validation.numel(),
              " characters) is shorter than one window of ", block + 1,
              "; give a longer text (--data FILE)");
  Generator generator(config_.seed ^ kValidationStream);
  for (std::int64_t i = 0; i < config_.eval_batches; ++i) {
    data::Windows windows =
        data::sample_windows(corpus_.validation, config_.batch_size, block, generator);
    windows.inputs = windows.inputs.to(config_.device);
    windows.targets = windows.targets.to(config_.device);
    eval_windows_.push_back(std::move(windows));
  }
}

EvalReport Trainer::evaluate_language_model() {
  EvalReport report;
  {
    autograd::NoGradGuard no_grad;
    EvalModeGuard eval_mode(*model_, config_.precision);
    Tensor loss_sum = zeros({}, TensorOptions(DType::Float64).device(config_.device));
    for (std::size_t i = 0; i < eval_windows_.size(); ++i) {
      if (static_cast<int>(i % static_cast<std::size_t>(world_size_)) != rank_) continue;
      const data::Windows& windows = eval_windows_[i];
      const Tensor loss = batch_loss(*model_, windows.inputs, windows.targets);
      loss_sum = ops::add(loss_sum, loss.to(DType::Float64));
    }
    report.loss = sum_across_ranks({loss_sum})[0] / static_cast<double>(eval_windows_.size());
  }
  // Text only: a token file's ids have no decoder here.
  if (config_.sample_tokens > 0 && rank_ == 0 && spec_->can_sample() && corpus_.is_text) {
    EvalModeGuard eval_mode(*model_, config_.precision);
    Generator generator(config_.seed ^ kSampleStream);
    const Tensor prompt = data::encode("\n").view({1, 1}).to(config_.device);
    const Tensor text =
        spec_->generate(*model_, prompt, config_.sample_tokens, config_.temperature, generator);
    report.sample = data::decode(text.view({-1}).narrow(0, 1, config_.sample_tokens).to(kCPU));
  }
  return report;
}

}  // namespace grove::train
