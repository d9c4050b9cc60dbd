// The training loop: Trainer's construction (model, optimizer, schedule, data) and its run.
// Evaluation lives in models/train/evaluate.cpp.
#include "models/train/trainer.h"

#include <algorithm>
#include <chrono>

#include "autograd/grad_mode.h"
#include "core/error.h"
#include "dist/process_group.h"
#include "models/optim/adamw.h"
#include "models/optim/sgd.h"
#include "ops/collective.h"

namespace grove::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::unique_ptr<optim::Optimizer> make_optimizer(const TrainConfig& config,
                                                 std::vector<Tensor> params) {
  if (config.optimizer == "sgd") {
    optim::SgdOptions options;
    options.lr = config.lr;
    options.momentum = config.momentum;
    options.weight_decay = config.weight_decay;
    return std::make_unique<optim::SGD>(std::move(params), options);
  }
  optim::AdamwOptions options;
  options.lr = config.lr;
  options.weight_decay = config.weight_decay;
  return std::make_unique<optim::AdamW>(std::move(params), options);
}

std::unique_ptr<optim::LrSchedule> make_schedule(const TrainConfig& config,
                                                 std::int64_t total_steps) {
  if (config.schedule == "cosine") {
    // A warm-up longer than the run (the gpt's default 100 steps in a short run) is cut to it.
    return std::make_unique<optim::WarmupCosineLr>(
        config.lr, std::min(config.warmup_steps, total_steps), total_steps);
  }
  if (config.schedule == "step") {
    return std::make_unique<optim::StepLr>(config.lr, config.step_size, config.gamma);
  }
  return std::make_unique<optim::ConstantLr>(config.lr);
}

}  // namespace

double TrainResult::median_step_ms() const {
  if (step_ms.empty()) return 0.0;
  std::vector<double> sorted = step_ms;
  const std::size_t middle = sorted.size() / 2;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(middle),
                   sorted.end());
  return sorted[middle];
}

Trainer::Trainer(TrainConfig config) : config_(std::move(config)) {
  config_.validate();
  spec_ = &zoo::model_spec(config_.model);
  const zoo::TaskSpec& task = spec_->task_spec();
  if (dist::is_initialized() && dist::default_process_group().world_size() > 1) {
    const dist::ProcessGroup& group = dist::default_process_group();
    group_ = group.id();
    rank_ = group.rank();
    world_size_ = group.world_size();
  }
  if (config_.read_every == 0) config_.read_every = config_.device.is_cpu() ? 1 : 50;

  // Data first: a missing dataset is the likeliest error, and it should come before any work.
  if (task.data == zoo::DataKind::TextCorpus) {
    std::vector<std::filesystem::path> paths;
    if (config_.data.empty()) {
      paths = data::default_corpus_paths();
    } else {
      paths.emplace_back(config_.data);
    }
    // One llm.c token file (its ids), or text files (their bytes).
    corpus_ = paths.size() == 1 && data::is_token_file(paths[0]) ? data::load_token_file(paths[0])
                                                                 : data::load_text_corpus(paths);
    window_generator_.manual_seed(config_.seed);
  } else {
    GROVE_INTERNAL_ASSERT(task.data == zoo::DataKind::FashionMnist);
    const std::filesystem::path dir = config_.data.empty() ? data::default_fashion_mnist_dir()
                                                           : std::filesystem::path(config_.data);
    train_set_ = data::load_fashion_mnist(dir, data::Split::Train,
                                          config_.train_limit > 0 ? config_.train_limit : -1);
    test_set_ = data::load_fashion_mnist(dir, data::Split::Test,
                                         config_.test_limit > 0 ? config_.test_limit : -1);
    const std::int64_t global_batch = config_.batch_size * world_size_;
    GROVE_CHECK(global_batch <= train_set_.size(), "batch size ", config_.batch_size,
                world_size_ > 1 ? " times " + std::to_string(world_size_) + " ranks" : "",
                " is larger than the training set (", train_set_.size(),
                " samples); use a batch size of at most ", train_set_.size() / world_size_);
    data::LoaderOptions options;
    options.batch_size = global_batch;
    if (world_size_ > 1) {
      // Each rank copies only its rows of the global batch to the device (a view of the
      // assembled batch); see the data-parallel paragraph in trainer.h.
      options.drop_last = true;
      options.transform = [this](data::Batch& batch) {
        batch.inputs = shard(batch.inputs);
        batch.targets = shard(batch.targets);
      };
    }
    options.seed = config_.seed;
    options.device = config_.device;
    loader_ = std::make_unique<data::DataLoader>(train_set_.images, train_set_.labels, options);
  }

  // The model is initialised on the CPU from the seed (the same weights on every device), then
  // moved; the optimizer takes the moved parameters.
  manual_seed(config_.seed);
  model_ = zoo::make_model(*spec_, config_.model_options);
  if (spec_->vocab_size != nullptr) {
    const std::int64_t vocab = spec_->vocab_size(*model_);
    GROVE_CHECK(corpus_.vocab_needed <= vocab, config_.model, ": ", corpus_.paths.front().string(),
                " holds token ids up to ", corpus_.vocab_needed - 1,
                ", but the model's vocabulary ", "has ", vocab,
                " tokens; give a preset whose vocabulary holds them (--preset gpt2s: ", "50304)");
  }
  model_->to(config_.device);
  model_->train();
  if (world_size_ > 1) {
    nn::DdpOptions ddp_options;
    ddp_options.group = group_;
    ddp_ = std::make_unique<nn::DistributedDataParallel>(model_, ddp_options);
  }
  optimizer_ = make_optimizer(config_, model_->parameters());
  schedule_ = make_schedule(config_, total_steps());
  step_ = std::make_unique<TrainStep>(*model_, *optimizer_, config_, ddp_.get());
  // No more slots than steps (a huge --read-every would only take device memory).
  loss_log_ = std::make_unique<LossLog>(
      config_.device, std::min(config_.read_every, std::max<std::int64_t>(total_steps(), 1)));
  if (task.kind == zoo::TaskKind::LanguageModel) prepare_validation_windows();
}

