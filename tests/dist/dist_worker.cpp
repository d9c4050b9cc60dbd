// The program each rank of the multi-process tests runs (tests/dist/dist_test.cpp starts it
// through dist::launch_local, which sets GROVE_RANK, GROVE_WORLD_SIZE, ...). One scenario per
// run, chosen by the first argument; the exit status says how it went:
//   dist_worker collectives [cuda]     every collective, every dtype, checked against the
//                                      values each rank can work out; 0 when all match. With
//                                      `cuda`: on cuda(local rank) through NCCL (bool sums are
//                                      skipped there: NCCL refuses them)
//   dist_worker die DIR                the last rank kills itself (SIGKILL) after two
//                                      all-reduces; the others must get a grove::Error: they
//                                      write its message to DIR/rank<r>.txt and exit 3
//   dist_worker ddp DIR MODE STEPS [cuda]
//                                      trains the reference MLP for STEPS steps on a fixed
//                                      global batch of 16 synthetic images, each rank on its
//                                      shard, with DistributedDataParallel; MODE eager or
//                                      graphed (the whole step compiled); rank 0 writes the
//                                      final parameters to DIR/params_w<world>_<mode>.bin.
//                                      With `cuda`: on cuda(local rank), reduced through NCCL
// Anything unexpected prints a line to standard error and exits 1.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "core/error.h"
#include "dist/process_group.h"
#include "models/nn/distributed.h"
#include "models/optim/sgd.h"
#include "models/train/step.h"
#include "models/zoo/mlp.h"
#include "ops/collective.h"
#include "ops/random.h"

