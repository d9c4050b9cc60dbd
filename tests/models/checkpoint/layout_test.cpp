// check_same_layout: equal layouts pass in any order; every kind of difference is listed in
// one message (missing, unexpected, mis-shaped by shape or dtype, names given twice), long lists
// are cut, and it applies to a file read back from disk.
#include <gtest/gtest.h>

#include <string>

#include "core/tensor.h"
#include "models/checkpoint/layout.h"
#include "tests/models/checkpoint/checkpoint_test_util.h"

namespace grove::checkpoint {
namespace {

using testing::error_of;
using testing::TempDir;

#define EXPECT_MESSAGE_HAS(message, text) \
  EXPECT_NE((message).find(text), std::string::npos) << "message: " << (message)

TEST(LayoutTest, SameLayoutInAnyOrderPasses) {
  const NamedTensors expected = {{"weight", zeros({2, 3})}, {"step", zeros({}, DType::Int64)}};
  const NamedTensors found = {{"step", full({}, std::int64_t{9})}, {"weight", ones({2, 3})}};
  EXPECT_NO_THROW(check_same_layout(expected, found, "test"));
  EXPECT_NO_THROW(check_same_layout({}, {}, "test"));
}

TEST(LayoutTest, ListsEveryDifferenceAtOnce) {
  const NamedTensors expected = {
      {"a", zeros({2})}, {"b", zeros({2, 3})}, {"c", zeros({4})}, {"d", zeros({1})}};
  const NamedTensors found = {{"b", zeros({3, 2})},
                              {"c", zeros({4}, DType::Float64)},
                              {"d", zeros({1})},
                              {"e", zeros({5})}};
  const std::string message =
      error_of([&] { check_same_layout(expected, found, "checkpoint 'x.safetensors', model"); });
  EXPECT_EQ(message.rfind("checkpoint 'x.safetensors', model: ", 0), 0u) << message;
  EXPECT_MESSAGE_HAS(message, "missing (1): 'a'");
  EXPECT_MESSAGE_HAS(message, "unexpected (1): 'e'");
  EXPECT_MESSAGE_HAS(message,
                     "mis-shaped (2): 'b' (expected [2, 3] float32, found [3, 2] float32), "
                     "'c' (expected [4] float32, found [4] float64)");
  EXPECT_EQ(message.find("'d'"), std::string::npos) << message;  // d matches
}

TEST(LayoutTest, NamesGivenTwiceAreReported) {
  const NamedTensors expected = {{"a", zeros({1})}};
  const NamedTensors found = {{"a", zeros({1})}, {"a", zeros({1})}};
  EXPECT_MESSAGE_HAS(error_of([&] { check_same_layout(expected, found, "test"); }),
                     "named twice in the found set: 'a'");
}

TEST(LayoutTest, LongListsAreCut) {
  NamedTensors expected;
  for (int i = 0; i < 25; ++i) {
    std::string name = std::to_string(i);
    name.insert(0, 1, 'p');  // not "p" + ...: GCC 12 -O3 reports a false -Wrestrict on that
    expected.emplace_back(name, zeros({1}));
  }
  const std::string message = error_of([&] { check_same_layout(expected, {}, "test"); });
  EXPECT_MESSAGE_HAS(message, "missing (25): 'p0', 'p1'");
  EXPECT_MESSAGE_HAS(message, "'p19', ... and 5 more");
  EXPECT_EQ(message.find("'p20'"), std::string::npos) << message;
}

TEST(LayoutTest, ChecksAFileAgainstTheTensorsItWasSavedFrom) {
  TempDir dir;
  const NamedTensors model = {{"linear.weight", zeros({4, 2})}, {"linear.bias", zeros({4})}};
  save_safetensors(dir / "model.safetensors", model);
  EXPECT_NO_THROW(check_same_layout(model, load_safetensors(dir / "model.safetensors").tensors,
                                    "model.safetensors"));
  const NamedTensors bigger = {{"linear.weight", zeros({8, 2})}, {"linear.bias", zeros({8})}};
  EXPECT_MESSAGE_HAS(error_of([&] {
                       check_same_layout(bigger,
                                         load_safetensors(dir / "model.safetensors").tensors,
                                         "model.safetensors");
                     }),
                     "'linear.weight' (expected [8, 2] float32, found [4, 2] float32)");
}

}  // namespace
}  // namespace grove::checkpoint
