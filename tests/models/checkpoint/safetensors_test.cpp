// save_safetensors / load_safetensors: round trips of every grove dtype (0-d, empty and
// non-contiguous tensors included), the exact bytes of a small file against a header written by
// hand (the format, not only self-consistency), a file written by the reference Python writer,
// and the refusals of save (each before any file exists).
//
// What it is not: the corrupt-file refusals of load (safetensors_refusal_test.cpp) or the
// atomicity of save (atomic_file_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/tensor.h"
#include "models/checkpoint/safetensors.h"
#include "tests/models/checkpoint/checkpoint_test_util.h"

namespace grove::checkpoint {
namespace {

using testing::error_of;
using testing::read_bytes;
using testing::safetensors_bytes;
using testing::TempDir;
using testing::write_bytes;

// True when both tensors have the same shape, dtype and the same bytes (NaNs and -0.0
// included: a round trip must be bit-exact, so no tolerance anywhere in this file).
::testing::AssertionResult same_tensor(const Tensor& expected, const Tensor& found) {
  if (expected.sizes() != found.sizes() || expected.dtype() != found.dtype()) {
    return ::testing::AssertionFailure()
           << "expected " << expected.sizes() << " " << expected.dtype() << ", found "
           << found.sizes() << " " << found.dtype();
  }
  const Tensor dense = expected.contiguous();
  if (dense.nbytes() > 0 && std::memcmp(dense.data_ptr(), found.data_ptr(), dense.nbytes()) != 0) {
    return ::testing::AssertionFailure()
           << "the bytes differ: expected " << dense << ", found " << found;
  }
  return ::testing::AssertionSuccess();
}

const Tensor* find(const NamedTensors& tensors, const std::string& name) {
  for (const auto& [tensor_name, tensor] : tensors) {
    if (tensor_name == name) return &tensor;
  }
  return nullptr;
}

TEST(SafetensorsTest, RoundTripsEveryDTypeBitExactly) {
  TempDir dir;
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  const NamedTensors tensors = {
      {"float32", from_vector<float>({-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 1e-40f}, {2, 3})},
      {"float64",
       from_vector<double>({-0.0, 1e-310, kNaN, -std::numeric_limits<double>::infinity()})},
      {"int64", from_vector<std::int64_t>({std::numeric_limits<std::int64_t>::min(), -1, 0,
                                           std::numeric_limits<std::int64_t>::max()},
                                          {2, 2})},
      {"int32", from_vector<std::int32_t>({std::numeric_limits<std::int32_t>::min(), 7})},
      {"bool", from_vector<bool>({true, false, false, true, true}, {5, 1})},
      {"bfloat16", from_vector<float>({-2.5f, 1e-40f, 3.0e38f, -0.0f}).to(DType::BFloat16)},
      {"float16", from_vector<float>({-2.5f, 6e-8f, 65504.0f, -0.0f}, {2, 2}).to(DType::Float16)},
      {"scalar", full({}, 3.25f)},
      {"scalar_bool", full({}, true)},
      {"empty_rows", empty({0, 5})},
      {"empty_columns", empty({3, 0}, DType::Int64)},
      {"transposed",
       from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}).t()},  // written as 1 4 2 5 3 6
  };
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"step", "100"}};
  save_safetensors(dir / "all.safetensors", tensors, metadata);
  // For check_safetensors.py: GROVE_CHECKPOINT_TEST_KEEP=FILE keeps a copy of this file.
  if (const char* keep = std::getenv("GROVE_CHECKPOINT_TEST_KEEP")) {
    save_safetensors(keep, tensors, metadata);
  }

  const SafetensorsFile file = load_safetensors(dir / "all.safetensors");
  EXPECT_TRUE(file.checksum_verified);
  EXPECT_EQ(file.metadata, metadata);  // the checksum entry is not handed back
  ASSERT_EQ(file.tensors.size(), tensors.size());
  for (const auto& [name, tensor] : tensors) {
    const Tensor* loaded = find(file.tensors, name);
    ASSERT_NE(loaded, nullptr) << name;
    EXPECT_TRUE(same_tensor(tensor, *loaded)) << name;
    EXPECT_TRUE(loaded->device().is_cpu()) << name;
    EXPECT_TRUE(loaded->is_contiguous()) << name;
  }
  // Each loaded tensor owns its memory: writing one leaves the others alone.
  for (std::size_t i = 0; i + 1 < file.tensors.size(); ++i) {
    EXPECT_FALSE(file.tensors[i].second.is_alias_of(file.tensors[i + 1].second));
  }
}