Trainer::~Trainer() = default;

std::int64_t Trainer::batches_per_epoch() const {
  return loader_ ? loader_->batches_per_epoch() : config_.steps;
}

std::int64_t Trainer::total_steps() const {
  return config_.total_steps(batches_per_epoch());
}

TrainResult Trainer::run(const Callbacks& callbacks) {
  const Clock::time_point start = Clock::now();
  TrainResult result;
  if (spec_->task_spec().trains_in_epochs) {
    train_classifier(callbacks, result);
  } else {
    train_language_model(callbacks, result);
  }
  flush_reports(result, callbacks);
  result.steps = steps_done_;
  result.seconds = seconds_since(start);
  result.samples_per_s = step_seconds_ > 0 ? samples_done_ / step_seconds_ : 0.0;
  return result;
}

RunPosition Trainer::position() const {
  const Generator& device_generator = default_generator(config_.device);
  return {.steps_done = steps_done_,
          .epoch = epoch_,
          .next_batch = next_batch_,
          .window_offset = window_generator_.offset(),
          .rng_seed = device_generator.seed(),
          .rng_offset = device_generator.offset()};
}

void Trainer::check_position(const RunPosition& position) const {
  GROVE_CHECK(position.steps_done >= 0 && position.epoch >= 0 && position.next_batch >= 0 &&
                  position.next_batch <= batches_per_epoch(),
              "resume: a position out of range (step ", position.steps_done, ", epoch ",
              position.epoch, ", batch ", position.next_batch, " of ", batches_per_epoch(),
              "); the checkpoint does not belong to this data or batch size");
}

void Trainer::resume_at(const RunPosition& position) {
  check_position(position);
  steps_done_ = position.steps_done;
  epoch_ = position.epoch;
  next_batch_ = position.next_batch;
  window_generator_.set_offset(position.window_offset);
  Generator& device_generator = default_generator(config_.device);
  device_generator.manual_seed(position.rng_seed);
  device_generator.set_offset(position.rng_offset);
}

// The run stops between steps when asked (should_stop) or when it has taken its steps; an
// evaluation due at that step (an epoch's end, the run's end) runs before it returns, so a
// resumed run never owes one. An epoch cut short by the step limit stays the current epoch in
// the position, so a longer resumed run finishes it in the same order.
void Trainer::train_classifier(const Callbacks& callbacks, TrainResult& result) {
  const std::int64_t total = total_steps();
  while (epoch_ < config_.epochs && steps_done_ < total) {
    loader_->start_epoch(epoch_, next_batch_);
    bool stop = false;
    while (!stop && steps_done_ < total && next_batch_ < batches_per_epoch()) {
      std::optional<data::Batch> batch = loader_->next();
      GROVE_INTERNAL_ASSERT(batch.has_value() && batch->index == next_batch_);
      take_step(batch->inputs, batch->targets, epoch_, batch->index, result, callbacks);
      ++next_batch_;
      stop = stop_requested(callbacks);
    }
    flush_reports(result, callbacks);
    const bool epoch_done = next_batch_ == batches_per_epoch();
    if (epoch_done || steps_done_ == total) {
      EvalReport report = evaluate();
      report.epoch = epoch_;
      record_eval(std::move(report), result, callbacks);
    }
    if (!epoch_done) return;  // stopped, or at the step limit: the epoch goes on when resumed
    ++epoch_;
    next_batch_ = 0;
    if (stop) return;
  }
}

