// The `grove demo` command: a short, printed tour of the core layer (allocate, view, capture,
// replay on the CPU stream). Returns the process exit code.
#pragma once

#include <ostream>

namespace grove::models {

int run_core_demo(std::ostream& out);

}  // namespace grove::models
