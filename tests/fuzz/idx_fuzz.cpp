// Fuzz target: the IDX reader (models/data/idx.h). The input is the file, plain or gzipped; a
// file read without an error must keep read_idx's promises (at least one size, as many bytes
// as the sizes' product).
#include <cstdint>

#include "models/data/idx.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const grove::fuzz::ScratchPath file("idx");
  grove::fuzz::write_file(file.path(), data, size);
  grove::fuzz::expect_only_grove_errors([&] {
    const grove::data::IdxArray array = grove::data::read_idx(file.path());
    FUZZ_CHECK(!array.sizes.empty());
    std::int64_t product = 1;
    for (const std::int64_t dim : array.sizes) {
      FUZZ_CHECK(dim >= 0);
      product *= dim;
    }
    FUZZ_CHECK(product == array.numel());
  });
  return 0;
}
