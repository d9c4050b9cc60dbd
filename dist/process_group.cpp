// Process groups: options from the environment, joining, barriers and the default group.
// See dist/process_group.h.
#include "dist/process_group.h"

#include <cerrno>
#include <cstdlib>
#include <limits>
#include <thread>

#include "core/error.h"

namespace grove::dist {
namespace {

// The integer in environment variable `name`, or `fallback` when it is unset.
long long integer_from_environment(const char* name, long long fallback, long long min,
                                   long long max) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text, &end, 10);
  GROVE_CHECK(errno == 0 && end != text && *end == '\0' && value >= min && value <= max,
              "expected ", name, " to be an integer in [", min, ", ", max, "], but it is '", text,
              "'");
  return value;
}

std::unique_ptr<ProcessGroup>& default_group_slot() {
  static std::unique_ptr<ProcessGroup> group;
  return group;
}

}  // namespace

ProcessGroupOptions ProcessGroupOptions::from_environment() {
  ProcessGroupOptions options;
  options.world_size =
      static_cast<int>(integer_from_environment("GROVE_WORLD_SIZE", 1, 1, 1 << 20));
  options.rank = static_cast<int>(integer_from_environment("GROVE_RANK", 0, 0, 1 << 20));
  GROVE_CHECK(options.rank < options.world_size, "expected GROVE_RANK in [0, GROVE_WORLD_SIZE = ",
              options.world_size, "), but it is ", options.rank);
  options.local_rank =
      static_cast<int>(integer_from_environment("GROVE_LOCAL_RANK", options.rank, 0, 1 << 20));
  if (const char* addr = std::getenv("GROVE_MASTER_ADDR"); addr != nullptr && *addr != '\0') {
    options.master_addr = addr;
  }
  options.master_port =
      static_cast<int>(integer_from_environment("GROVE_MASTER_PORT", 0, 0, 65535));
  GROVE_CHECK(options.world_size == 1 || options.master_port != 0,
              "GROVE_WORLD_SIZE is ", options.world_size,
              " but GROVE_MASTER_PORT is not set: every process needs the port where rank 0 "
              "runs the rendezvous store (for example GROVE_MASTER_PORT=29500), or start the "
              "job with `grove train --nproc N`, which sets it");
  options.timeout = std::chrono::seconds(
      integer_from_environment("GROVE_TIMEOUT_S", 300, 1, 7 * 24 * 3600));
  if (const char* iface = std::getenv("GROVE_GLOO_IFNAME"); iface != nullptr) {
    options.gloo_interface = iface;
  }
  return options;
}

ProcessGroup::ProcessGroup(const ProcessGroupOptions& options)
    : options_(options), id_(ops::new_collective_group()) {
  GROVE_CHECK(options.world_size >= 1 && options.rank >= 0 && options.rank < options.world_size,
              "expected a rank in [0, world size = ", options.world_size, "), but got rank ",
              options.rank);
  GROVE_CHECK(options.world_size == 1 || options.master_port != 0,
              "a process group of ", options.world_size,
              " processes needs the store's port (master_port, GROVE_MASTER_PORT)");
  store_ = std::make_unique<TcpStore>(options.master_addr, options.master_port, options.rank,
                                      options.world_size, options.rank == 0, options.timeout);
  if (has_gloo()) {
    cpu_engine_ = make_gloo_engine(*store_, options_);
    ops::register_collective_engine(id_, DeviceType::CPU, cpu_engine_.get());
  }
  if (options.cuda) {
    cuda_engine_ = make_nccl_engine(*store_, options_);
    ops::register_collective_engine(id_, DeviceType::CUDA, cuda_engine_.get());
  }
  GROVE_CHECK(cpu_engine_ != nullptr || cuda_engine_ != nullptr,
              "this build of grove has no collective engine for CPU tensors (Gloo: install "
              "Debian's libgloo-dev and rebuild) and none was asked for CUDA tensors");
}

ProcessGroup::~ProcessGroup() {
  if (cpu_engine_) ops::unregister_collective_engine(id_, DeviceType::CPU);
  if (cuda_engine_) ops::unregister_collective_engine(id_, DeviceType::CUDA);
  if (ops::default_collective_group() == id_) ops::set_default_collective_group(-1);
  // Rank 0 runs the store: it waits until every other rank has arrived here or is known to be
  // gone before tearing it down, so that ranks still handling an error can ask the store who
  // went away (Note [Who went away]).
  try {
    store_->add("grove/exit", 1);
    if (options_.rank == 0) {
      const auto deadline = Clock::now() + options_.timeout;
      while (Clock::now() < deadline) {
        const std::int64_t arrived = store_->add("grove/exit", 0);
        if (arrived >= options_.world_size) break;
        if (arrived + static_cast<std::int64_t>(store_->gone_ranks().lost.size()) >=
            options_.world_size) {
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
  } catch (const Error&) {
    // A rank that went away cannot be waited for; nothing else to do on the way out.
  }
  cuda_engine_.reset();
  cpu_engine_.reset();
}

void ProcessGroup::barrier() {
  const std::string key = "grove/barrier/" + std::to_string(barriers_++);
  store_->add(key, 1);
  const auto deadline = Clock::now() + options_.timeout;
  auto pause = std::chrono::microseconds(50);
  while (store_->add(key, 0) < options_.world_size) {
    if (Clock::now() >= deadline) {
      const std::string gone = store_->describe_gone_ranks();
      GROVE_CHECK(false, "rank ", options_.rank, " waited ", options_.timeout.count(),
                  " ms at barrier ", barriers_ - 1, " for the other ranks",
                  gone.empty() ? std::string() : ": " + gone);
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10000));
  }
}

ProcessGroup& init_process_group() {
  return init_process_group(ProcessGroupOptions::from_environment());
}

ProcessGroup& init_process_group(const ProcessGroupOptions& options) {
  auto& slot = default_group_slot();
  GROVE_CHECK(slot == nullptr, "the default process group exists already (rank ", slot->rank(),
              " of ", slot->world_size(), "); call destroy_process_group() before another");
  slot = std::make_unique<ProcessGroup>(options);
  ops::set_default_collective_group(slot->id());
  return *slot;
}

bool is_initialized() { return default_group_slot() != nullptr; }

ProcessGroup& default_process_group() {
  auto& slot = default_group_slot();
  GROVE_CHECK(slot != nullptr, "no default process group: call dist::init_process_group() first");
  return *slot;
}

void destroy_process_group() { default_group_slot().reset(); }

}  // namespace grove::dist
