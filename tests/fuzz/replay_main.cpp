// The main of a fuzz target in builds without libFuzzer: runs LLVMFuzzerTestOneInput once on
// every file under the directories given (recursively, in name order; names starting with '.'
// skipped) and on every file given by name. CTest runs it on the target's saved corpus and on
// its crash inputs (tests/fuzz/CMakeLists.txt), so every input that once broke a reader is
// replayed by every build, sanitizer builds included.
//
// A finding ends the process as it would under libFuzzer (an abort, an uncaught exception, a
// sanitizer report); the input being replayed is printed first. Exits 1 when there was nothing
// to replay (a missing path or an empty directory), so a misconfigured test cannot pass.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::vector<std::filesystem::path> inputs_under(const std::filesystem::path& path) {
  std::vector<std::filesystem::path> inputs;
  if (!std::filesystem::is_directory(path)) {
    if (std::filesystem::is_regular_file(path)) inputs.push_back(path);
    return inputs;
  }
  for (const auto& entry : std::filesystem::recursive_directory_iterator(path)) {
    if (entry.is_regular_file() && entry.path().filename().string().rfind('.', 0) != 0) {
      inputs.push_back(entry.path());
    }
  }
  std::sort(inputs.begin(), inputs.end());
  return inputs;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR_OR_FILE...: runs the fuzz target on each input\n", argv[0]);
    return 2;
  }
  std::size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    const std::vector<std::filesystem::path> inputs = inputs_under(argv[i]);
    if (inputs.empty()) {
      std::fprintf(stderr, "replay: expected input files at %s, but found none\n", argv[i]);
      return 1;
    }
    for (const std::filesystem::path& input : inputs) {
      std::ifstream file(input, std::ios::binary);
      const std::vector<char> bytes{std::istreambuf_iterator<char>(file),
                                    std::istreambuf_iterator<char>()};
      std::fprintf(stderr, "replay: %s (%zu bytes)\n", input.c_str(), bytes.size());
      LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
      ++replayed;
    }
  }
  std::fprintf(stderr, "replay: %zu inputs, no finding\n", replayed);
  return 0;
}
