// The Module base: registration order and names, walks, modes, device and dtype moves,
// zero_grad, printing, and the errors a user can cause when registering.
#include <gtest/gtest.h>

#include "autograd/autograd.h"
#include "models/nn/nn.h"
#include "ops/elementwise.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "tests/models/nn/nn_test_util.h"

namespace grove::nn {
namespace {

using testing::error_message;
using testing::names;

// Own parameter and buffers, then two children, one of them a Sequential.
class Toy : public Module {
 public:
  Toy() : Module("Toy") {
    register_parameter("scale", ones({2}));
    register_buffer("count", zeros({1}, DType::Int64));
    register_buffer("scratch", zeros({2}), /*persistent=*/false);
    inner_ = register_module("inner", std::make_shared<Linear>(2, 2));
    seq_ = register_module("seq", std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
                                      std::make_shared<Linear>(2, 3), std::make_shared<ReLU>(),
                                      std::make_shared<Linear>(3, 1)}));
  }
  Tensor forward(const Tensor& x) override {
    return seq_->forward(inner_->forward(x) * parameter("scale"));
  }
  // Exposes the protected registration for the error tests.
  void add_parameter(const std::string& name, const Tensor& value) {
    register_parameter(name, value);
  }

 private:
  std::shared_ptr<Linear> inner_;
  std::shared_ptr<Sequential> seq_;
};

TEST(Module, NamesFollowRegistrationOrderOwnEntriesFirst) {
  Toy toy;
  EXPECT_EQ(names(toy.named_parameters()),
            (std::vector<std::string>{"scale", "inner.weight", "inner.bias", "seq.0.weight",
                                      "seq.0.bias", "seq.2.weight", "seq.2.bias"}));
  EXPECT_EQ(names(toy.named_buffers()), (std::vector<std::string>{"count", "scratch"}));
  // state_dict: parameters, then persistent buffers only.
  std::vector<std::string> state = names(toy.named_parameters());
  state.push_back("count");
  EXPECT_EQ(names(toy.state_dict()), state);
  ASSERT_EQ(toy.named_children().size(), 2u);
  EXPECT_EQ(toy.named_children()[1].first, "seq");
  EXPECT_EQ(toy.named_children()[1].second->type_name(), "Sequential");
  // 2 + (2*2 + 2) + (2*3 + 3) + (3*1 + 1)
  EXPECT_EQ(toy.parameter_count(), 2 + 6 + 9 + 4);
  const std::vector<Tensor> parameters = toy.parameters();
  ASSERT_EQ(parameters.size(), 7u);
  for (const Tensor& parameter : parameters) {
    EXPECT_TRUE(parameter.is_leaf());
    EXPECT_TRUE(parameter.requires_grad());
  }
}

TEST(Module, RegistrationErrorsNameTheProblem) {
  Toy toy;
  EXPECT_NE(error_message([&] { toy.add_parameter("scale", ones({1})); }).find("already used"),
            std::string::npos);
  EXPECT_NE(error_message([&] { toy.add_parameter("a.b", ones({1})); }).find("without '.'"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              toy.add_parameter("index", zeros({1}, DType::Int64));
            }).find("floating-point"),
            std::string::npos);
  Module bare("Bare");
  EXPECT_NE(error_message([&] { bare.forward(ones({1})); }).find("Bare"), std::string::npos);
}

TEST(Module, RegisterParameterDetachesHistory) {
  class Holder : public Module {
   public:
    explicit Holder(const Tensor& value) : Module("Holder") { register_parameter("p", value); }
  };
  const Tensor base = ones({3}).requires_grad_();
  const Tensor derived = base * 2.0;  // has history
  ASSERT_FALSE(derived.is_leaf());
  Holder holder(derived);
  const Tensor stored = holder.parameters()[0];
  EXPECT_TRUE(stored.is_leaf());
  EXPECT_TRUE(stored.requires_grad());
  EXPECT_EQ(testing::values(stored), (std::vector<double>{2, 2, 2}));
}

TEST(Module, TrainAndEvalAreRecursive) {
  Toy toy;
  EXPECT_TRUE(toy.is_training());
  toy.eval();
  EXPECT_FALSE(toy.is_training());
  for (const auto& [name, child] : toy.named_children()) EXPECT_FALSE(child->is_training()) << name;
  const auto seq = std::dynamic_pointer_cast<Sequential>(toy.named_children()[1].second);
  EXPECT_FALSE((*seq)[1]->is_training());
  toy.train();
  EXPECT_TRUE((*seq)[1]->is_training());
}