void Trainer::train_language_model(const Callbacks& callbacks, TrainResult& result) {
  const std::int64_t block = context_length();
  while (steps_done_ < config_.steps) {
    // The global batch's windows, drawn as one process would; this rank keeps its rows.
    data::Windows windows = data::sample_windows(corpus_.train, config_.batch_size * world_size_,
                                                 block, window_generator_);
    windows.inputs = shard(windows.inputs);
    windows.targets = shard(windows.targets);
    if (!config_.device.is_cpu()) {
      // Pinned host memory and non-blocking copies: the host goes on queueing work.
      windows.inputs = windows.inputs.pin_memory().to(config_.device, /*non_blocking=*/true);
      windows.targets = windows.targets.pin_memory().to(config_.device, /*non_blocking=*/true);
    }
    take_step(windows.inputs, windows.targets, 0, steps_done_, result, callbacks);
    const bool stop = stop_requested(callbacks);
    const bool evaluation_due =
        steps_done_ % config_.eval_every == 0 || steps_done_ == config_.steps;
    if (stop || evaluation_due) flush_reports(result, callbacks);
    if (evaluation_due) record_eval(evaluate(), result, callbacks);
    if (stop) return;
  }
}

void Trainer::take_step(const Tensor& inputs, const Tensor& targets, std::int64_t epoch,
                        std::int64_t batch, TrainResult& result, const Callbacks& callbacks) {
  if (pending_.empty()) window_start_ = Clock::now();
  schedule_->apply(*optimizer_, steps_done_);  // this step's rate, written on the device
  StepReport report;
  report.lr = optimizer_->lr();
  const Tensor loss = (*step_)(inputs, targets);
  const bool full = loss_log_->record(loss);

  ++steps_done_;
  samples_done_ += inputs.size(0) * world_size_;  // the job's samples
  report.step = steps_done_;
  report.total_steps = total_steps();
  report.epoch = epoch;
  report.batch = batch;
  report.batches_per_epoch = batches_per_epoch();
  report.samples = inputs.size(0) * world_size_;
  pending_.push_back(report);
  const bool save_due =
      callbacks.save && callbacks.save_every > 0 && steps_done_ % callbacks.save_every == 0;
  if (full || save_due) flush_reports(result, callbacks);
  if (save_due) callbacks.save();  // every step before it is reported (metrics), none after
}

void Trainer::flush_reports(TrainResult& result, const Callbacks& callbacks) {
  if (pending_.empty()) return;
  // Waits for the window's steps; the global batch's losses in a data-parallel job.
  const std::vector<double> losses = loss_log_->read(group_);
  GROVE_INTERNAL_ASSERT(losses.size() == pending_.size());
  const double window_seconds = seconds_since(window_start_);
  step_seconds_ += window_seconds;
  const double step_ms = window_seconds * 1e3 / static_cast<double>(pending_.size());
  for (std::size_t i = 0; i < losses.size(); ++i) {
    pending_[i].loss = losses[i];
    pending_[i].step_ms = step_ms;
    result.losses.push_back(losses[i]);
    result.step_ms.push_back(pending_[i].step_ms);
    if (callbacks.on_step) callbacks.on_step(pending_[i]);
  }
  pending_.clear();
}

bool Trainer::stop_requested(const Callbacks& callbacks) {
  const bool local = callbacks.should_stop && callbacks.should_stop();
  if (world_size_ == 1) return local;
  // Every rank must stop after the same step, or the others would wait in their collectives for
  // it: ranks agree (a max on the training device's engine; reading it waits for the device, as
  // the losses' read does at these steps) at steps every rank recognises.
  if (steps_done_ % config_.read_every != 0) return false;
  autograd::NoGradGuard no_grad;
  const Tensor flag =
      full({1}, Scalar(local ? 1 : 0), TensorOptions(DType::Int32).device(config_.device));
  ops::all_reduce_(flag, ops::ReduceOp::kMax, group_);
  return flag.to_vector<std::int32_t>()[0] != 0;
}

Tensor Trainer::shard(const Tensor& global) const {
  if (world_size_ == 1) return global;
  return global.narrow(0, rank_ * config_.batch_size, config_.batch_size);
}

void Trainer::record_eval(EvalReport report, TrainResult& result, const Callbacks& callbacks) {
  report.step = steps_done_;
  if (callbacks.on_eval) callbacks.on_eval(report);
  result.evals.push_back(std::move(report));
}

}  // namespace grove::train
