// load_safetensors refuses every malformed file with a message naming the path and what is
// wrong: files written by hand (bad headers, bad offsets) and good files damaged afterwards
// (truncated, appended to, one data byte flipped).
//
// What it is not: the round trips (safetensors_test.cpp).
#include <gtest/gtest.h>

#include <string>

#include "core/tensor.h"
#include "models/checkpoint/safetensors.h"
#include "tests/models/checkpoint/checkpoint_test_util.h"

namespace grove::checkpoint {
namespace {

using testing::error_of;
using testing::read_bytes;
using testing::safetensors_bytes;
using testing::TempDir;
using testing::u64_bytes;
using testing::write_bytes;

class SafetensorsRefusalTest : public ::testing::Test {
 protected:
  // Writes `bytes` to a fresh file and returns load's error message for it.
  std::string load_error(const std::string& bytes) {
    const std::filesystem::path path = dir_ / ("file" + std::to_string(count_++));
    write_bytes(path, bytes);
    const std::string message = error_of([&] { load_safetensors(path); });
    EXPECT_NE(message.find(path.string()), std::string::npos) << "no path in: " << message;
    return message;
  }
  // A file with one entry whose JSON text is `entry` and `data` as the data section.
  std::string entry_error(const std::string& entry,
                          const std::string& data = std::string(8, '\0')) {
    return load_error(safetensors_bytes(R"({"t":)" + entry + "}", data));
  }
  // A good grove file's bytes: x (float32, 4 elements) and y (int64, 2 elements).
  std::string good_file() {
    const std::filesystem::path path = dir_ / "good.safetensors";
    save_safetensors(
        path, {{"x", from_vector<float>({1, 2, 3, 4})}, {"y", from_vector<std::int64_t>({5, 6})}});
    return read_bytes(path);
  }

  TempDir dir_;
  int count_ = 0;
};

#define EXPECT_MESSAGE_HAS(message, text) \
  EXPECT_NE((message).find(text), std::string::npos) << "message: " << (message)

TEST_F(SafetensorsRefusalTest, MissingFileAndDirectory) {
  const std::string missing = error_of([&] { load_safetensors(dir_ / "absent.safetensors"); });
  EXPECT_MESSAGE_HAS(missing, "absent.safetensors");
  EXPECT_MESSAGE_HAS(missing, "does not exist");
  EXPECT_MESSAGE_HAS(error_of([&] { load_safetensors(dir_.path()); }), "not a regular file");
}

TEST_F(SafetensorsRefusalTest, ShorterThanTheLengthField) {
  EXPECT_MESSAGE_HAS(load_error(""), "shorter than the 8-byte header length");
  EXPECT_MESSAGE_HAS(load_error(std::string("\x02\0\0\0", 4)), "the file is 4 bytes, shorter");
}

TEST_F(SafetensorsRefusalTest, HeaderLengthBeyondTheFile) {
  EXPECT_MESSAGE_HAS(load_error(u64_bytes(100) + "{}"),
                     "header length is 100 bytes, beyond the file");
  EXPECT_MESSAGE_HAS(load_error(u64_bytes(~std::uint64_t{0}) + "{}"), "beyond the file");
}

TEST_F(SafetensorsRefusalTest, HeaderNotAJsonObject) {
  EXPECT_MESSAGE_HAS(load_error(safetensors_bytes("{\"a\": [1, 2", "")), "not valid JSON");
  EXPECT_MESSAGE_HAS(load_error(safetensors_bytes("\x89PNG\r\n\x1a\n", "")), "not valid JSON");
  // A number too large for a double is nlohmann-json's out_of_range, not a parse_error; it
  // escaped the reader as a foreign exception until the fuzzer found it
  // (tests/fuzz/crashes/safetensors/header_number_overflow).
  EXPECT_MESSAGE_HAS(load_error(safetensors_bytes("{\"a\": 8E888}", "")),
                     "not valid JSON ([json.exception.out_of_range.406] number overflow");
  EXPECT_MESSAGE_HAS(load_error(safetensors_bytes("[1, 2]  ", "")),
                     "the header is a JSON array, expected an object");
  EXPECT_MESSAGE_HAS(load_error(safetensors_bytes(R"({"__metadata__":{"k":3}})", "")),
                     "metadata entry 'k' is a number, expected a string");
  EXPECT_MESSAGE_HAS(load_error(safetensors_bytes(R"({"__metadata__":[]})", "")),
                     "\"__metadata__\" is a array");
}

TEST_F(SafetensorsRefusalTest, EntriesWithoutTheirFields) {
  EXPECT_MESSAGE_HAS(entry_error(R"({"shape":[2],"data_offsets":[0,8]})"),
                     "entry 't' has no \"dtype\"");
  EXPECT_MESSAGE_HAS(entry_error(R"({"dtype":"F32","data_offsets":[0,8]})"),
                     "entry 't' has no \"shape\"");
  EXPECT_MESSAGE_HAS(entry_error(R"({"dtype":"F32","shape":[2]})"),
                     "entry 't' has no \"data_offsets\"");
  EXPECT_MESSAGE_HAS(entry_error("7"), "entry 't' is a number, expected an object");
}

TEST_F(SafetensorsRefusalTest, BadFieldValues) {
  EXPECT_MESSAGE_HAS(entry_error(R"({"dtype":"F17","shape":[2],"data_offsets":[0,8]})"),
                     "tensor 't' has unknown dtype \"F17\"");
  EXPECT_MESSAGE_HAS(entry_error(R"({"dtype":32,"shape":[2],"data_offsets":[0,8]})"),
                     "\"dtype\" is a number, expected a string");
  // A real safetensors dtype that grove's core cannot hold yet.
  const std::string uint8 = entry_error(R"({"dtype":"U8","shape":[8],"data_offsets":[0,8]})");
  EXPECT_MESSAGE_HAS(uint8, "tensor 't' has dtype U8, which grove cannot hold");
  EXPECT_MESSAGE_HAS(entry_error(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})"),
                     "expected an array of non-negative integers");
  EXPECT_MESSAGE_HAS(entry_error(R"({"dtype":"F32","shape":[2.0],"data_offsets":[0,8]})"),
                     "expected an array of non-negative integers");
  EXPECT_MESSAGE_HAS(entry_error(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})"),
                     "expected [begin, end]");
}