TEST(Module, ToTheSameDeviceKeepsTheSameLeaves) {
  Toy toy;
  const std::vector<Tensor> before = toy.parameters();
  const NamedTensors buffers_before = toy.named_buffers();
  toy.to(kCPU);
  const std::vector<Tensor> after = toy.parameters();
  ASSERT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].impl(), before[i].impl()) << i;  // the very same tensors
    EXPECT_TRUE(after[i].is_leaf());
    EXPECT_TRUE(after[i].requires_grad());
  }
  EXPECT_EQ(toy.named_buffers()[0].second.impl(), buffers_before[0].second.impl());
}

TEST(Module, ToDtypeMakesNewLeavesAndKeepsNamesAndIntegerBuffers) {
  Toy toy;
  const std::vector<std::string> before = names(toy.named_parameters());
  const std::vector<double> weight = testing::values(toy.parameters()[1]);
  toy.to(DType::Float64);
  EXPECT_EQ(names(toy.named_parameters()), before);
  for (const Tensor& parameter : toy.parameters()) {
    EXPECT_EQ(parameter.dtype(), DType::Float64);
    EXPECT_TRUE(parameter.is_leaf());
    EXPECT_TRUE(parameter.requires_grad());
  }
  EXPECT_EQ(testing::values(toy.parameters()[1]), weight);           // float32 -> float64 is exact
  EXPECT_EQ(toy.named_buffers()[0].second.dtype(), DType::Int64);    // count: kept
  EXPECT_EQ(toy.named_buffers()[1].second.dtype(), DType::Float64);  // scratch: converted
  // The model runs in double now, and its gradients reach the new leaves.
  ops::sum(toy.forward(ones({4, 2}, DType::Float64))).backward();
  for (const Tensor& parameter : toy.parameters()) EXPECT_TRUE(parameter.grad().defined());
  EXPECT_NE(error_message([&] { toy.to(DType::Int64); }).find("floating-point"), std::string::npos);
}

TEST(Module, ZeroGradToNoneOrInPlace) {
  Toy toy;
  const Tensor input = ops::randn({5, 2});
  ops::sum(toy.forward(input)).backward();
  const Tensor weight = toy.parameters()[1];
  const Tensor grad = weight.grad();
  ASSERT_TRUE(grad.defined());
  toy.zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(weight.grad().defined());
  EXPECT_TRUE(weight.grad().is_alias_of(grad));  // the same memory, zeroed in place
  for (const double value : testing::values(weight.grad())) EXPECT_EQ(value, 0.0);
  toy.zero_grad();
  for (const Tensor& parameter : toy.parameters()) EXPECT_FALSE(parameter.grad().defined());
}

TEST(Module, ToStringPrintsTheTree) {
  Toy toy;
  const std::string text = toy.to_string();
  EXPECT_EQ(text,
            "Toy(\n"
            "  (inner): Linear(in_features=2, out_features=2, bias=true)\n"
            "  (seq): Sequential(\n"
            "    (0): Linear(in_features=2, out_features=3, bias=true)\n"
            "    (1): ReLU()\n"
            "    (2): Linear(in_features=3, out_features=1, bias=true)\n"
            "  )\n"
            ")");
}

TEST(Sequential, AppliesChildrenInOrder) {
  manual_seed(7);
  const auto first = std::make_shared<Linear>(3, 4);
  const auto second = std::make_shared<Linear>(4, 2);
  Sequential seq;
  EXPECT_TRUE(seq.empty());
  seq.push_back(first);
  seq.push_back(std::make_shared<GELU>());
  seq.push_back(second);
  EXPECT_EQ(seq.size(), 3u);
  const Tensor x = ops::randn({2, 3});
  testing::expect_close(testing::values(seq(x)),
                        testing::values(second->forward(ops::gelu(first->forward(x)))), 0.0);
  EXPECT_EQ(seq[0].get(), first.get());
  EXPECT_NE(error_message([&] { (void)seq[3]; }).find("below 3"), std::string::npos);
  EXPECT_EQ(Sequential().forward(x).impl(), x.impl());  // empty: the input itself
}

}  // namespace
}  // namespace grove::nn
