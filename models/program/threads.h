// How many OpenMP threads the CPU kernels of a `grove` command use, and why.
//
// Note [Threads on a shared machine]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// OpenMP's default is one thread per hardware thread. A parallel region ends when its slowest
// thread does, and when other work runs on the same cores the kernel deschedules some thread of
// every region. Measured on a 2-core machine, the MLP's CPU step (`grove train --model mlp
// --device cpu`, median of 300 steps) with a second 2-thread grove run training beside it: 2
// threads 14-46 ms (36-124 ms on another 2-core host, with OMP_WAIT_POLICY active or passive),
// 1 thread 2.9 ms, the automatic choice 1 thread and 3.3 ms; idle: the automatic choice 2
// threads and 2.0-2.4 ms, 1 thread 2.6-3.1 ms. So unless
// told, a command counts the cores that are idle now (the busy share of every core over 100 ms
// of /proc/stat) and uses that many threads, at least 1, split between the ranks of a
// data-parallel job on this host (GROVE_WORLD_SIZE, set by --nproc). Told, it takes the number as
// given: --threads N, else GROVE_NUM_THREADS, else OMP_NUM_THREADS (OpenMP's own variable). The
// run header and `grove info` say the count and where it came from, and OpenMP's wait policy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace grove::program {

struct ThreadChoice {
  int threads = 1;
  std::string source;  // "--threads", "GROVE_NUM_THREADS", "OMP_NUM_THREADS", "auto: ..."
  std::string describe() const;  // "2 threads (auto: 1.9 of 2 cores idle), OMP_WAIT_POLICY default"
};

// The choice for this process (see the Note): `flag` is --threads when given. Errors name the
// flag or variable and the value. Samples /proc/stat for 100 ms when it decides itself.
ThreadChoice choose_threads(std::optional<std::int64_t> flag);
// Makes the CPU kernels of this thread use choice.threads threads (omp_set_num_threads).
void apply_threads(const ThreadChoice& choice);

// The pieces, for tests. Cumulative jiffies of all cores from /proc/stat's first line
// ("cpu  user nice system idle iowait irq softirq steal ..."): idle is idle + iowait.
struct CpuTimes {
  std::uint64_t idle = 0;
  std::uint64_t total = 0;
};
std::optional<CpuTimes> parse_cpu_line(std::string_view line);
// Threads for `cores` hardware threads of which the share (after - before) was busy, divided
// between `ranks` processes on this host: round(idle cores / ranks), at least 1.
int idle_threads(const CpuTimes& before, const CpuTimes& after, int cores, int ranks);

}  // namespace grove::program