TEST_F(SafetensorsRefusalTest, OffsetsThatDoNotMatchTheShape) {
  EXPECT_MESSAGE_HAS(entry_error(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})"),
                     "data_offsets [0, 8] hold 8 bytes, but shape [3] of F32 needs 12 bytes");
  EXPECT_MESSAGE_HAS(
      entry_error(R"({"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]})"),
      "needs more than 2^64 bytes");
  EXPECT_MESSAGE_HAS(entry_error(R"({"dtype":"F32","shape":[2],"data_offsets":[8,0]})"),
                     "whose begin is after its end");
}

TEST_F(SafetensorsRefusalTest, OverlapsGapsAndOutOfRangeOffsets) {
  const std::string data(16, '\0');
  EXPECT_MESSAGE_HAS(
      load_error(safetensors_bytes(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},)"
                                   R"("b":{"dtype":"F64","shape":[1],"data_offsets":[4,12]}})",
                                   data)),
      "tensors 'a' [0, 8] and 'b' [4, 12] have overlapping data_offsets");
  EXPECT_MESSAGE_HAS(
      load_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                   R"("b":{"dtype":"F64","shape":[1],"data_offsets":[8,16]}})",
                                   data)),
      "bytes [4, 8) of the data belong to no tensor (after 'a', before 'b')");
  EXPECT_MESSAGE_HAS(load_error(safetensors_bytes(
                         R"({"a":{"dtype":"F64","shape":[2],"data_offsets":[8,24]}})", data)),
                     "out of range: the data section has only 16 bytes");
}

TEST_F(SafetensorsRefusalTest, TruncatedFile) {
  std::string bytes = good_file();
  bytes.resize(bytes.size() - 3);
  EXPECT_MESSAGE_HAS(load_error(bytes), "out of range");
  EXPECT_MESSAGE_HAS(load_error(bytes), "truncated");
}

TEST_F(SafetensorsRefusalTest, TrailingBytes) {
  EXPECT_MESSAGE_HAS(load_error(good_file() + "junk"), "4 trailing bytes follow the last tensor");
}

TEST_F(SafetensorsRefusalTest, FlippedDataByteFailsTheChecksum) {
  std::string bytes = good_file();
  ASSERT_NO_THROW(load_safetensors(dir_ / "good.safetensors"));  // intact, it loads
  bytes[bytes.size() - 2] ^= 0x10;  // a bit of x's last element (x comes after y in the data)
  const std::string message = load_error(bytes);
  EXPECT_MESSAGE_HAS(message,
                     "the data does not match its checksum: the file is corrupt or was changed "
                     "after grove wrote it");
}

TEST_F(SafetensorsRefusalTest, MalformedChecksumEntry) {
  EXPECT_MESSAGE_HAS(
      load_error(safetensors_bytes(R"({"__metadata__":{"grove.data_crc32":"xyz"}})", "")),
      "expected 8 hex digits");
}

TEST_F(SafetensorsRefusalTest, BoolBytesOtherThanZeroOrOne) {
  EXPECT_MESSAGE_HAS(
      load_error(safetensors_bytes(R"({"b":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                                   std::string("\x01\x00\x02", 3))),
      "tensor 'b' (BOOL) holds the byte 2 at element 2, expected 0 or 1");
}

}  // namespace
}  // namespace grove::checkpoint