TEST(SafetensorsTest, LoadsTensorsInTheOrderOfTheirData) {
  TempDir dir;
  // Saved out of order; the file orders by element size (largest first), then by name.
  save_safetensors(dir / "order.safetensors", {{"z_bool", full({2}, true)},
                                               {"b_float", zeros({2})},
                                               {"a_float", zeros({1})},
                                               {"y_double", zeros({1}, DType::Float64)},
                                               {"c_int64", zeros({1}, DType::Int64)}});
  const SafetensorsFile file = load_safetensors(dir / "order.safetensors");
  std::vector<std::string> names;
  for (const auto& [name, tensor] : file.tensors) names.push_back(name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"c_int64", "y_double", "a_float", "b_float", "z_bool"}));
}

TEST(SafetensorsTest, NonContiguousInputsAreWrittenInRowMajorOrder) {
  TempDir dir;
  const Tensor base = arange(24).view({4, 6});
  const NamedTensors tensors = {
      {"transposed", base.t()},                                       // strides (1, 6)
      {"strided", base.slice(1, 1, 6, 2)},                            // every other column
      {"offset", base.narrow(0, 2, 2)},                               // storage offset 12
      {"broadcast", full({3}, 2.0f).unsqueeze(0).expand({2, 3})},     // stride 0
      {"integer_view", arange(10, DType::Int64).slice(0, 1, 10, 3)},  // 1, 4, 7
  };
  save_safetensors(dir / "views.safetensors", tensors);
  const SafetensorsFile file = load_safetensors(dir / "views.safetensors");
  for (const auto& [name, tensor] : tensors) {
    const Tensor* loaded = find(file.tensors, name);
    ASSERT_NE(loaded, nullptr) << name;
    EXPECT_TRUE(same_tensor(tensor, *loaded)) << name;
  }
  // The values of the transpose, read row by row: 0, 6, 12, 18, 1, 7, ...
  EXPECT_EQ(find(file.tensors, "transposed")->to_vector<float>()[1], 6.0f);
}

// The whole file, byte by byte, against what the format says it must be. The header was
// written by hand from the specification; the Python reference writer, given the same tensors,
// writes the same JSON except for the order of "e" and "n" (it orders by dtype, not by element
// size) and the checksum entry.
TEST(SafetensorsTest, WritesExactlyTheExpectedBytes) {
  TempDir dir;
  save_safetensors(dir / "tiny.safetensors",
                   {{"w", from_vector<float>({1.0f, -2.0f})},
                    {"n", full({}, std::int64_t{7})},
                    {"b", from_vector<bool>({true, false, true})},
                    {"e", empty({0}, DType::Float64)}},
                   {{"format", "pt"}});
  // Data: n = 7 (int64), w = 1.0f, -2.0f, b = 1, 0, 1; e holds no bytes.
  const std::string data(
      "\x07\0\0\0\0\0\0\0"
      "\0\0\x80\x3f\0\0\0\xc0"
      "\x01\0\x01",
      19);
  // crc32 of those 19 bytes is 0xaa06b71d (Python: zlib.crc32(data)).
  const std::string header =
      R"({"__metadata__":{"format":"pt","grove.data_crc32":"aa06b71d"},)"
      R"("e":{"dtype":"F64","shape":[0],"data_offsets":[0,0]},)"
      R"("n":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
      R"("w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},)"
      R"("b":{"dtype":"BOOL","shape":[3],"data_offsets":[16,19]}})"
      "   ";  // 277 bytes of JSON, padded with spaces to 280, a multiple of 8
  ASSERT_EQ(header.size(), 280u);
  const std::string expected = std::string("\x18\x01\0\0\0\0\0\0", 8) + header + data;
  EXPECT_EQ(read_bytes(dir / "tiny.safetensors"), expected);
}

