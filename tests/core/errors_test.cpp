// Tests that user errors are reported well: each throws grove::Error (never crashes or throws
// something else), its message names what was given and what was expected, and what() ends
// with the source location "(file.cpp:NN)" while message() holds the text without it. Also
// tests the GROVE_CHECK / GROVE_INTERNAL_ASSERT / GROVE_THROW macros themselves.
//
// Facts are checked as substrings, not whole messages, so wording can improve without breaking
// the tests; each fact listed is one a user needs to fix the call.
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "core/caching_allocator.h"
#include "core/device.h"
#include "core/error.h"
#include "core/tensor.h"

namespace grove {
namespace {

// What a call threw.
struct Outcome {
  enum class Kind { Nothing, GroveError, OtherException } kind = Kind::Nothing;
  std::string what;
  std::string message;
};

template <typename Fn>
Outcome run(Fn&& fn) {
  Outcome outcome;
  try {
    fn();
  } catch (const Error& error) {
    outcome.kind = Outcome::Kind::GroveError;
    outcome.what = error.what();
    outcome.message = error.message();
  } catch (const std::exception& error) {
    outcome.kind = Outcome::Kind::OtherException;
    outcome.what = error.what();
  }
  return outcome;
}

// The file named by the trailing "(file.cpp:NN)" of what(), or "" if there is none.
std::string location_file(const std::string& what) {
  static const std::regex location(R"( \(([A-Za-z0-9_.]+\.(cpp|cu|h)):([0-9]+)\)$)");
  std::smatch match;
  if (!std::regex_search(what, match, location)) return "";
  return match[1].str();
}

// Passes if fn throws grove::Error whose message contains every fact and whose what() is the
// message followed by a source location.
template <typename Fn>
::testing::AssertionResult FailsWith(Fn&& fn, std::initializer_list<std::string_view> facts) {
  const Outcome outcome = run(fn);
  if (outcome.kind == Outcome::Kind::Nothing) {
    return ::testing::AssertionFailure() << "no exception was thrown";
  }
  if (outcome.kind == Outcome::Kind::OtherException) {
    return ::testing::AssertionFailure() << "threw a non-grove exception: " << outcome.what;
  }
  for (std::string_view fact : facts) {
    if (outcome.message.find(fact) == std::string::npos) {
      return ::testing::AssertionFailure()
             << "the message lacks \"" << fact << "\": " << outcome.message;
    }
  }
  const std::string file = location_file(outcome.what);
  if (file.empty()) {
    return ::testing::AssertionFailure()
           << "what() does not end with \" (file.cpp:NN)\": " << outcome.what;
  }
  const std::string suffix = outcome.what.substr(outcome.what.rfind(" (" + file + ":"));
  if (outcome.what != outcome.message + suffix) {
    return ::testing::AssertionFailure()
           << "what() is not message() plus the location: " << outcome.what;
  }
  return ::testing::AssertionSuccess() << outcome.what;
}

// The file of the location in the grove::Error that fn throws.
template <typename Fn>
std::string thrown_from(Fn&& fn) {
  return location_file(run(fn).what);
}

// --- shapes ---

TEST(UserErrors, ViewWithTheWrongElementCount) {
  Tensor x = arange(6);
  EXPECT_TRUE(FailsWith([&] { x.view({4, 4}); }, {"view", "[4, 4]", "6 elements", "16"}));
  EXPECT_TRUE(FailsWith([&] { x.view({-1, 4}); }, {"view", "[-1, 4]", "6 elements"}));
  EXPECT_TRUE(FailsWith([&] { x.reshape({5}); }, {"reshape", "[5]", "6 elements"}));
  EXPECT_EQ(thrown_from([&] { x.view({4, 4}); }), "tensor_views.cpp");
}

TEST(UserErrors, ViewWithTwoInferredSizes) {
  Tensor x = arange(6);
  EXPECT_TRUE(FailsWith([&] { x.view({-1, -1}); }, {"view", "only one", "-1", "[-1, -1]"}));
}

TEST(UserErrors, ViewThatWouldNeedACopy) {
  Tensor x = arange(24).view({4, 6}).t();
  EXPECT_TRUE(
      FailsWith([&] { x.view({24}); }, {"view", "[6, 4]", "strides [1, 6]", "[24]", "reshape()"}));
}

TEST(UserErrors, NegativeSizes) {
  EXPECT_TRUE(FailsWith([] { empty({2, -3}); }, {"empty", "non-negative", "[2, -3]"}));
  EXPECT_TRUE(FailsWith([] { zeros({-1}); }, {"zeros", "non-negative", "[-1]"}));
  EXPECT_TRUE(FailsWith([] { ones({3, -2}); }, {"ones", "non-negative", "[3, -2]"}));
  EXPECT_TRUE(FailsWith([] { full({-4}, 1.5); }, {"full", "non-negative", "[-4]"}));
  EXPECT_TRUE(FailsWith([] { empty_strided({-1}, {1}); }, {"empty_strided", "[-1]"}));
  EXPECT_TRUE(FailsWith([] { arange(6).view({-2, -3}); }, {"view", "non-negative", "[-2, -3]"}));
  EXPECT_TRUE(FailsWith(
      [] {
        from_vector<float>({1, 2}, {-1, -2});
      },
      {"from_vector", "non-negative", "[-1, -2]"}));
}

// --- dimensions out of range ---

TEST(UserErrors, TransposeDimOutOfRange) {
  Tensor x = zeros({2, 3});
  EXPECT_TRUE(FailsWith([&] { x.transpose(0, 2); },
                        {"transpose", "dimension 2", "2 dimensions", "[-2, 1]"}));
  EXPECT_TRUE(FailsWith([&] { x.transpose(-3, 0); }, {"transpose", "dimension -3", "[-2, 1]"}));
}

TEST(UserErrors, SelectDimOrIndexOutOfRange) {
  Tensor x = zeros({3, 4});
  EXPECT_TRUE(FailsWith([&] { x.select(2, 0); }, {"select", "dimension 2", "[-2, 1]"}));
  EXPECT_TRUE(FailsWith([&] { x.select(0, 3); }, {"select", "index 3", "dimension 0", "size 3"}));
  EXPECT_TRUE(FailsWith([&] { x.select(1, -5); }, {"select", "index -5", "size 4"}));
  EXPECT_TRUE(FailsWith([] { full({}, 1.0).select(0, 0); }, {"select", "0-dimensional"}));
}

TEST(UserErrors, SizeAndStrideDimOutOfRange) {
  Tensor x = zeros({2, 3});
  EXPECT_TRUE(FailsWith([&] { x.size(2); }, {"size", "dimension 2", "2 dimensions", "[-2, 1]"}));
  EXPECT_TRUE(FailsWith([&] { x.size(-3); }, {"size", "dimension -3", "[-2, 1]"}));
  EXPECT_TRUE(FailsWith([&] { x.stride(5); }, {"stride", "dimension 5", "[-2, 1]"}));
}

TEST(UserErrors, SizeOfAZeroDimensionalTensor) {
  // A 0-d tensor has no dimension 0 (PyTorch: "tensor has no dimensions"); reading one would
  // read past the end of its (empty) sizes.
  Tensor x = full({}, 1.0);
  EXPECT_TRUE(FailsWith([&] { x.size(0); }, {"size", "dimension 0", "0-dimensional"}));
  EXPECT_TRUE(FailsWith([&] { x.size(-1); }, {"size", "dimension -1", "0-dimensional"}));
  EXPECT_TRUE(FailsWith([&] { x.stride(0); }, {"stride", "dimension 0", "0-dimensional"}));
}

TEST(UserErrors, UnsqueezeDimOutOfRange) {
  // unsqueeze of a 2-d tensor takes dims in [-3, 2] (positions of the new dim).
  Tensor x = zeros({2, 3});
  EXPECT_TRUE(
      FailsWith([&] { x.unsqueeze(3); }, {"unsqueeze", "dimension 3", "2 dimensions", "[-3, 2]"}));
  EXPECT_TRUE(FailsWith([&] { x.unsqueeze(-4); }, {"unsqueeze", "dimension -4", "[-3, 2]"}));
}

TEST(UserErrors, OtherDimsOutOfRange) {
  Tensor x = zeros({2, 3});
  EXPECT_TRUE(FailsWith([&] { x.squeeze(2); }, {"squeeze", "dimension 2", "[-2, 1]"}));
  EXPECT_TRUE(FailsWith([&] { x.slice(3, 0, 1); }, {"slice", "dimension 3", "[-2, 1]"}));
  EXPECT_TRUE(FailsWith([&] { x.narrow(-3, 0, 1); }, {"narrow", "dimension -3", "[-2, 1]"}));
  EXPECT_TRUE(FailsWith([&] { x.permute({0, 2}); }, {"permute", "dimension 2", "[-2, 1]"}));
  EXPECT_TRUE(FailsWith(
      [] {
        zeros({2, 3, 4}).t();
      },
      {"t()", "at most 2 dimensions", "3", "[2, 3, 4]", "transpose"}));
}

// --- dtypes and elements ---

TEST(UserErrors, DataOfTheWrongDtype) {
  Tensor x = arange(3, DType::Int64);
  EXPECT_TRUE(FailsWith([&] { x.data<float>(); }, {"data<T>()", "float32", "int64"}));
  EXPECT_TRUE(FailsWith([&] { zeros({1}).data<bool>(); }, {"data<T>()", "bool", "float32"}));
  EXPECT_EQ(thrown_from([&] { x.data<float>(); }), "tensor.cpp");
}

TEST(UserErrors, ItemOfAMultiElementTensor) {
  Tensor x = zeros({2, 3});
  EXPECT_TRUE(FailsWith([&] { x.item<float>(); },
                        {"item()", "exactly one element", "[2, 3]", "6 elements"}));
  EXPECT_TRUE(FailsWith([] { zeros({0}).item<float>(); }, {"item()", "[0]", "0 elements"}));
}

TEST(UserErrors, FromVectorWithTheWrongElementCount) {
  EXPECT_TRUE(FailsWith(
      [] {
        from_vector<float>({1, 2, 3, 4, 5}, {2, 3});
      },
      {"from_vector", "[2, 3]", "6 elements", "5 values"}));
  EXPECT_TRUE(FailsWith([] { from_vector<bool>({true}, {2}); },
                        {"from_vector", "[2]", "2 elements", "1 values"}));
}

TEST(UserErrors, RequiresGradOnAnIntegerTensor) {
  EXPECT_TRUE(FailsWith([] { zeros({2}, DType::Int64).requires_grad_(); },
                        {"requires_grad_", "floating-point", "int64"}));
}

// --- view arguments ---

TEST(UserErrors, PermuteWithARepeatedDim) {
  Tensor x = zeros({2, 3, 4});
  EXPECT_TRUE(FailsWith([&] { x.permute({0, 0, 1}); }, {"permute", "twice", "[0, 0, 1]"}));
  EXPECT_TRUE(FailsWith([&] { x.permute({2, -1, 0}); }, {"permute", "twice", "[2, -1, 0]"}));
  EXPECT_TRUE(FailsWith(
      [&] {
        x.permute({1, 0});
      },
      {"permute", "expected 3 dimensions", "[2, 3, 4]", "[1, 0]"}));
}

TEST(UserErrors, NarrowOutOfBounds) {
  Tensor x = zeros({4, 5});
  EXPECT_TRUE(FailsWith([&] { x.narrow(0, 2, 5); },
                        {"narrow", "start 2", "length 5", "dimension 0", "size 4"}));
  EXPECT_TRUE(FailsWith([&] { x.narrow(1, 1, -1); }, {"narrow", "length", "non-negative", "-1"}));
  EXPECT_TRUE(FailsWith([&] { x.narrow(1, 6, 0); }, {"narrow", "start 6", "size 5"}));
  EXPECT_TRUE(FailsWith([&] { x.narrow(0, -5, 1); }, {"narrow", "start -5", "size 4"}));
}

TEST(UserErrors, NarrowWithALengthThatWouldOverflow) {
  // start + length overflows int64; the bounds check must not be fooled into an empty view.
  const std::int64_t huge = std::numeric_limits<std::int64_t>::max();
  Tensor x = zeros({4});
  EXPECT_TRUE(FailsWith([&] { x.narrow(0, 1, huge); }, {"narrow", "start 1", "size 4"}));
}

TEST(UserErrors, SliceWithANonPositiveStep) {
  EXPECT_TRUE(FailsWith([] { arange(4).slice(0, 0, 4, 0); }, {"slice", "step", "positive", "0"}));
  EXPECT_TRUE(FailsWith([] { arange(4).slice(0, 4, 0, -1); }, {"slice", "step", "-1"}));
}

TEST(UserErrors, ExpandOfANonSingletonDim) {
  Tensor x = zeros({3});
  EXPECT_TRUE(FailsWith([&] { x.expand({4}); },
                        {"expand", "[3]", "[4]", "dimension 0", "size 3", "size-1"}));
  EXPECT_TRUE(FailsWith(
      [&] {
        zeros({2, 3}).expand({3});
      },
      {"expand", "[3]", "fewer dimensions", "[2, 3]"}));
  EXPECT_TRUE(FailsWith([&] { x.expand({-1, 3}); }, {"expand", "leading", "[-1, 3]"}));
  EXPECT_TRUE(FailsWith([&] { zeros({1}).expand({-2}); }, {"expand", "non-negative", "[-2]"}));
}

TEST(UserErrors, AsStridedBeyondTheStorage) {
  Tensor x = zeros({6});
  EXPECT_TRUE(FailsWith(
      [&] {
        x.as_strided({3, 3}, {3, 1}, 0);
      },
      {"as_strided", "[3, 3]", "[3, 1]", "element 8", "6 elements"}));
  EXPECT_TRUE(FailsWith(
      [&] {
        x.as_strided({2}, {1, 1}, 0);
      },
      {"as_strided", "1 sizes", "2 strides"}));
}

// --- copies ---

TEST(UserErrors, WritingIntoAnExpandedTensor) {
  Tensor wide = zeros({3, 1}).expand({3, 4});
  EXPECT_TRUE(FailsWith(
      [&] {
        wide.copy_(ones({3, 4}));
      },
      {"copy_", "[3, 4]", "expanded", "dimension 1", "clone()"}));
  EXPECT_TRUE(FailsWith([&] { wide.fill_(2); }, {"fill_", "[3, 4]", "expanded", "dimension 1"}));
}

TEST(UserErrors, CopyFromAShapeThatDoesNotBroadcast) {
  Tensor dst = zeros({2, 3});
  EXPECT_TRUE(FailsWith([&] { dst.copy_(zeros({4})); }, {"copy_", "[4]", "[2, 3]", "broadcast"}));
  EXPECT_TRUE(FailsWith(
      [&] {
        dst.copy_(zeros({2, 2, 3}));
      },
      {"copy_", "[2, 2, 3]", "[2, 3]", "broadcast"}));
}

TEST(UserErrors, CopyWithTooManyNonMergeableDims) {
  // 13 dims of size 2, reversed by permute, so that no two neighbours can be merged; the copy
  // kernel iterates over at most 12 (kMaxKernelDims).
  std::vector<std::int64_t> sizes(13, 2), reversed(13);
  for (int d = 0; d < 13; ++d) reversed[static_cast<std::size_t>(d)] = 12 - d;
  Tensor x = zeros(sizes).permute(reversed);
  EXPECT_TRUE(FailsWith([&] { x.clone(); }, {"copy_", "more than 12", "contiguous"}));
}

TEST(UserErrors, ArangeWithABadStep) {
  EXPECT_TRUE(FailsWith([] { arange(0, 5, 0); }, {"arange", "step", "non-zero"}));
  EXPECT_TRUE(FailsWith([] { arange(0, 5, -1); }, {"arange", "-1", "wrong direction"}));
}

// --- undefined tensors ---

TEST(UserErrors, UsingAnUndefinedTensor) {
  Tensor undefined;
  EXPECT_FALSE(undefined.defined());
  const std::initializer_list<std::string_view> facts = {"undefined", "empty()"};
  EXPECT_TRUE(FailsWith([&] { undefined.sizes(); }, facts));
  EXPECT_TRUE(FailsWith([&] { undefined.numel(); }, facts));
  EXPECT_TRUE(FailsWith([&] { undefined.dtype(); }, facts));
  EXPECT_TRUE(FailsWith([&] { undefined.data_ptr(); }, facts));
  EXPECT_TRUE(FailsWith([&] { undefined.item<float>(); }, facts));
  EXPECT_TRUE(FailsWith([&] { undefined.view({1}); }, facts));
  EXPECT_TRUE(FailsWith([&] { undefined.clone(); }, facts));
  EXPECT_TRUE(FailsWith([&] { undefined.fill_(1); }, facts));
  EXPECT_TRUE(FailsWith([&] { undefined.copy_(zeros({1})); }, facts));
  EXPECT_TRUE(FailsWith([&] { undefined.requires_grad_(); }, facts));
  EXPECT_TRUE(FailsWith([&] { empty_like(undefined); }, facts));
}

TEST(UserErrors, CopyFromAnUndefinedTensor) {
  EXPECT_TRUE(FailsWith([] { zeros({2}).copy_(Tensor()); }, {"copy_", "source", "undefined"}));
}

// --- devices ---

TEST(UserErrors, ParsingAnUnknownDevice) {
  EXPECT_TRUE(FailsWith([] { Device::parse("gpu:0"); }, {"'gpu:0'", "'cpu'", "'cuda:1'"}));
  for (const char* text : {"cuda:", "cuda:x", "cuda:-1", "cuda:1x", "CPU", "", "cuda:999"}) {
    EXPECT_TRUE(FailsWith([&] { Device::parse(text); }, {std::string("'") + text + "'"}))
        << "parsing \"" << text << "\"";
  }
  EXPECT_EQ(thrown_from([] { Device::parse("gpu:0"); }), "device.cpp");
}

TEST(UserErrors, ParsingKnownDevicesWorks) {
  // The counterpart of the test above, so that it cannot pass by rejecting everything.
  EXPECT_EQ(Device::parse("cpu"), kCPU);
  EXPECT_EQ(Device::parse("cuda"), cuda(0));
  EXPECT_EQ(Device::parse("cuda:3"), cuda(3));
  EXPECT_EQ(Device::parse("cuda:3").to_string(), "cuda:3");
}

// Without a GPU (or in a build without the CUDA backend) CUDA tensors must be refused with a
// clear error rather than a crash. tests/core/cuda_test.cpp covers the machines with a GPU.
TEST(UserErrors, AllocatingOnCudaWithoutACudaDevice) {
  if (cuda_is_available()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_TRUE(FailsWith([] { empty({2}, cuda(0)); }, {"cuda:0", "backend"}));
  EXPECT_TRUE(FailsWith([] { zeros({2}, TensorOptions(DType::Int64).device(cuda(0))); },
                        {"cuda:0", "backend"}));
  EXPECT_TRUE(FailsWith([] { from_vector<float>({1, 2}, {}, cuda(0)); }, {"cuda:0", "backend"}));
  EXPECT_TRUE(FailsWith([] { arange(3).to(cuda(0)); }, {"cuda:0", "backend"}));
  EXPECT_TRUE(FailsWith([] { allocator_for(cuda(1)); }, {"cuda:1", "backend"}));
}

// --- the macros ---

TEST(ErrorMacros, GroveCheckJoinsItsPartsAndAppendsTheLocation) {
  const std::vector<std::int64_t> shape = {2, 3};
  const int two = 2;
  int line = 0;
  try {
    line = __LINE__ + 1;
    GROVE_CHECK(two == 3, "expected ", 3, " but got ", two, " for shape ", IntArrayRef(shape),
                " of dtype ", DType::Int32, " on ", cuda(1), "; ratio ", 0.5, ", flag ", 'y');
    FAIL() << "GROVE_CHECK did not throw";
  } catch (const Error& error) {
    const std::string message =
        "expected 3 but got 2 for shape [2, 3] of dtype int32 on cuda:1; ratio 0.5, flag y";
    EXPECT_EQ(error.message(), message);
    EXPECT_EQ(std::string(error.what()),
              message + " (errors_test.cpp:" + std::to_string(line) + ")");
  }
}

TEST(ErrorMacros, GroveCheckThatHoldsEvaluatesNoMessageParts) {
  int evaluated = 0;
  auto part = [&] {
    ++evaluated;
    return "text";
  };
  const int one = 1;
  GROVE_CHECK(one == 1, "never built: ", part());
  EXPECT_EQ(evaluated, 0);
  EXPECT_THROW(GROVE_CHECK(one == 2, "built: ", part()), Error);
  EXPECT_EQ(evaluated, 1);
}

TEST(ErrorMacros, GroveCheckIsCaughtAsAStdException) {
  const int one = 1;
  try {
    GROVE_CHECK(one == 2, "as runtime_error");
    FAIL() << "GROVE_CHECK did not throw";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()).rfind("as runtime_error (errors_test.cpp:", 0), 0u);
  }
}

TEST(ErrorMacros, InternalAssertSaysItIsABug) {
  const int small = 1;
  const int large = 2;
  const Outcome with_message =
      run([&] { GROVE_INTERNAL_ASSERT(large < small, "block ", 7, " is free twice"); });
  ASSERT_EQ(with_message.kind, Outcome::Kind::GroveError);
  EXPECT_EQ(with_message.message,
            "internal error in grove (a bug, please report it): large < small failed: block 7 "
            "is free twice");
  EXPECT_EQ(location_file(with_message.what), "errors_test.cpp");

  const Outcome bare = run([&] { GROVE_INTERNAL_ASSERT(large < small); });
  ASSERT_EQ(bare.kind, Outcome::Kind::GroveError);
  EXPECT_EQ(bare.message,
            "internal error in grove (a bug, please report it): large < small failed");

  EXPECT_EQ(run([&] { GROVE_INTERNAL_ASSERT(small < large, "fine"); }).kind,
            Outcome::Kind::Nothing);
}

TEST(ErrorMacros, GroveThrowThrowsTheGivenType) {
  try {
    GROVE_THROW(OutOfMemoryError, "tried to allocate ", 64, " bytes");
    FAIL() << "GROVE_THROW did not throw";
  } catch (const OutOfMemoryError& error) {
    EXPECT_EQ(error.message(), "tried to allocate 64 bytes");
    EXPECT_EQ(location_file(error.what()), "errors_test.cpp");
  }
  EXPECT_EQ(run([] { GROVE_THROW(OutOfMemoryError, "x"); }).kind, Outcome::Kind::GroveError);
}

TEST(ErrorMacros, StrJoinsParts) {
  EXPECT_EQ(str("expected ", 3, " dims, got ", IntArrayRef({1, 2})), "expected 3 dims, got [1, 2]");
  EXPECT_EQ(str(), "");
}

}  // namespace
}  // namespace grove