namespace {

using namespace grove;

int failures = 0;

template <typename T>
void expect_all(const Tensor& x, T expected, const std::string& what) {
  for (T value : x.to(kCPU).to_vector<T>()) {
    if (value != expected) {
      std::cerr << "rank " << dist::default_process_group().rank() << ": " << what
                << ": expected every element " << +expected << ", found " << +value << "\n";
      ++failures;
      return;
    }
  }
}

// Rank r holds r + 1 everywhere (bool: rank 0 holds true, the others false).
template <typename T>
void check_dtype(DType dtype, Device device) {
  const dist::ProcessGroup& group = dist::default_process_group();
  const int rank = group.rank();
  const int world = group.world_size();
  const std::string name(dtype_name(dtype));
  auto filled = [&](IntArrayRef sizes) {
    if constexpr (std::is_same_v<T, bool>) return full(sizes, Scalar(rank == 0), TensorOptions(dtype).device(device));
    else return full(sizes, Scalar(static_cast<double>(rank + 1)), TensorOptions(dtype).device(device));
  };
  if constexpr (std::is_same_v<T, bool>) {
    if (device.is_cpu()) {
      expect_all(ops::all_reduce_(filled({5, 3}), ops::ReduceOp::kSum), true,
                 name + " sum (any)");
    }
    expect_all(ops::all_reduce_(filled({5, 3}), ops::ReduceOp::kMax), true, name + " max");
    expect_all(ops::all_reduce_(filled({5, 3}), ops::ReduceOp::kMin), world == 1,
               name + " min (all)");
  } else {
    expect_all(ops::all_reduce_(filled({5, 3}), ops::ReduceOp::kSum),
               static_cast<T>(world * (world + 1) / 2), name + " sum");
    expect_all(ops::all_reduce_(filled({7}), ops::ReduceOp::kMax), static_cast<T>(world),
               name + " max");
    expect_all(ops::all_reduce_(filled({2, 2, 2}), ops::ReduceOp::kMin), static_cast<T>(1),
               name + " min");
    if constexpr (std::is_floating_point_v<T>) {
      expect_all(ops::all_reduce_(filled({4}), ops::ReduceOp::kMean),
                 static_cast<T>(world + 1) / 2, name + " mean");
    }
    expect_all(ops::broadcast_(filled({3, 2}), world - 1), static_cast<T>(world),
               name + " broadcast from the last rank");
    const Tensor gathered = ops::all_gather(filled({2, 3}));
    if (gathered.size(0) != 2 * world) {
      std::cerr << name << " all_gather: expected " << 2 * world << " rows, found "
                << gathered.size(0) << "\n";
      ++failures;
    }
    for (int r = 0; r < world; ++r) {
      expect_all(gathered.narrow(0, 2 * r, 2), static_cast<T>(r + 1),
                 name + " all_gather block " + std::to_string(r));
    }
  }
  // A 0-d tensor and an empty one: every rank calls with the same shapes.
  expect_all(ops::all_reduce_(filled({}), ops::ReduceOp::kMax),
             std::is_same_v<T, bool> ? static_cast<T>(true) : static_cast<T>(world),
             name + " 0-d max");
  (void)ops::all_reduce_(filled({0, 4}));
}

int collectives(Device device) {
  check_dtype<float>(DType::Float32, device);
  check_dtype<double>(DType::Float64, device);
  check_dtype<std::int64_t>(DType::Int64, device);
  check_dtype<std::int32_t>(DType::Int32, device);
  check_dtype<bool>(DType::Bool, device);
  dist::default_process_group().barrier();
  return failures == 0 ? 0 : 1;
}

int die(const std::string& dir) {
  const dist::ProcessGroup& group = dist::default_process_group();
  const Tensor x = ones({1000});
  for (int i = 0; i < 2; ++i) ops::all_reduce_(x);
  if (group.rank() == group.world_size() - 1) ::raise(SIGKILL);
  try {
    for (int i = 0; i < 100; ++i) ops::all_reduce_(x);
  } catch (const Error& error) {
    std::ofstream(dir + "/rank" + std::to_string(group.rank()) + ".txt") << error.message();
    return 3;
  }
  std::cerr << "rank " << group.rank() << ": 100 all-reduces after a rank died did not fail\n";
  return 4;
}

int ddp(const std::string& dir, const std::string& mode, int steps, Device device) {
  dist::ProcessGroup& group = dist::default_process_group();
  const std::int64_t global_batch = 16;
  const std::int64_t shard = global_batch / group.world_size();
  default_generator(kCPU).manual_seed(1);
  // The same global batch on every rank (same seed); each rank takes its rows.
  const Tensor images = ops::randn({global_batch, 784});
  const Tensor labels = ops::randint(0, 10, {global_batch});
  const Tensor inputs = images.narrow(0, group.rank() * shard, shard).contiguous().to(device);
  const Tensor targets = labels.narrow(0, group.rank() * shard, shard).contiguous().to(device);

  default_generator(kCPU).manual_seed(100 + static_cast<std::uint64_t>(group.rank()));
  auto model = std::make_shared<zoo::Mlp>();  // different initial weights on each rank...
  model->to(device);
  nn::DdpOptions ddp_options;
  ddp_options.bucket_bytes = 64 * 1024;  // several buckets for the MLP's 0.9 MB
  nn::DistributedDataParallel ddp(model, ddp_options);  // ...until rank 0's are broadcast
  optim::SGD sgd(model->parameters(), {.lr = 0.05, .momentum = 0.9});
  train::TrainConfig config;
  config.mode = mode == "graphed" ? train::Mode::Graphed : train::Mode::Eager;
  train::TrainStep step(*model, sgd, config, &ddp);
  for (int i = 0; i < steps; ++i) (void)step(inputs, targets);

  if (group.rank() == 0) {
    std::ofstream out(dir + "/params_w" + std::to_string(group.world_size()) + "_" + mode + ".bin",
                      std::ios::binary);
    for (const Tensor& p : model->parameters()) {
      const std::vector<float> values = p.detach().to(kCPU).contiguous().to_vector<float>();
      out.write(reinterpret_cast<const char*>(values.data()),
                static_cast<std::streamsize>(values.size() * sizeof(float)));
    }
  }
  std::cout << "buckets " << ddp.num_buckets() << " reductions " << ddp.reductions() << "\n";
  group.barrier();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    const bool on_cuda = (args.size() == 2 && args[0] == "collectives" && args[1] == "cuda") ||
                         (args.size() == 5 && args[0] == "ddp" && args[4] == "cuda");
    dist::ProcessGroupOptions options = dist::ProcessGroupOptions::from_environment();
    options.cuda = on_cuda;
    dist::init_process_group(options);
    int status = 1;
    if (!args.empty() && args[0] == "collectives") {
      status = collectives(on_cuda ? cuda(dist::default_process_group().local_rank()) : kCPU);
    } else if (args.size() == 2 && args[0] == "die") {
      status = die(args[1]);
    } else if ((args.size() == 4 || (args.size() == 5 && on_cuda)) && args[0] == "ddp") {
      const Device device = on_cuda ? cuda(dist::default_process_group().local_rank()) : kCPU;
      status = ddp(args[1], args[2], std::stoi(args[3]), device);
    } else {
      std::cerr << "usage: dist_worker collectives [cuda] | die DIR | "
                   "ddp DIR eager|graphed STEPS [cuda]\n";
    }
    // After a peer died too: rank 0 keeps the store until the others have left or are gone.
    dist::destroy_process_group();
    return status;
  } catch (const std::exception& error) {
    std::cerr << "rank " << (std::getenv("GROVE_RANK") ? std::getenv("GROVE_RANK") : "?")
              << ": " << error.what() << "\n";
    std::_Exit(1);
  }
}
