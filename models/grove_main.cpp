// The `grove` program. Commands:
//   grove demo    a printed tour of the core layer (allocate, view, capture, replay)
// Training commands arrive with the models and training issues.
#include <cstring>
#include <iostream>

#include "core/error.h"
#include "models/core_demo.h"

namespace {

void print_usage(std::ostream& out) {
  out << "usage: grove <command>\n"
         "commands:\n"
         "  demo    a tour of the core layer: allocate, view, capture and replay on the CPU "
         "stream\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    print_usage(argc < 2 ? std::cerr : std::cout);
    return argc < 2 ? 2 : 0;
  }
  try {
    if (std::strcmp(argv[1], "demo") == 0) return grove::models::run_core_demo(std::cout);
    std::cerr << "grove: unknown command '" << argv[1] << "'\n";
    print_usage(std::cerr);
    return 2;
  } catch (const grove::Error& error) {
    std::cerr << "grove: error: " << error.what() << "\n";
    return 1;
  }
}
