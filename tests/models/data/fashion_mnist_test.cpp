// Tests of Fashion-MNIST (models/data/fashion_mnist.h): the normalised values against golden
// float32 bits (tests/models/data/golden.py), shapes and dtypes, limits, file naming (.gz or
// not), the errors, and the real data set when the Debian package is installed.
#include "models/data/fashion_mnist.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "models/data/idx.h"
#include "tests/models/data/data_test_util.h"

namespace grove::data {
namespace {

using testing::error_of;
using testing::idx_bytes;
using testing::ramp_bytes;
using testing::TempDir;
using testing::write_bytes;
using testing::write_gzip;

constexpr std::size_t kPixels = 28 * 28;

std::uint32_t bits_of(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

// Two images (ramp bytes, so every byte value occurs) and their labels, as the test split.
void write_tiny_split(const TempDir& dir, const std::vector<std::uint8_t>& labels) {
  const auto count = static_cast<std::uint32_t>(labels.size());
  write_gzip(dir / "t10k-images-idx3-ubyte.gz",
             idx_bytes({count, 28, 28}, ramp_bytes(count * kPixels)));
  write_bytes(dir / "t10k-labels-idx1-ubyte", idx_bytes({count}, labels));  // plain name
}

// Golden float32 bits of (byte / 255 - 0.2860) / 0.3530 from golden.py.
const std::pair<int, std::uint32_t> kGoldenPixels[] = {
    {0, 0xbf4f6929},    // -0.8101983666419983
    {1, 0xbf4c911b},    // -0.7990891337394714
    {37, 0xbecc5e24},   // -0.39915573596954346
    {128, 0x3f1c9e13},  // 0.6117870211601257
    {200, 0x3fb4b111},  // 1.4116536378860474
    {255, 0x4001734f},  // 2.022662878036499
};

TEST(FashionMnistTest, NormalisedPixelsMatchGoldenBits) {
  for (const auto& [byte, bits] : kGoldenPixels) {
    EXPECT_EQ(bits_of(normalize_fashion_mnist_pixel(static_cast<std::uint8_t>(byte))), bits)
        << "byte " << byte;
  }
}

TEST(FashionMnistTest, LoadsTinySplitWithShapesValuesAndLabels) {
  TempDir dir;
  write_tiny_split(dir, {3, 9});
  const FashionMnist data = load_fashion_mnist(dir.path(), Split::Test);
  ASSERT_EQ(data.size(), 2);
  EXPECT_EQ(data.images.sizes().vec(), (std::vector<std::int64_t>{2, 1, 28, 28}));
  EXPECT_EQ(data.images.dtype(), DType::Float32);
  EXPECT_EQ(data.labels.sizes().vec(), (std::vector<std::int64_t>{2}));
  EXPECT_EQ(data.labels.dtype(), DType::Int64);
  EXPECT_EQ(data.labels.to_vector<std::int64_t>(), (std::vector<std::int64_t>{3, 9}));

  const std::vector<float> pixels = data.images.to_vector<float>();
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    const int byte = static_cast<int>(i % 256);
    ASSERT_EQ(bits_of(pixels[i]), bits_of(normalize_fashion_mnist_pixel(byte))) << "pixel " << i;
  }
  for (const auto& [byte, bits] : kGoldenPixels) {
    EXPECT_EQ(bits_of(pixels[static_cast<std::size_t>(byte)]), bits) << "byte " << byte;
  }
}

TEST(FashionMnistTest, LimitKeepsTheFirstSamples) {
  TempDir dir;
  write_tiny_split(dir, {3, 9, 0});
  const FashionMnist first = load_fashion_mnist(dir.path(), Split::Test, 1);
  ASSERT_EQ(first.size(), 1);
  EXPECT_EQ(first.images.sizes().vec(), (std::vector<std::int64_t>{1, 1, 28, 28}));
  EXPECT_EQ(first.labels.to_vector<std::int64_t>(), (std::vector<std::int64_t>{3}));
  EXPECT_EQ(load_fashion_mnist(dir.path(), Split::Test, 100).size(), 3);  // clamped
  EXPECT_EQ(load_fashion_mnist(dir.path(), Split::Test, 0).size(), 0);
}

TEST(FashionMnistTest, MissingFilesSayHowToGetThem) {
  TempDir dir;
  const std::string message = error_of([&] { load_fashion_mnist(dir.path(), Split::Train); });
  EXPECT_NE(message.find((dir / "train-images-idx3-ubyte.gz").string()), std::string::npos)
      << message;
  EXPECT_NE(message.find("sudo apt-get install dataset-fashion-mnist"), std::string::npos)
      << message;
  EXPECT_NE(message.find("--data DIR"), std::string::npos) << message;
}

TEST(FashionMnistTest, ImagesAndLabelsMustAgree) {
  TempDir dir;
  write_bytes(dir / "t10k-images-idx3-ubyte", idx_bytes({2, 28, 28}, ramp_bytes(2 * kPixels)));
  write_bytes(dir / "t10k-labels-idx1-ubyte", idx_bytes({3}, {1, 2, 3}));
  const std::string count = error_of([&] { load_fashion_mnist(dir.path(), Split::Test); });
  EXPECT_NE(count.find("holds 2 images"), std::string::npos) << count;
  EXPECT_NE(count.find("holds 3 labels"), std::string::npos) << count;

  write_bytes(dir / "t10k-images-idx3-ubyte", idx_bytes({3, 27, 28}, ramp_bytes(3 * 27 * 28)));
  const std::string sizes = error_of([&] { load_fashion_mnist(dir.path(), Split::Test); });
  EXPECT_NE(sizes.find("expected images of sizes (N, 28, 28)"), std::string::npos) << sizes;
  EXPECT_NE(sizes.find("(3, 27, 28)"), std::string::npos) << sizes;
}

TEST(FashionMnistTest, LabelOutOfRangeNamesTheFirstBadIndex) {
  TempDir dir;
  write_bytes(dir / "t10k-images-idx3-ubyte", idx_bytes({4, 28, 28}, ramp_bytes(4 * kPixels)));
  write_bytes(dir / "t10k-labels-idx1-ubyte", idx_bytes({4}, {0, 9, 10, 200}));
  const std::string message = error_of([&] { load_fashion_mnist(dir.path(), Split::Test); });
  EXPECT_NE(message.find("expected labels in 0..9"), std::string::npos) << message;
  EXPECT_NE(message.find("label 2 of"), std::string::npos) << message;
  EXPECT_NE(message.find("is 10"), std::string::npos) << message;
}

// The real data set, from the Debian package dataset-fashion-mnist.
class RealFashionMnistTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::is_directory(default_fashion_mnist_dir())) {
      GTEST_SKIP() << default_fashion_mnist_dir().string()
                   << " is missing; sudo apt-get install dataset-fashion-mnist to run this test";
    }
  }
};

