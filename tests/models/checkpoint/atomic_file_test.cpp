// Atomic replacement (AtomicFileWriter, write_file_atomically) and the atomicity of
// save_safetensors: a write that fails at any point, before or after the temporary file exists,
// leaves the previous file byte-identical and no temporary file behind.
//
// What it is not: a test of durability across a power cut (fsync cannot be observed from a
// test); it checks the calls' visible effects.
#include <gtest/gtest.h>

#include <string>

#include "core/tensor.h"
#include "models/checkpoint/atomic_file.h"
#include "models/checkpoint/safetensors.h"
#include "tests/models/checkpoint/checkpoint_test_util.h"

namespace grove::checkpoint {
namespace {

using testing::error_of;
using testing::read_bytes;
using testing::TempDir;

using Names = std::vector<std::string>;

#define EXPECT_MESSAGE_HAS(message, text) \
  EXPECT_NE((message).find(text), std::string::npos) << "message: " << (message)

TEST(AtomicFileTest, WritesAndReplacesAFile) {
  TempDir dir;
  write_file_atomically(dir / "plot.svg", "first");
  EXPECT_EQ(read_bytes(dir / "plot.svg"), "first");
  write_file_atomically(dir / "plot.svg", std::string("se\0cond", 7));
  EXPECT_EQ(read_bytes(dir / "plot.svg"), std::string("se\0cond", 7));
  write_file_atomically(dir / "plot.svg", "");
  EXPECT_EQ(read_bytes(dir / "plot.svg"), "");
  EXPECT_EQ(dir.entries(), Names{"plot.svg"});
}

TEST(AtomicFileTest, TheTargetIsUntouchedUntilCommit) {
  TempDir dir;
  write_file_atomically(dir / "state.json", "old");
  AtomicFileWriter writer(dir / "state.json");
  writer.write("new contents");
  // While writing, the old file is intact and the new bytes live in a hidden temporary file.
  EXPECT_EQ(read_bytes(dir / "state.json"), "old");
  const Names entries = dir.entries();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].rfind(".state.json.grove-tmp.", 0), 0u) << entries[0];
  EXPECT_EQ(writer.temporary_path().filename().string(), entries[0]);
  EXPECT_EQ(read_bytes(writer.temporary_path()), "new contents");
  writer.commit();
  EXPECT_EQ(read_bytes(dir / "state.json"), "new contents");
  EXPECT_EQ(dir.entries(), Names{"state.json"});
}

TEST(AtomicFileTest, AWriterDroppedBeforeCommitLeavesTheOldFile) {
  TempDir dir;
  write_file_atomically(dir / "state.json", "old");
  {
    AtomicFileWriter writer(dir / "state.json");
    writer.write("half of the new");
  }  // e.g. an exception unwinding through the writer
  EXPECT_EQ(read_bytes(dir / "state.json"), "old");
  EXPECT_EQ(dir.entries(), Names{"state.json"});
}

TEST(AtomicFileTest, WriteAtPatchesEarlierBytesOnly) {
  TempDir dir;
  AtomicFileWriter writer(dir / "patched");
  writer.write("header:????;data");
  writer.write_at(7, "1234", 4);
  EXPECT_EQ(writer.bytes_written(), 16u);
  EXPECT_MESSAGE_HAS(error_of([&] { writer.write_at(14, "xyz", 3); }),
                     "within the 16 bytes written so far");
  writer.commit();
  EXPECT_EQ(read_bytes(dir / "patched"), "header:1234;data");
  EXPECT_MESSAGE_HAS(error_of([&] { writer.write("more"); }), "already committed or failed");
  EXPECT_MESSAGE_HAS(error_of([&] { writer.commit(); }), "already committed or failed");
}

TEST(AtomicFileTest, TwoWritersOfOnePathUseDifferentTemporaryFiles) {
  TempDir dir;
  AtomicFileWriter first(dir / "shared");
  AtomicFileWriter second(dir / "shared");
  EXPECT_NE(first.temporary_path(), second.temporary_path());
  first.write("first");
  second.write("second");
  first.commit();
  second.commit();  // the last rename wins
  EXPECT_EQ(read_bytes(dir / "shared"), "second");
  EXPECT_EQ(dir.entries(), Names{"shared"});
}

