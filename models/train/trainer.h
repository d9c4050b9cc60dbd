// models::train: the training loop the `grove` program calls. A Trainer holds one run: the
// model (its registry spec's make(), built on the CPU from the seed and moved to the device), the
// optimizer and its schedule, the data, and where the run stands (step, epoch, batch), so a
// program can report progress, evaluate, and checkpoint between steps.
//
//   train::TrainConfig config = train::defaults_for("mlp");
//   config.device = cuda(0);
//   config.mode = train::Mode::Graphed;
//   train::Trainer trainer(config);
//   train::TrainResult result = trainer.run({.on_step = [](const train::StepReport& s) {...}});
//
// What a run does follows the model's task (zoo::TaskKind, from the model registry), never its
// name. Image classifiers (the mlp, say) train on Fashion-MNIST, an epoch at a time (batches in
// an order that depends on the seed and the epoch only, assembled on a background thread:
// data::DataLoader), and are evaluated on the test set after every epoch (accuracy and mean
// loss). Language models (the gpt) train on random windows of the text corpus's training part
// for `steps` steps and are evaluated every `eval_every` steps and at the end (mean loss over
// fixed validation windows, and a sample drawn with the spec's generate()).
//
// Step reports arrive in order but late: losses are read from the device every `read_every`
// steps (see LossLog in models/train/step.h), and each report carries its own step's figures.
// Evaluation runs eagerly in both modes, under no-grad with the model in eval mode.
//
// Data-parallel training: when the default process group (dist/process_group.h) has more than
// one rank, the Trainer wraps the model in DistributedDataParallel and each step trains on this
// rank's shard: the job's global batch is world_size x batch_size samples, drawn exactly as one
// process would draw a batch of that size, and rank r takes rows [r * batch_size, (r + 1) *
// batch_size) of it. So a job of N ranks follows the same data as one process with N times the
// batch, and gives its results up to float rounding. The last, partial global batch of an epoch
// is dropped (every rank needs a full shard). Reported losses are the global batch's (averaged
// across ranks when read), and a stop request (Ctrl-C) takes effect when every rank agrees on it,
// at the next step whose number is a multiple of read_every. The ranks share each evaluation
// (models/train/evaluate.cpp) and rank 0 reports it.
//
// Blocks the calling thread; not thread-safe. Errors (bad config, missing data) are
// grove::Errors thrown by the constructor, before any training.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/rng.h"
#include "graphs/explain.h"
#include "models/data/fashion_mnist.h"
#include "models/data/loader.h"
#include "models/data/text_corpus.h"
#include "models/nn/distributed.h"
#include "models/nn/module.h"
#include "models/optim/optimizer.h"
#include "models/optim/schedule.h"
#include "models/train/config.h"
#include "models/train/step.h"
#include "models/zoo/registry.h"

namespace grove::train {

struct StepReport {
  std::int64_t step = 0;  // 1-based count of steps taken in the run
  std::int64_t total_steps = 0;
  std::int64_t epoch = 0;  // 0-based; language models: always 0
  std::int64_t batch = 0;  // 0-based position in its epoch
  std::int64_t batches_per_epoch = 0;
  std::int64_t samples = 0;  // in this step's batch
  double loss = 0.0;
  double lr = 0.0;  // the rate this step used
  // Wall time per step: the time from the first step of its read window (see read_every) to
  // the losses read back from the device, over the window's steps. It includes waiting for the
  // device and for the next batch, so it is the run's real pace, not the host's queueing time.
  double step_ms = 0.0;
};

struct EvalReport {
  std::int64_t step = 0;  // steps taken when it ran
  std::int64_t epoch = 0;
  double loss = NAN;      // mean loss: test set (classifiers) or validation windows (language
                          // models)
  double accuracy = NAN;  // classifiers: fraction of test images classified right
  std::string sample;     // language models: generated text (config.sample_tokens characters)
  // A figure by its registry name: TestAccuracy is `accuracy`, TestLoss and ValLoss are `loss`.
  double metric(zoo::Metric metric) const;
};

struct TrainResult {
  std::vector<double> losses;   // one per step, in order
  std::vector<double> step_ms;  // one per step
  std::vector<EvalReport> evals;
  std::int64_t steps = 0;
  double seconds = 0.0;        // wall time of the whole run, evaluations included
  double samples_per_s = 0.0;  // training samples over the time spent in steps
  double median_step_ms() const;
};

// Where a run stands between steps: what a checkpoint must keep, besides the model's and the
// optimizer's tensors, to go on exactly as if it had not stopped (the data order is a function
// of the seed and the epoch; the schedule's rate a function of the step).
struct RunPosition {
  std::int64_t steps_done = 0;
  std::int64_t epoch = 0;           // classifiers: the epoch in progress (or next)
  std::int64_t next_batch = 0;      // classifiers: its next batch; == batches_per_epoch: only
                                    // the epoch's evaluation is left
  std::uint64_t window_offset = 0;  // language models: the window sampler's generator offset
  // The device's default generator (dropout and other random ops draw from it).
  std::uint64_t rng_seed = 0;
  std::uint64_t rng_offset = 0;
};

struct Callbacks {
  std::function<void(const StepReport&)> on_step;
  std::function<void(const EvalReport&)> on_eval;
  // Asked between steps; true stops the run after the step in progress (a Ctrl-C handler).
  std::function<bool()> should_stop;
  // Called every save_every steps, between steps, after every step so far was reported through
  // on_step (a periodic checkpoint, so the metrics file never lacks a step the checkpoint has).
  std::function<void()> save;
  std::int64_t save_every = 0;
};

class Trainer {
 public:
  explicit Trainer(TrainConfig config);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Trains until the configured length (or should_stop), evaluating as described above.
  TrainResult run(const Callbacks& callbacks = {});
  // Evaluates the model now (test set or validation windows); no callback.
  EvalReport evaluate();
  // The model's logits (eval mode, no grad) on the first `count` test images (classifiers) or
  // on the first validation windows (language models), with those inputs, both on the CPU: for
  // comparing grove's numbers with another framework's.
  std::pair<Tensor, Tensor> inputs_and_logits(std::int64_t count);

