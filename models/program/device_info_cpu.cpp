// cpu_description(): the CPU's model name (/proc/cpuinfo), hardware threads and memory.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <thread>

#include "models/program/device_info.h"

namespace grove::program {

std::string cpu_description() {
  std::string name = "unknown CPU";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) name = line.substr(colon + 2);
      break;
    }
  }
  const double bytes =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  char memory[32];
  std::snprintf(memory, sizeof(memory), "%.1f GiB", bytes / (1 << 30));
  return name + ", " + std::to_string(std::thread::hardware_concurrency()) + " threads, " + memory;
}

}  // namespace grove::program