TEST(AtomicFileTest, RefusesMissingDirectoriesAndPathsWithoutAFileName) {
  TempDir dir;
  const std::string missing =
      error_of([&] { write_file_atomically(dir / "no_such_dir" / "file", "bytes"); });
  EXPECT_MESSAGE_HAS(missing, "cannot create a temporary file in");
  EXPECT_MESSAGE_HAS(missing, "No such file or directory");
  EXPECT_MESSAGE_HAS(error_of([&] { write_file_atomically(dir.path() / "", "bytes"); }),
                     "expected the path of a file");
  EXPECT_TRUE(dir.entries().empty());
}

TEST(AtomicFileTest, ReplacingADirectoryFailsAndCleansUp) {
  TempDir dir;
  std::filesystem::create_directory(dir / "occupied");
  write_file_atomically(dir / "occupied" / "inside", "kept");
  const std::string message = error_of([&] { write_file_atomically(dir / "occupied", "bytes"); });
  EXPECT_MESSAGE_HAS(message, "renaming");
  EXPECT_MESSAGE_HAS(message, "is unchanged and the temporary file was removed");
  EXPECT_EQ(dir.entries(), Names{"occupied"});
  EXPECT_EQ(read_bytes(dir / "occupied" / "inside"), "kept");
}

// A checkpoint on disk, to be kept intact by failed saves.
class SaveAtomicityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    save_safetensors(path_, {{"w", from_vector<float>({1, 2, 3})}}, {{"step", "1"}});
    before_ = read_bytes(path_);
  }
  void expect_untouched() {
    EXPECT_EQ(read_bytes(path_), before_);
    EXPECT_EQ(dir_.entries(), Names{"model.safetensors"});  // no temporary file left
    EXPECT_EQ(load_safetensors(path_).metadata.at("step"), "1");
  }

  TempDir dir_;
  std::filesystem::path path_ = dir_ / "model.safetensors";
  std::string before_;
};

TEST_F(SaveAtomicityTest, ABadArgumentLeavesTheOldFile) {
  const Tensor x = ones({2});
  EXPECT_MESSAGE_HAS(error_of([&] {
                       save_safetensors(path_, {{"a", x}, {"a", x}});
                     }),
                     "expected unique names");
  EXPECT_MESSAGE_HAS(error_of([&] { save_safetensors(path_, {{"a", Tensor()}}); }), "undefined");
  expect_untouched();
}

TEST_F(SaveAtomicityTest, ASaveIntoAMissingDirectoryLeavesTheOldFile) {
  EXPECT_MESSAGE_HAS(error_of([&] {
                       save_safetensors(dir_ / "missing" / "model.safetensors", {{"w", ones({2})}});
                     }),
                     "cannot create a temporary file");
  expect_untouched();
}

// The failure comes while the data is being written: the temporary file exists and holds the
// header and the first tensor when the second one cannot be read.
TEST_F(SaveAtomicityTest, AFailureInTheMiddleOfTheDataLeavesTheOldFile) {
  const Tensor readable = zeros({1000}, DType::Float64);  // written first (8-byte elements)
  const Tensor poisoned = zeros({4});                     // written second (4-byte elements)
  poisoned.storage()->set_access_error("this tensor's memory was reused");
  const std::string message = error_of([&] {
    save_safetensors(path_, {{"a", readable}, {"b", poisoned}}, {{"step", "2"}});
  });
  EXPECT_MESSAGE_HAS(message, "this tensor's memory was reused");
  expect_untouched();
}

TEST_F(SaveAtomicityTest, ASuccessfulSaveReplacesTheFileWhole) {
  save_safetensors(path_, {{"v", from_vector<std::int64_t>({4, 5})}}, {{"step", "2"}});
  const SafetensorsFile file = load_safetensors(path_);
  EXPECT_EQ(file.metadata.at("step"), "2");
  ASSERT_EQ(file.tensors.size(), 1u);
  EXPECT_EQ(file.tensors[0].first, "v");
  EXPECT_EQ(dir_.entries(), Names{"model.safetensors"});
}

}  // namespace
}  // namespace grove::checkpoint
