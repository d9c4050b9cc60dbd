// Tests of the text corpus (models/data/text_corpus.h): concatenation, clipping, the split,
// the errors, encode/decode, the window sampler (targets shifted by one, the whole range of
// starts, determinism for a seed), and the default corpus when it is present.
#include "models/data/text_corpus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "tests/models/data/data_test_util.h"

namespace grove::data {
namespace {

using testing::error_of;
using testing::TempDir;
using testing::write_bytes;

std::vector<std::uint8_t> bytes_of(const std::string& text) {
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

TEST(TextCorpusTest, ConcatenatesInOrderClipsAndSplits) {
  TempDir dir;
  write_bytes(dir / "b", bytes_of("hello "));
  write_bytes(dir / "a", {'w', 200, 'r', 255, 128, 127});  // three bytes above 127
  const TextCorpus corpus = load_text_corpus({dir / "b", dir / "a"}, 0.25);
  ASSERT_EQ(corpus.size(), 12);
  EXPECT_EQ(corpus.clipped_bytes, 3);
  EXPECT_EQ(corpus.tokens.dtype(), DType::Int64);
  EXPECT_EQ(
      corpus.tokens.to_vector<std::int64_t>(),
      (std::vector<std::int64_t>{'h', 'e', 'l', 'l', 'o', ' ', 'w', 127, 'r', 127, 127, 127}));
  // int((1 - 0.25) * 12) = 9 training tokens, the last 3 for validation.
  EXPECT_EQ(corpus.train.numel(), 9);
  EXPECT_EQ(corpus.validation.numel(), 3);
  EXPECT_EQ(corpus.validation.to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{127, 127, 127}));
  EXPECT_TRUE(corpus.train.is_alias_of(corpus.tokens));
  EXPECT_EQ(corpus.paths, (std::vector<std::filesystem::path>{dir / "b", dir / "a"}));
}

TEST(TextCorpusTest, SplitSizesFollowPythonsTruncation) {
  TempDir dir;
  write_bytes(dir / "text", std::vector<std::uint8_t>(1001, 'x'));
  const TextCorpus corpus = load_text_corpus({dir / "text"});
  EXPECT_EQ(corpus.train.numel(), 900);  // int(0.9 * 1001) = int(900.9)
  EXPECT_EQ(corpus.validation.numel(), 101);
  const TextCorpus all_train = load_text_corpus({dir / "text"}, 0.0);
  EXPECT_EQ(all_train.train.numel(), 1001);
  EXPECT_EQ(all_train.validation.numel(), 0);
}

// An llm.c token shard: the 256-int32 header (magic, version, count), then uint16 ids.
std::vector<std::uint8_t> token_file(const std::vector<std::uint16_t>& ids,
                                     std::int32_t version = 1, std::int64_t count = -1) {
  std::vector<std::uint8_t> bytes(kTokenFileHeaderInts * 4, 0);
  const auto put = [&](std::size_t index, std::int64_t value) {
    const auto word = static_cast<std::uint32_t>(value);
    for (int b = 0; b < 4; ++b) bytes[4 * index + b] = static_cast<std::uint8_t>(word >> (8 * b));
  };
  put(0, kTokenFileMagic);
  put(1, version);
  put(2, count < 0 ? static_cast<std::int64_t>(ids.size()) : count);
  for (const std::uint16_t id : ids) {
    bytes.push_back(static_cast<std::uint8_t>(id & 0xff));
    bytes.push_back(static_cast<std::uint8_t>(id >> 8));
  }
  return bytes;
}

TEST(TextCorpusTest, TokenFilesAreReadAsIdsAndSplit) {
  TempDir dir;
  const std::vector<std::uint16_t> ids = {5, 50256, 0, 300, 65535, 7, 8, 9, 10, 11};
  write_bytes(dir / "shard.bin", token_file(ids));
  write_bytes(dir / "text.txt", bytes_of("hello"));
  EXPECT_TRUE(is_token_file(dir / "shard.bin"));
  EXPECT_FALSE(is_token_file(dir / "text.txt"));
  EXPECT_FALSE(is_token_file(dir / "missing.bin"));
  const TextCorpus corpus = load_token_file(dir / "shard.bin");
  EXPECT_FALSE(corpus.is_text);
  EXPECT_EQ(corpus.vocab_needed, 65536);
  EXPECT_EQ(corpus.tokens.to_vector<std::int64_t>(),
            std::vector<std::int64_t>(ids.begin(), ids.end()));
  EXPECT_EQ(corpus.train.numel(), 9);  // int(0.9 * 10)
  EXPECT_EQ(corpus.validation.numel(), 1);
  EXPECT_NEAR(unigram_entropy(corpus.tokens), std::log(10.0), 1e-12);  // ten distinct ids

  write_bytes(dir / "v2.bin", token_file(ids, 2));
  EXPECT_THAT(error_of([&] { load_token_file(dir / "v2.bin"); }),
              ::testing::HasSubstr("is version 2 of the format; grove reads version 1"));
  write_bytes(dir / "short.bin", token_file(ids, 1, 11));
  EXPECT_THAT(error_of([&] { load_token_file(dir / "short.bin"); }),
              ::testing::HasSubstr("'s header says 11 tokens (1046 bytes with the header), but "
                                   "the file has 1044 bytes"));
  EXPECT_THAT(error_of([&] { load_token_file(dir / "text.txt"); }),
              ::testing::HasSubstr("does not start with a token file's header"));
  write_bytes(dir / "empty.bin", token_file({}));
  EXPECT_THAT(error_of([&] { load_token_file(dir / "empty.bin"); }),
              ::testing::HasSubstr("header says 0 tokens"));
}

TEST(TextCorpusTest, Errors) {
  TempDir dir;
  const std::string none = error_of([] { load_text_corpus({}); });
  EXPECT_NE(none.find("expected at least one file"), std::string::npos) << none;

  write_bytes(dir / "good", bytes_of("text"));
  const std::string missing = error_of([&] { load_text_corpus({dir / "good", dir / "gone"}); });
  EXPECT_NE(missing.find((dir / "gone").string()), std::string::npos) << missing;

  const std::string directory = error_of([&] { load_text_corpus({dir.path()}); });
  EXPECT_NE(directory.find("is a directory"), std::string::npos) << directory;

  const std::string fraction = error_of([&] { load_text_corpus({dir / "good"}, 1.0); });
  EXPECT_NE(fraction.find("val_fraction in [0, 1)"), std::string::npos) << fraction;

  write_bytes(dir / "empty", {});
  const std::string empty_text = error_of([&] { load_text_corpus({dir / "empty"}); });
  EXPECT_NE(empty_text.find("expected some text"), std::string::npos) << empty_text;
}

TEST(TextCorpusTest, EncodeAndDecode) {
  const Tensor tokens = encode("Hi!\xC3\xA9");  // UTF-8 e-acute: two bytes above 127
  EXPECT_EQ(tokens.to_vector<std::int64_t>(), (std::vector<std::int64_t>{'H', 'i', '!', 127, 127}));
  EXPECT_EQ(decode(encode("round trip")), "round trip");
  EXPECT_EQ(decode(encode("ab").view({1, 2})), "ab");  // any shape, row-major

  const std::string bad = error_of([] { decode(from_vector<std::int64_t>({65, 128})); });
  EXPECT_NE(bad.find("token 1 (row-major) is 128"), std::string::npos) << bad;
  const std::string dtype = error_of([] { decode(from_vector<float>({65.0f})); });
  EXPECT_NE(dtype.find("expected int64 tokens"), std::string::npos) << dtype;
}

// Tokens 0, 1, ..., count - 1: a window's values say where it starts.
Tensor counting_tokens(std::int64_t count) {
  std::vector<std::int64_t> values(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) values[static_cast<std::size_t>(i)] = i;
  return from_vector(values);
}

TEST(TextCorpusTest, WindowsAreConsecutiveAndTargetsAreShiftedByOne) {
  const Tensor tokens = counting_tokens(100);
  Generator generator(1234);
  const Windows windows = sample_windows(tokens, 8, 16, generator);
  EXPECT_EQ(windows.inputs.sizes().vec(), (std::vector<std::int64_t>{8, 16}));
  EXPECT_EQ(windows.targets.sizes().vec(), (std::vector<std::int64_t>{8, 16}));
  EXPECT_EQ(windows.inputs.dtype(), DType::Int64);
  const std::vector<std::int64_t> inputs = windows.inputs.to_vector<std::int64_t>();
  const std::vector<std::int64_t> targets = windows.targets.to_vector<std::int64_t>();
  for (std::size_t b = 0; b < 8; ++b) {
    const std::int64_t start = inputs[b * 16];
    EXPECT_LE(start, 100 - 16 - 1);
    for (std::size_t t = 0; t < 16; ++t) {
      EXPECT_EQ(inputs[b * 16 + t], start + static_cast<std::int64_t>(t));
      EXPECT_EQ(targets[b * 16 + t], start + static_cast<std::int64_t>(t) + 1);
    }
  }
}

TEST(TextCorpusTest, StartsCoverTheWholeRange) {
  // 10 tokens, block 3: starts 0..6. 400 draws miss one of 7 values with probability
  // 7 * (6/7)^400 < 1e-25.
  const Tensor tokens = counting_tokens(10);
  Generator generator(5);
  const Windows windows = sample_windows(tokens, 400, 3, generator);
  const std::vector<std::int64_t> inputs = windows.inputs.to_vector<std::int64_t>();
  std::set<std::int64_t> starts;
  for (std::size_t b = 0; b < 400; ++b) starts.insert(inputs[b * 3]);
  EXPECT_EQ(starts, (std::set<std::int64_t>{0, 1, 2, 3, 4, 5, 6}));
}

TEST(TextCorpusTest, WindowsAreDeterministicForASeed) {
  const Tensor tokens = counting_tokens(1000);
  Generator first(42);
  Generator second(42);
  Generator other(43);
  const auto a = sample_windows(tokens, 5, 8, first).inputs.to_vector<std::int64_t>();
  const auto b = sample_windows(tokens, 5, 8, second).inputs.to_vector<std::int64_t>();
  const auto c = sample_windows(tokens, 5, 8, other).inputs.to_vector<std::int64_t>();
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // The generator advances: the next batch is another one.
  const auto next = sample_windows(tokens, 5, 8, first).inputs.to_vector<std::int64_t>();
  EXPECT_NE(a, next);
  EXPECT_EQ(next, sample_windows(tokens, 5, 8, second).inputs.to_vector<std::int64_t>());
}

TEST(TextCorpusTest, WindowErrors) {
  Generator generator(1);
  const std::string short_text =
      error_of([&] { sample_windows(counting_tokens(5), 2, 5, generator); });
  EXPECT_NE(short_text.find("needs 6 tokens"), std::string::npos) << short_text;
  EXPECT_NE(short_text.find("has only 5"), std::string::npos) << short_text;
  const std::string batch = error_of([&] { sample_windows(counting_tokens(50), 0, 5, generator); });
  EXPECT_NE(batch.find("batch >= 1"), std::string::npos) << batch;
  const std::string dtype = error_of([&] {
    sample_windows(from_vector<float>({1, 2, 3}), 1, 1, generator);
  });
  EXPECT_NE(dtype.find("1-d int64 tokens on the CPU"), std::string::npos) << dtype;
}

TEST(TextCorpusTest, DefaultCorpusWhenPresent) {
  const std::vector<std::filesystem::path> paths = default_corpus_paths();
  if (paths.empty()) {
    GTEST_SKIP() << default_corpus_dir().string() << " is missing or empty (Debian base-files)";
  }
  std::uintmax_t bytes = 0;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    EXPECT_EQ(paths[i].parent_path(), default_corpus_dir());
    EXPECT_FALSE(std::filesystem::is_symlink(paths[i])) << paths[i];
    if (i > 0) {
      EXPECT_LT(paths[i - 1].filename().string(), paths[i].filename().string());
    }
    bytes += std::filesystem::file_size(paths[i]);
  }
  const TextCorpus corpus = load_text_corpus(paths);
  EXPECT_EQ(corpus.size(), static_cast<std::int64_t>(bytes));
  EXPECT_EQ(corpus.train.numel() + corpus.validation.numel(), corpus.size());
  // Debian 12's base-files: the size the reference harness reports.
  std::ifstream version("/etc/debian_version");
  std::string line;
  if (std::getline(version, line) && line.rfind("12.", 0) == 0) {
    EXPECT_EQ(corpus.size(), 237320);
  }
}

}  // namespace
}  // namespace grove::data
