// See ops/precision.h.
#include "ops/precision.h"

#include <atomic>

namespace grove::ops {
namespace {
std::atomic<bool> g_allow_tf32{false};
std::atomic<bool> g_matmul_benchmark{false};
}  // namespace

void set_allow_tf32(bool allow) {
  g_allow_tf32.store(allow, std::memory_order_relaxed);
}
bool allow_tf32() {
  return g_allow_tf32.load(std::memory_order_relaxed);
}
void set_matmul_benchmark(bool on) {
  g_matmul_benchmark.store(on, std::memory_order_relaxed);
}
bool matmul_benchmark() {
  return g_matmul_benchmark.load(std::memory_order_relaxed);
}

}  // namespace grove::ops
