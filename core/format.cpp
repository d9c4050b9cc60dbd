#include "core/format.h"

#include <cstdio>

namespace grove {

std::string format_bytes(std::size_t nbytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(nbytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (unit == 0) {
    std::snprintf(text, sizeof(text), "%zu bytes", nbytes);
  } else {
    std::snprintf(text, sizeof(text), "%.2f %s", value, units[unit]);
  }
  return text;
}

std::string format_pointer(const void* ptr) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", ptr);
  return text;
}

}  // namespace grove