TEST_F(RealFashionMnistTest, DefaultDirectory) {
  EXPECT_EQ(default_fashion_mnist_dir(),
            std::filesystem::path("/usr/share/datasets/fashion-mnist"));
}

TEST_F(RealFashionMnistTest, TrainingSplit) {
  const FashionMnist train = load_fashion_mnist(default_fashion_mnist_dir(), Split::Train);
  ASSERT_EQ(train.size(), 60000);
  EXPECT_EQ(train.images.sizes().vec(), (std::vector<std::int64_t>{60000, 1, 28, 28}));
  const std::vector<std::int64_t> labels = train.labels.to_vector<std::int64_t>();
  const std::vector<std::int64_t> first(labels.begin(), labels.begin() + 10);
  EXPECT_EQ(first, (std::vector<std::int64_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}));
  std::vector<int> per_class(10, 0);
  for (std::int64_t label : labels) ++per_class[static_cast<std::size_t>(label)];
  EXPECT_EQ(per_class, std::vector<int>(10, 6000));

  // The first image's bytes, recovered from the normalised values, sum to what the file holds
  // (76247, from gzip -dc | od). Inverting in double and rounding recovers each byte exactly:
  // neighbouring bytes are 1/255/0.353 = 0.011 apart, float32 error is ~1e-7.
  const float* pixels = train.images.data<float>();
  std::int64_t byte_sum = 0;
  for (std::size_t i = 0; i < kPixels; ++i) {
    byte_sum += std::lround((pixels[i] * 0.3530 + 0.2860) * 255.0);
  }
  EXPECT_EQ(byte_sum, 76247);
}

TEST_F(RealFashionMnistTest, TestSplit) {
  const FashionMnist test = load_fashion_mnist(default_fashion_mnist_dir(), Split::Test);
  ASSERT_EQ(test.size(), 10000);
  const std::vector<std::int64_t> labels = test.labels.to_vector<std::int64_t>();
  const std::vector<std::int64_t> first(labels.begin(), labels.begin() + 10);
  EXPECT_EQ(first, (std::vector<std::int64_t>{9, 2, 1, 1, 6, 1, 4, 6, 5, 7}));
  std::vector<int> per_class(10, 0);
  for (std::int64_t label : labels) ++per_class[static_cast<std::size_t>(label)];
  EXPECT_EQ(per_class, std::vector<int>(10, 1000));
}

}  // namespace
}  // namespace grove::data
