// Fashion-MNIST: 28x28 grey images of clothes in 10 classes (60,000 for training, 10,000 for
// testing), read from the IDX files of the Debian package dataset-fashion-mnist.
//
// What it is not: a downloader (grove never fetches data; install the package or pass a
// directory) and not an augmentation pipeline.
//
// Invariants of a loaded FashionMnist: images is (N, 1, 28, 28) float32 on the CPU, labels is
// (N) int64 on the CPU with values in 0..9, and both have the same N. Each pixel value is
//   (byte / 255 - 0.2860) / 0.3530
// computed in float32 in exactly that order (a division by 255, a subtraction, a division), so
// the values are bit-identical to the reference harness's (which scales to [0, 1] and then
// normalises with these constants, as torchvision's ToTensor and Normalize do).
#pragma once

#include <cstdint>
#include <filesystem>

#include "core/tensor.h"

namespace grove::data {

// The normalisation of the reference harness: the mean and standard deviation of the training
// images' pixels, scaled to [0, 1].
inline constexpr float kFashionMnistMean = 0.2860f;
inline constexpr float kFashionMnistStd = 0.3530f;
inline constexpr std::int64_t kFashionMnistClasses = 10;

enum class Split { Train, Test };

// One split, in the files' order (the loader shuffles).
struct FashionMnist {
  Tensor images;  // (N, 1, 28, 28) float32, normalised as above
  Tensor labels;  // (N) int64, 0..9

  std::int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

// "/usr/share/datasets/fashion-mnist", where dataset-fashion-mnist installs its files.
std::filesystem::path default_fashion_mnist_dir();

// Reads one split from `dir`: train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz for
// Train, t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz for Test (each also accepted
// without .gz). Keeps the first `limit` samples (all if limit is negative or larger than the
// split). Blocks on file I/O (about 0.3 s for the training split); allocates the two tensors.
// Throws grove::Error when a file is missing (naming the paths tried and how to install the
// package), when a file is not a valid IDX file (see read_idx), when the images are not
// 28x28, when images and labels disagree in count, and when a label is outside 0..9 (naming
// the first bad index).
FashionMnist load_fashion_mnist(const std::filesystem::path& dir, Split split,
                                std::int64_t limit = -1);

// The pixel normalisation above, for one byte (exposed for tests and for tools that show
// images).
inline float normalize_fashion_mnist_pixel(std::uint8_t byte) {
  const float scaled = static_cast<float>(byte) / 255.0f;
  return (scaled - kFashionMnistMean) / kFashionMnistStd;
}

}  // namespace grove::data
