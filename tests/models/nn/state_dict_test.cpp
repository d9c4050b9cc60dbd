// state_dict and load_state_dict: round trips give identical outputs, loads copy in place, and
// every kind of mismatch (missing, unexpected, mis-shaped, dtype) is an error that names the
// entry and leaves the module unchanged.
#include <gtest/gtest.h>

#include "models/nn/nn.h"
#include "ops/elementwise.h"
#include "ops/random.h"
#include "tests/models/nn/nn_test_util.h"

namespace grove::nn {
namespace {

using testing::error_message;
using testing::values;

std::shared_ptr<Sequential> make_net(std::uint64_t seed) {
  manual_seed(seed);
  return std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
      std::make_shared<Linear>(4, 8), std::make_shared<ReLU>(), std::make_shared<LayerNorm>(8),
      std::make_shared<Linear>(8, 3)});
}

// The state without the entry `name`.
NamedTensors without(const NamedTensors& state, const std::string& name) {
  NamedTensors out;
  for (const auto& entry : state) {
    if (entry.first != name) out.push_back(entry);
  }
  return out;
}

TEST(StateDict, RoundTripGivesIdenticalOutputs) {
  const auto source = make_net(1);
  const auto target = make_net(2);
  const Tensor x = ops::randn({5, 4});
  ASSERT_NE(values(source->forward(x)), values(target->forward(x)));  // different init
  const std::vector<Tensor> target_parameters = target->parameters();
  target->load_state_dict(source->state_dict());
  EXPECT_EQ(values(source->forward(x)), values(target->forward(x)));  // bit for bit
  // In place: the target's parameters are the same tensors, still leaves requiring grad.
  const std::vector<Tensor> after = target->parameters();
  for (std::size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].impl(), target_parameters[i].impl());
    EXPECT_TRUE(after[i].is_leaf());
    EXPECT_TRUE(after[i].requires_grad());
  }
}

TEST(StateDict, EntriesAreDetachedViewsOfTheParameters) {
  const auto net = make_net(3);
  const NamedTensors state = net->state_dict();
  ASSERT_EQ(testing::names(state), (std::vector<std::string>{"0.weight", "0.bias", "2.weight",
                                                             "2.bias", "3.weight", "3.bias"}));
  for (const auto& [name, tensor] : state) EXPECT_FALSE(tensor.requires_grad()) << name;
  EXPECT_TRUE(state[0].second.is_alias_of(net->parameters()[0]));
}

TEST(StateDict, MissingEntryIsAnErrorUnlessNotStrict) {
  const auto source = make_net(1);
  const auto target = make_net(2);
  const std::vector<double> before = values(target->parameters()[0]);
  const NamedTensors partial = without(source->state_dict(), "3.bias");
  const std::string message = error_message([&] { target->load_state_dict(partial); });
  EXPECT_NE(message.find("missing entries: 3.bias"), std::string::npos) << message;
  EXPECT_NE(message.find("Hint"), std::string::npos) << message;
  EXPECT_EQ(values(target->parameters()[0]), before);  // nothing was copied
  target->load_state_dict(partial, /*strict=*/false);
  EXPECT_EQ(values(target->parameters()[0]), values(source->parameters()[0]));
  EXPECT_NE(values(target->parameters()[5]), values(source->parameters()[5]));  // 3.bias kept
}

TEST(StateDict, UnexpectedEntryIsAnErrorUnlessNotStrict) {
  const auto source = make_net(1);
  const auto target = make_net(2);
  NamedTensors state = source->state_dict();
  state.emplace_back("4.weight", zeros({2, 2}));
  const std::string message = error_message([&] { target->load_state_dict(state); });
  EXPECT_NE(message.find("unexpected entries: 4.weight"), std::string::npos) << message;
  target->load_state_dict(state, /*strict=*/false);
  EXPECT_EQ(values(target->parameters()[4]), values(source->parameters()[4]));
}

TEST(StateDict, MisShapedEntryIsAnErrorEvenWhenNotStrict) {
  const auto target = make_net(2);
  const std::vector<double> before = values(target->parameters()[0]);
  NamedTensors state = make_net(1)->state_dict();
  state[0].second = zeros({4, 8});  // "0.weight" is (8, 4)
  for (const bool strict : {true, false}) {
    const std::string message = error_message([&] { target->load_state_dict(state, strict); });
    EXPECT_NE(message.find("0.weight: expected shape [8, 4], found shape [4, 8]"),
              std::string::npos)
        << message;
  }
  EXPECT_EQ(values(target->parameters()[0]), before);
}

TEST(StateDict, DtypeMismatchIsAnError) {
  const auto target = make_net(2);
  NamedTensors state = make_net(1)->state_dict();
  state[1].second = state[1].second.to(DType::Float64);  // "0.bias"
  const std::string message = error_message([&] { target->load_state_dict(state); });
  EXPECT_NE(message.find("0.bias: expected dtype float32, found dtype float64"), std::string::npos)
      << message;
  EXPECT_NE(message.find("to(dtype)"), std::string::npos) << message;  // the hint
}

TEST(StateDict, AllProblemsAreListedInOneError) {
  const auto target = make_net(2);
  NamedTensors state = without(make_net(1)->state_dict(), "2.weight");
  state.emplace_back("extra", zeros({1}));
  state[0].second = zeros({1});
  const std::string message = error_message([&] { target->load_state_dict(state); });
  EXPECT_NE(message.find("missing entries: 2.weight"), std::string::npos) << message;
  EXPECT_NE(message.find("unexpected entries: extra"), std::string::npos) << message;
  EXPECT_NE(message.find("0.weight: expected shape"), std::string::npos) << message;
}

TEST(StateDict, NonPersistentBufferIsLeftOut) {
  CausalSelfAttention attention(8, 2, 4);
  EXPECT_EQ(testing::names(attention.named_buffers()), (std::vector<std::string>{"causal_mask"}));
  for (const auto& [name, tensor] : attention.state_dict()) EXPECT_NE(name, "causal_mask");
  CausalSelfAttention other(8, 2, 4);
  other.load_state_dict(attention.state_dict());  // strict: the mask is not expected
  const Tensor x = ops::randn({1, 4, 8});
  EXPECT_EQ(values(attention(x)), values(other(x)));
}

}  // namespace
}  // namespace grove::nn