  const TrainConfig& config() const { return config_; }
  // The model's registry entry (config().model's): its task, defaults and functions.
  const zoo::ModelSpec& spec() const { return *spec_; }
  nn::Module& model() { return *model_; }
  optim::Optimizer& optimizer() { return *optimizer_; }
  std::int64_t steps_done() const { return steps_done_; }
  // Where the run stands, and going on from a position a checkpoint kept (with the model's
  // and the optimizer's state restored separately). Between runs only.
  RunPosition position() const;
  void resume_at(const RunPosition& position);
  // Throws, naming what does not fit, when `position` cannot belong to this run's data.
  void check_position(const RunPosition& position) const;
  std::int64_t batches_per_epoch() const;
  std::int64_t total_steps() const;
  graphs::CompileStats compile_stats() const { return step_->compile_stats(); }
  // Language models: the text it trains on (empty for classifiers).
  const data::TextCorpus& corpus() const { return corpus_; }
  // Data-parallel training: this process's rank and the number of ranks (0 and 1 alone).
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }

 private:
  void train_classifier(const Callbacks& callbacks, TrainResult& result);
  void train_language_model(const Callbacks& callbacks, TrainResult& result);
  // One step on a batch on the device; queues its report.
  void take_step(const Tensor& inputs, const Tensor& targets, std::int64_t epoch,
                 std::int64_t batch, TrainResult& result, const Callbacks& callbacks);
  void flush_reports(TrainResult& result, const Callbacks& callbacks);
  // Whether to stop after this step: should_stop, agreed by every rank in a data-parallel job.
  bool stop_requested(const Callbacks& callbacks);
  // This rank's rows of a global batch (all of it when training alone).
  Tensor shard(const Tensor& global) const;
  void record_eval(EvalReport report, TrainResult& result, const Callbacks& callbacks);
  // Language models: draws the validation windows every evaluation uses
  // (models/train/evaluate.cpp).
  void prepare_validation_windows();
  std::int64_t context_length() const;  // a language model's window length (its spec's)
  EvalReport evaluate_classifier();
  EvalReport evaluate_language_model();
  std::vector<double> sum_across_ranks(std::initializer_list<Tensor> sums) const;

  TrainConfig config_;
  const zoo::ModelSpec* spec_ = nullptr;  // the registry's, for config_.model
  std::shared_ptr<nn::Module> model_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::unique_ptr<optim::LrSchedule> schedule_;
  std::unique_ptr<nn::DistributedDataParallel> ddp_;  // data-parallel training only
  int group_ = -1;                                    // the process group's id, or -1
  int rank_ = 0;
  int world_size_ = 1;
  std::unique_ptr<TrainStep> step_;
  std::unique_ptr<LossLog> loss_log_;
  std::vector<StepReport> pending_;

  // Image classifiers (DataKind::FashionMnist)
  data::FashionMnist train_set_, test_set_;
  std::unique_ptr<data::DataLoader> loader_;
  // Language models (DataKind::TextCorpus)
  data::TextCorpus corpus_;
  Generator window_generator_;
  std::vector<data::Windows> eval_windows_;  // on the device

  std::int64_t steps_done_ = 0;
  std::chrono::steady_clock::time_point window_start_;  // the first pending step's start
  std::int64_t epoch_ = 0;
  std::int64_t next_batch_ = 0;
  double step_seconds_ = 0.0;
  std::int64_t samples_done_ = 0;
};

}  // namespace grove::train
