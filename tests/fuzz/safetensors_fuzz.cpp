// Fuzz target: the safetensors reader (models/checkpoint/safetensors.h) and the layout check
// that follows it when a checkpoint is restored (layout.h). The input is the file. A file read
// without an error must keep load_safetensors' promises: contiguous CPU tensors whose bytes add
// up to the data section, no checksum key left in the metadata, BOOL bytes 0 or 1.
#include <cstdint>

#include "models/checkpoint/layout.h"
#include "models/checkpoint/safetensors.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const grove::fuzz::ScratchPath file("safetensors");
  grove::fuzz::write_file(file.path(), data, size);
  grove::fuzz::expect_only_grove_errors([&] {
    const grove::checkpoint::SafetensorsFile loaded =
        grove::checkpoint::load_safetensors(file.path());
    std::size_t data_bytes = 0;
    for (const auto& [name, tensor] : loaded.tensors) {
      FUZZ_CHECK(tensor.defined() && tensor.device().is_cpu() && tensor.is_contiguous());
      data_bytes += tensor.nbytes();
      if (tensor.dtype() == grove::DType::Bool) {
        const auto* bytes = static_cast<const std::uint8_t*>(tensor.data_ptr());
        for (std::size_t i = 0; i < tensor.nbytes(); ++i) FUZZ_CHECK(bytes[i] <= 1);
      }
    }
    FUZZ_CHECK(data_bytes <= size);
    FUZZ_CHECK(!loaded.metadata.contains(std::string(grove::checkpoint::kDataChecksumKey)));
    // The seeds hold this layout; a file that differs is refused with the differences listed.
    const grove::checkpoint::NamedTensors expected = {
        {"weight", grove::empty({2, 3}, grove::DType::Float32)},
        {"bias", grove::empty({3}, grove::DType::Float32)}};
    grove::checkpoint::check_same_layout(expected, loaded.tensors, "the fuzzed file");
  });
  return 0;
}