// A file as `safetensors.numpy.save_file` (version 0.8) writes it, with no grove checksum.
TEST(SafetensorsTest, ReadsFilesOfOtherWritersWithoutAChecksum) {
  TempDir dir;
  const std::string header =
      R"({"__metadata__":{"k":"v"},"b":{"dtype":"I64","shape":[2],"data_offsets":[0,16]},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[16,24]},)"
      R"("z":{"dtype":"BOOL","shape":[],"data_offsets":[24,25]}}  )";
  const std::string data(
      "\x01\0\0\0\0\0\0\0\x02\0\0\0\0\0\0\0"
      "\0\0\0\0\0\0\0\0\x01",
      25);
  write_bytes(dir / "reference.safetensors", safetensors_bytes(header, data));
  const SafetensorsFile file = load_safetensors(dir / "reference.safetensors");
  EXPECT_FALSE(file.checksum_verified);
  EXPECT_EQ(file.metadata, (std::map<std::string, std::string>{{"k", "v"}}));
  ASSERT_EQ(file.tensors.size(), 3u);
  EXPECT_EQ(file.tensors[0].first, "b");
  EXPECT_EQ(file.tensors[0].second.to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(file.tensors[1].first, "a");
  EXPECT_EQ(file.tensors[1].second.to_vector<float>(), (std::vector<float>{0.0f, 0.0f}));
  EXPECT_EQ(file.tensors[2].first, "z");
  EXPECT_EQ(file.tensors[2].second.dim(), 0);
  EXPECT_TRUE(file.tensors[2].second.item<bool>());
}

TEST(SafetensorsTest, MetadataAndNamesSurviveJsonEscaping) {
  TempDir dir;
  const std::map<std::string, std::string> metadata = {{"quotes", "say \"hi\"\\ now"},
                                                       {"lines", "one\ntwo\tthree"},
                                                       {"unicode", "\xc3\xa9t\xc3\xa9"},
                                                       {"empty", ""}};
  save_safetensors(dir / "escaped.safetensors", {{"layer.0/\"w\"\n", ones({1})}}, metadata);
  const SafetensorsFile file = load_safetensors(dir / "escaped.safetensors");
  EXPECT_EQ(file.metadata, metadata);
  ASSERT_EQ(file.tensors.size(), 1u);
  EXPECT_EQ(file.tensors[0].first, "layer.0/\"w\"\n");
}

TEST(SafetensorsTest, AFileWithoutTensorsRoundTrips) {
  TempDir dir;
  save_safetensors(dir / "none.safetensors", {}, {{"note", "metadata only"}});
  const SafetensorsFile file = load_safetensors(dir / "none.safetensors");
  EXPECT_TRUE(file.tensors.empty());
  EXPECT_TRUE(file.checksum_verified);
  EXPECT_EQ(file.metadata.at("note"), "metadata only");
}

TEST(SafetensorsTest, SaveRefusesBadNamesAndMetadataBeforeWritingAnything) {
  TempDir dir;
  const std::filesystem::path path = dir / "refused.safetensors";
  const Tensor x = ones({2});
  EXPECT_NE(error_of([&] {
              save_safetensors(path, {{"", x}});
            }).find("has an empty one"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              save_safetensors(path, {{"a", x}, {"b", x}, {"a", x}});
            }).find("expected unique names, but 'a' names tensors #0 and #2"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              save_safetensors(path, {{"__metadata__", x}});
            }).find("reserves"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              save_safetensors(path, {{"w", Tensor()}});
            }).find("tensor 'w' is undefined"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              save_safetensors(path, {{"\xff\xfe", x}});
            }).find("not valid UTF-8"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              save_safetensors(path, {{"w", x}}, {{"k", "\xc3"}});
            }).find("metadata entry 'k' is not valid UTF-8"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              save_safetensors(path, {{"w", x}}, {{"grove.data_crc32", "0"}});
            }).find("is reserved"),
            std::string::npos);
  EXPECT_TRUE(dir.entries().empty());  // neither the file nor a temporary one was created
}

TEST(SafetensorsTest, DTypeNamesAreTheSafetensorsOnes) {
  EXPECT_EQ(safetensors_dtype_name(DType::Float32), "F32");
  EXPECT_EQ(safetensors_dtype_name(DType::Float64), "F64");
  EXPECT_EQ(safetensors_dtype_name(DType::Int64), "I64");
  EXPECT_EQ(safetensors_dtype_name(DType::Int32), "I32");
  EXPECT_EQ(safetensors_dtype_name(DType::Bool), "BOOL");
  EXPECT_EQ(safetensors_dtype_name(DType::BFloat16), "BF16");
  EXPECT_EQ(safetensors_dtype_name(DType::Float16), "F16");
}

}  // namespace
}  // namespace grove::checkpoint
