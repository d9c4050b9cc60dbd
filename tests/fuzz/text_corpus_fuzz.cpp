// Fuzz target: the text corpus (models/data/text_corpus.h): loading a file, the split, the window
// sampler, the unigram entropy and the token round trip.
//
// The input: byte 0 sets the validation fraction (byte / 256, in [0, 1)), byte 1 the block
// (1..64), byte 2 the batch (1..8); the rest is the text file. What loads must keep the
// header's promises: tokens in 0..127, train and validation adding up to the text, windows
// whose targets are their inputs shifted by one, and decode(encode(text)) equal to the text
// wherever it is ASCII.
#include <cmath>
#include <cstdint>
#include <string_view>

#include "models/data/text_corpus.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  static const grove::fuzz::ScratchPath file("text_corpus");
  const double val_fraction = data[0] / 256.0;
  const std::int64_t block = data[1] % 64 + 1;
  const std::int64_t batch = data[2] % 8 + 1;
  const std::string_view text(reinterpret_cast<const char*>(data + 3), size - 3);
  grove::fuzz::write_file(file.path(), data + 3, size - 3);
  grove::fuzz::expect_only_grove_errors([&] {
    const grove::data::TextCorpus corpus =
        grove::data::load_text_corpus({file.path()}, val_fraction);
    const std::int64_t total = corpus.size();
    FUZZ_CHECK(total == static_cast<std::int64_t>(text.size()));
    FUZZ_CHECK(corpus.train.numel() + corpus.validation.numel() == total);
    std::int64_t clipped = 0;
    const std::int64_t* tokens = corpus.tokens.data<std::int64_t>();
    for (std::int64_t i = 0; i < total; ++i) {
      FUZZ_CHECK(tokens[i] >= 0 && tokens[i] < grove::data::kCorpusVocabSize);
      clipped += static_cast<std::uint8_t>(text[static_cast<std::size_t>(i)]) > 127;
    }
    FUZZ_CHECK(clipped == corpus.clipped_bytes);
    if (clipped == 0) FUZZ_CHECK(grove::data::decode(corpus.tokens) == text);
    const double entropy = grove::data::unigram_entropy(corpus.train);
    FUZZ_CHECK(std::isfinite(entropy) && entropy >= 0 && entropy <= std::log(128.0) + 1e-9);

    grove::Generator generator(data[0]);
    const grove::data::Windows windows =
        grove::data::sample_windows(corpus.train, batch, block, generator);
    const std::int64_t* inputs = windows.inputs.data<std::int64_t>();
    const std::int64_t* targets = windows.targets.data<std::int64_t>();
    for (std::int64_t b = 0; b < batch; ++b) {
      for (std::int64_t t = 0; t + 1 < block; ++t) {
        FUZZ_CHECK(targets[b * block + t] == inputs[b * block + t + 1]);
      }
    }
  });
  return 0;
}
