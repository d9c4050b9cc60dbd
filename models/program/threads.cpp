// See models/program/threads.h and Note [Threads on a shared machine].
#include "models/program/threads.h"

#include <omp.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/error.h"

namespace grove::program {
namespace {

constexpr std::int64_t kMaxThreads = 1024;

// A thread count from a flag or a variable: a whole number in [1, kMaxThreads].
int parse_count(std::string_view text, const char* what) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  GROVE_CHECK(error == std::errc() && end == text.data() + text.size() && value >= 1 &&
                  value <= kMaxThreads,
              what, ": expected a number of threads from 1 to ", kMaxThreads, ", got '", text,
              "'");
  return static_cast<int>(value);
}

std::optional<CpuTimes> read_cpu_times() {
  std::ifstream stat("/proc/stat");
  std::string line;
  if (!stat || !std::getline(stat, line)) return std::nullopt;
  return parse_cpu_line(line);
}

int ranks_on_this_host() {
  const char* world = std::getenv("GROVE_WORLD_SIZE");
  if (world == nullptr || *world == '\0') return 1;
  int ranks = 1;
  const std::string_view text(world);
  std::from_chars(text.data(), text.data() + text.size(), ranks);
  return std::max(ranks, 1);
}

}  // namespace

std::optional<CpuTimes> parse_cpu_line(std::string_view line) {
  if (!line.starts_with("cpu ")) return std::nullopt;
  std::istringstream fields{std::string(line.substr(4))};
  CpuTimes times;
  std::uint64_t value = 0;
  for (int i = 0; fields >> value; ++i) {
    if (i == 3 || i == 4) times.idle += value;  // idle, iowait
    if (i < 8) times.total += value;  // user..steal; guest time is already in user
  }
  if (times.total == 0) return std::nullopt;
  return times;
}

int idle_threads(const CpuTimes& before, const CpuTimes& after, int cores, int ranks) {
  const double total = static_cast<double>(after.total - before.total);
  const double idle = static_cast<double>(after.idle - before.idle);
  const double idle_share = total > 0 ? std::clamp(idle / total, 0.0, 1.0) : 1.0;
  const double idle_cores = idle_share * cores / std::max(ranks, 1);
  return std::max(1, static_cast<int>(std::lround(idle_cores)));
}

ThreadChoice choose_threads(std::optional<std::int64_t> flag) {
  if (flag) return {parse_count(std::to_string(*flag), "--threads"), "--threads"};
  for (const char* variable : {"GROVE_NUM_THREADS", "OMP_NUM_THREADS"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && *value != '\0') return {parse_count(value, variable), variable};
  }
  const int cores = std::max(1, omp_get_num_procs());
  const int ranks = ranks_on_this_host();
  const std::optional<CpuTimes> before = read_cpu_times();
  if (!before) return {std::max(1, cores / ranks), "auto: /proc/stat unreadable, every core"};
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::optional<CpuTimes> after = read_cpu_times();
  if (!after) return {std::max(1, cores / ranks), "auto: /proc/stat unreadable, every core"};
  const int threads = idle_threads(*before, *after, cores, ranks);
  const double idle = static_cast<double>(after->idle - before->idle) /
                      std::max<double>(1.0, static_cast<double>(after->total - before->total));
  char text[96];
  std::snprintf(text, sizeof(text), "auto: %.1f of %d cores idle%s", idle * cores, cores,
                ranks > 1 ? (", shared by " + std::to_string(ranks) + " ranks").c_str() : "");
  return {threads, text};
}

void apply_threads(const ThreadChoice& choice) {
  omp_set_num_threads(choice.threads);
}

std::string ThreadChoice::describe() const {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  return std::to_string(threads) + (threads == 1 ? " thread (" : " threads (") + source +
         "), OMP_WAIT_POLICY " + (policy != nullptr && *policy != '\0' ? policy : "default");
}

}  // namespace grove::program
