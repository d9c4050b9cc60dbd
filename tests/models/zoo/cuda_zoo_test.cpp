// The models on a CUDA device, every registered one (zoo::model_specs()): built on the CPU,
// moved with to(cuda(0)), they give the CPU's logits within rounding, train there (gradients on
// the device, parameters staying leaves), load state across devices; the gpt samples there.
// Skipped without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "autograd/autograd.h"
#include "models/zoo/gpt.h"
#include "models/zoo/registry.h"
#include "ops/inplace.h"
#include "ops/random.h"
#include "ops/softmax.h"
#include "tests/sanitizer_scale.h"

namespace grove::zoo {
namespace {

// Inputs of each model's real shape, by its task (made on the CPU, copied where needed): 8
// images, or 2 windows of the model's whole context.
Tensor inputs_for(const ModelSpec& spec, const nn::Module& model) {
  if (spec.task == TaskKind::LanguageModel) {
    return ops::randint(0, 128, {2, spec.context_length(model)});
  }
  return ops::randn({8, 1, 28, 28});
}

// Targets for those inputs: the next tokens, or labels.
Tensor targets_for(const ModelSpec& spec, const Tensor& inputs) {
  if (spec.task == TaskKind::LanguageModel) return ops::randint(0, 128, inputs.sizes());
  return ops::randint(0, 10, {inputs.size(0)});
}

double largest_difference(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to(kCPU).to_vector<double>(), y = b.to(kCPU).to_vector<double>();
  double worst = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  return worst;
}

TEST(CudaZoo, MovedModelsGiveTheCpuLogits) {
  if (!cuda_is_available()) GTEST_SKIP() << "no CUDA device";
  for (const ModelSpec& spec : model_specs()) {
    const std::string name = spec.name;
    manual_seed(41);
    const auto cpu_model = spec.make();
    manual_seed(41);
    const auto gpu_model = spec.make();
    gpu_model->to(cuda(0));
    for (const auto& [parameter_name, parameter] : gpu_model->named_parameters()) {
      EXPECT_EQ(parameter.device(), cuda(0)) << parameter_name;
      EXPECT_TRUE(parameter.is_leaf() && parameter.requires_grad()) << parameter_name;
    }
    for (const auto& [buffer_name, buffer] : gpu_model->named_buffers()) {
      EXPECT_EQ(buffer.device(), cuda(0)) << buffer_name;  // the GPT's causal masks
    }
    const Tensor x = inputs_for(spec, *cpu_model);
    // float32 on both sides (TF32 off by default), other summation orders: logits of size ~1
    // agree within 1e-4.
    EXPECT_LT(largest_difference(cpu_model->forward(x), gpu_model->forward(x.to(cuda(0)))), 1e-4)
        << name;
  }
}

TEST(CudaZoo, TrainsOnTheDeviceAndLoadsStateAcrossDevices) {
  if (!cuda_is_available()) GTEST_SKIP() << "no CUDA device";
  for (const ModelSpec& spec : model_specs()) {
    const std::string name = spec.name;
    manual_seed(42);
    const auto model = spec.make();
    const Tensor x_cpu = inputs_for(spec, *model);
    const Tensor targets = targets_for(spec, x_cpu).to(cuda(0));
    model->to(cuda(0));
    const Tensor x = x_cpu.to(cuda(0));
    std::vector<float> losses;
    for (int step = 0; step < 3; ++step) {
      model->zero_grad();
      const Tensor logits = model->forward(x);
      const Tensor loss =
          ops::cross_entropy(logits.view({-1, logits.size(-1)}), targets.view({-1}));
      losses.push_back(loss.item<float>());
      loss.backward();
      const autograd::NoGradGuard no_grad;
      for (const Tensor& parameter : model->parameters()) {
        ASSERT_EQ(parameter.grad().device(), cuda(0)) << name;
        ops::add_(parameter, parameter.grad(), -0.05);
      }
    }
    EXPECT_LT(losses.back(), losses.front()) << name;
    // The trained state, loaded into a CPU model, gives the device model's logits.
    const auto cpu_model = spec.make();
    cpu_model->load_state_dict(model->state_dict());
    EXPECT_LT(largest_difference(cpu_model->forward(x.to(kCPU)), model->forward(x)), 1e-4) << name;
  }
}

TEST(CudaZoo, GptGeneratesOnTheDevice) {
  if (!cuda_is_available()) GTEST_SKIP() << "no CUDA device";
  manual_seed(43);
  // Under compute-sanitizer a context of 8 (Note [GPU tests under compute-sanitizer]).
  GptConfig config;
  config.block = grove::testing::sanitizer_scaled(config.block, 8);
  Gpt gpt(config);
  gpt.to(cuda(0));
  const Tensor prompt = from_vector<std::int64_t>({10, 20}, {1, 2}, cuda(0));
  Generator first(3), second(3);
  const std::int64_t tokens = config.block + 6;  // 2 + tokens > block: the context is cropped
  const Tensor a = gpt.generate(prompt, tokens, 1.0, first);
  const Tensor b = gpt.generate(prompt, tokens, 1.0, second);
  EXPECT_EQ(a.device(), cuda(0));
  EXPECT_EQ(a.sizes(), IntArrayRef({1, 2 + tokens}));
  EXPECT_EQ(a.to(kCPU).to_vector<std::int64_t>(), b.to(kCPU).to_vector<std::int64_t>());
}

}  // namespace
}  // namespace grove::zoo
