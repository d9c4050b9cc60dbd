// Fashion-MNIST (fashion_mnist.h): finds the split's two IDX files, checks that they describe
// one data set, and turns bytes into normalised float32 images and int64 labels.
//
// What it is not: a cache; every call reads the files again.
//
// Invariant: pixel values come from normalize_fashion_mnist_pixel through a 256-entry table, so
// every byte value maps to the same float as the formula gives.
#include "models/data/fashion_mnist.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/data/idx.h"

namespace grove::data {
namespace {

constexpr std::int64_t kImageSide = 28;

// dir/name.gz if it exists, else dir/name if it exists; otherwise an error that says how to get
// the files.
std::filesystem::path find_split_file(const std::filesystem::path& dir, const std::string& name) {
  const std::filesystem::path gzipped = dir / (name + ".gz");
  const std::filesystem::path plain = dir / name;
  std::error_code error;
  if (std::filesystem::is_regular_file(gzipped, error)) return gzipped;
  if (std::filesystem::is_regular_file(plain, error)) return plain;
  GROVE_CHECK(false, "load_fashion_mnist: expected the Fashion-MNIST file ", gzipped.string(),
              " (or ", plain.string(),
              "), but neither exists; install the Debian package "
              "dataset-fashion-mnist (sudo apt-get install dataset-fashion-mnist), or pass "
              "--data DIR with the directory that holds the four IDX files");
  return {};
}

std::string describe_sizes(const std::vector<std::int64_t>& sizes) {
  std::string text = "(";
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(sizes[i]);
  }
  return text + ")";
}

}  // namespace

std::filesystem::path default_fashion_mnist_dir() {
  return "/usr/share/datasets/fashion-mnist";
}

FashionMnist load_fashion_mnist(const std::filesystem::path& dir, Split split, std::int64_t limit) {
  const std::string prefix = split == Split::Train ? "train" : "t10k";
  const std::filesystem::path images_path = find_split_file(dir, prefix + "-images-idx3-ubyte");
  const std::filesystem::path labels_path = find_split_file(dir, prefix + "-labels-idx1-ubyte");
  const IdxArray image_file = read_idx(images_path);
  const IdxArray label_file = read_idx(labels_path);

  GROVE_CHECK(image_file.sizes.size() == 3 && image_file.sizes[1] == kImageSide &&
                  image_file.sizes[2] == kImageSide,
              "load_fashion_mnist: expected images of sizes (N, 28, 28) in ", images_path.string(),
              ", but its header says ", describe_sizes(image_file.sizes),
              "; is this a Fashion-MNIST image file?");
  GROVE_CHECK(label_file.sizes.size() == 1, "load_fashion_mnist: expected labels of sizes (N) in ",
              labels_path.string(), ", but its header says ", describe_sizes(label_file.sizes),
              "; is this a Fashion-MNIST label file?");
  GROVE_CHECK(image_file.sizes[0] == label_file.sizes[0], "load_fashion_mnist: expected as many ",
              "labels as images, but ", images_path.string(), " holds ", image_file.sizes[0],
              " images and ", labels_path.string(), " holds ", label_file.sizes[0],
              " labels; the two files belong to different sets");

  const std::int64_t available = image_file.sizes[0];
  const std::int64_t count = limit < 0 ? available : std::min(limit, available);
  for (std::int64_t i = 0; i < available; ++i) {  // all of them: a bad one means a bad file
    const int label = label_file.bytes[static_cast<std::size_t>(i)];
    GROVE_CHECK(label < kFashionMnistClasses, "load_fashion_mnist: expected labels in 0..9, but ",
                "label ", i, " of ", labels_path.string(), " is ", label,
                "; the file is corrupt or not a Fashion-MNIST label file");
  }

  std::array<float, 256> table;
  for (int byte = 0; byte < 256; ++byte) {
    table[static_cast<std::size_t>(byte)] =
        normalize_fashion_mnist_pixel(static_cast<std::uint8_t>(byte));
  }
  FashionMnist result;
  // images: (N, 1, 28, 28)
  result.images = empty({count, 1, kImageSide, kImageSide}, DType::Float32);
  float* pixels = result.images.data<float>();
  const std::size_t pixel_count = static_cast<std::size_t>(count * kImageSide * kImageSide);
  for (std::size_t i = 0; i < pixel_count; ++i) pixels[i] = table[image_file.bytes[i]];
  // labels: (N)
  result.labels = empty({count}, DType::Int64);
  std::int64_t* labels = result.labels.data<std::int64_t>();
  for (std::int64_t i = 0; i < count; ++i) labels[i] = label_file.bytes[static_cast<size_t>(i)];
  return result;
}

}  // namespace grove::data
