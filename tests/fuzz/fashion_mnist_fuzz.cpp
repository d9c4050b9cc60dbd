// Fuzz target: Fashion-MNIST (models/data/fashion_mnist.h) over two IDX files.
//
// The input: byte 0 picks the sample limit (0: all, else byte - 1), bytes 1-4 (little-endian,
// cut to what is there) the length of the image file, which follows; the label file is the
// rest. Both are written plain (the gzip path is idx_fuzz's) as the training split's files. A
// split loaded without an error must keep the header's promises: images (N, 1, 28, 28) float32,
// labels (N) int64 in 0..9.
#include <algorithm>
#include <cstdint>
#include <filesystem>

#include "models/data/fashion_mnist.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 5) return 0;
  static const grove::fuzz::ScratchPath dir("fashion_mnist");
  std::filesystem::create_directories(dir.path());
  const std::int64_t limit = data[0] == 0 ? -1 : data[0] - 1;
  const std::size_t images_size =
      std::min<std::size_t>(size - 5, std::size_t{data[1]} | std::size_t{data[2]} << 8 |
                                          std::size_t{data[3]} << 16 | std::size_t{data[4]} << 24);
  grove::fuzz::write_file(dir.path() / "train-images-idx3-ubyte", data + 5, images_size);
  grove::fuzz::write_file(dir.path() / "train-labels-idx1-ubyte", data + 5 + images_size,
                          size - 5 - images_size);
  grove::fuzz::expect_only_grove_errors([&] {
    const grove::data::FashionMnist split =
        grove::data::load_fashion_mnist(dir.path(), grove::data::Split::Train, limit);
    const std::int64_t count = split.size();
    FUZZ_CHECK(limit < 0 || count <= limit);
    FUZZ_CHECK(split.images.sizes() == grove::IntArrayRef({count, 1, 28, 28}));
    FUZZ_CHECK(split.images.dtype() == grove::DType::Float32);
    FUZZ_CHECK(split.labels.dtype() == grove::DType::Int64 && split.labels.dim() == 1);
    const std::int64_t* labels = split.labels.data<std::int64_t>();
    for (std::int64_t i = 0; i < count; ++i) FUZZ_CHECK(labels[i] >= 0 && labels[i] <= 9);
  });
  return 0;
}
