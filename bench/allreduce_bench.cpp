// All-reduce bandwidth of grove's collectives, in the figures nccl-tests prints: for each buffer
// size, the time of one in-place sum all-reduce, the algorithm bandwidth (bytes / time)
// and the bus bandwidth (algbw * 2 (n - 1) / n, what each link carries in a ring; comparable
// across world sizes). bench/torch_allreduce.py measures PyTorch's torch.distributed the same
// way; scripts/compare_dist.sh runs both in one call.
//
// The timing, as nccl-tests does it: after a barrier, --batch calls back to back, then one
// synchronize; the time per call is that span over --batch, and the figure is the median over
// --iters such spans. One call timed alone (--batch 1) measures mostly the launch and how far
// apart the ranks arrived (the barrier goes through the TCP store, PyTorch's through NCCL), not
// the transfer.
//
//   allreduce_bench --nproc 2 --device cuda          # one process per GPU (NCCL)
//   allreduce_bench --nproc 4 --device cpu           # CPU processes (Gloo over the loopback)
//   options: --sizes 4M,64M  --iters 50  --batch 20  --warmup 5
//            --graph (CUDA: replay one captured call)
// Started without GROVE_WORLD_SIZE, it launches --nproc copies of itself (dist/launch.h); rank 0
// prints the table. Not a Google Benchmark suite: the timing spans several processes.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/device_graph.h"
#include "core/error.h"
#include "core/stream.h"
#include "dist/launch.h"
#include "dist/process_group.h"
#include "ops/collective.h"

namespace {

using namespace grove;
using Clock = std::chrono::steady_clock;

struct Options {
  int nproc = 2;
  std::string device = "cpu";
  std::vector<std::int64_t> sizes = {4 << 20, 64 << 20};  // bytes
  int iters = 50;
  int batch = 20;
  int warmup = 5;
  bool graph = false;
};

std::int64_t parse_size(const std::string& text) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  const std::string unit(end);
  if (unit == "K" || unit == "k") value *= 1 << 10;
  if (unit == "M" || unit == "m") value *= 1 << 20;
  if (unit == "G" || unit == "g") value *= 1 << 30;
  GROVE_CHECK(value >= 4, "expected a size such as 4M, got '", text, "'");
  return static_cast<std::int64_t>(value);
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      GROVE_CHECK(i + 1 < argc, flag, " needs a value");
      return argv[++i];
    };
    if (flag == "--nproc") options.nproc = std::stoi(value());
    else if (flag == "--device") options.device = value();
    else if (flag == "--iters") options.iters = std::stoi(value());
    else if (flag == "--batch") options.batch = std::stoi(value());
    else if (flag == "--warmup") options.warmup = std::stoi(value());
    else if (flag == "--graph") options.graph = true;
    else if (flag == "--sizes") {
      options.sizes.clear();
      std::string list = value();
      for (std::size_t start = 0; start <= list.size();) {
        const std::size_t comma = std::min(list.find(',', start), list.size());
        options.sizes.push_back(parse_size(list.substr(start, comma - start)));
        start = comma + 1;
      }
    } else {
      GROVE_CHECK(false, "unknown flag ", flag,
                  "; expected --nproc, --device, --sizes, --iters, --batch, --warmup, --graph");
    }
  }
  GROVE_CHECK(options.device == "cpu" || options.device == "cuda",
              "expected --device cpu or cuda, got ", options.device);
  GROVE_CHECK(options.iters >= 1 && options.batch >= 1,
              "expected --iters and --batch of at least 1, got ", options.iters, " and ",
              options.batch);
  GROVE_CHECK(!options.graph || options.device == "cuda", "--graph needs --device cuda");
  return options;
}

double median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

int run_rank(const Options& options) {
  dist::ProcessGroupOptions group_options = dist::ProcessGroupOptions::from_environment();
  group_options.cuda = options.device == "cuda";
  dist::ProcessGroup& group = dist::init_process_group(group_options);
  const Device device = options.device == "cuda" ? cuda(group.local_rank()) : kCPU;
  const int world = group.world_size();
  if (group.rank() == 0) {
    std::printf("grove all_reduce_ (sum, float32, in place), %d ranks, %s%s, median of %d x %d "
                "calls\n",
                world, options.device == "cuda" ? "NCCL" : "Gloo",
                options.graph ? ", one captured call replayed" : "", options.iters, options.batch);
    std::printf("%12s %12s %12s %12s\n", "bytes", "time us", "algbw GB/s", "busbw GB/s");
  }
  for (const std::int64_t bytes : options.sizes) {
    const Tensor buffer = ones({bytes / 4}, TensorOptions(DType::Float32).device(device));
    const Stream stream = current_stream(device);
    std::unique_ptr<DeviceGraph> graph;
    if (options.graph) {
      graph = std::make_unique<DeviceGraph>(device);
      const Stream side = new_stream(device, "allreduce_bench");
      wait_stream(side, stream);
      {
        StreamGuard guard(side);
        graph->begin_capture(side);
        ops::all_reduce_(buffer);
        graph->end_capture();
      }
      wait_stream(stream, side);
      release_stream(side);
    }
    auto once = [&] {
      if (graph) {
        graph->replay();
      } else {
        ops::all_reduce_(buffer);
      }
    };
    for (int i = 0; i < options.warmup; ++i) once();
    synchronize(stream);
    std::vector<double> seconds;
    for (int i = 0; i < options.iters; ++i) {
      group.barrier();  // every rank starts together; the store's wait is outside the timing
      const auto start = Clock::now();
      for (int call = 0; call < options.batch; ++call) once();
      synchronize(stream);
      seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count() /
                        options.batch);
    }
    // The slowest rank's time is the collective's: take each iteration's maximum.
    const Tensor times = from_vector<double>(seconds, {}, kCPU);
    if (device.is_cpu()) {
      ops::all_reduce_(times, ops::ReduceOp::kMax);
    }
    const double time = median(times.to_vector<double>());
    const double algbw = static_cast<double>(bytes) / time / 1e9;
    const double busbw = algbw * 2.0 * (world - 1) / world;
    if (group.rank() == 0) {
      std::printf("%12lld %12.1f %12.2f %12.2f\n", static_cast<long long>(bytes), time * 1e6,
                  algbw, busbw);
    }
  }
  dist::destroy_process_group();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options options = parse(argc, argv);
    if (std::getenv("GROVE_WORLD_SIZE") == nullptr) {
      dist::LaunchOptions launch;
      launch.nproc = options.nproc;
      launch.argv = {dist::current_executable()};
      for (int i = 1; i < argc; ++i) launch.argv.emplace_back(argv[i]);
      return dist::launch_local(launch);
    }
    return run_rank(options);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "allreduce_bench: %s\n", error.what());
    return 2;
  }
}
