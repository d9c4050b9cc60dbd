// Misuse across devices (label `gpu`; every case is skipped without a CUDA device): ops given a
// CPU and a CUDA tensor together, in-place writes and copies between devices that cannot be
// done in place, autograd gradients on another device, optimizers over parameters on two
// devices, a module on the GPU called with a CPU input, and a tree manager or compiled function
// called with inputs on another device than its own.
#include "autograd/autograd.h"
#include "core/device.h"
#include "graphs/compile/compile.h"
#include "graphs/tree/tree_manager.h"
#include "models/nn/nn.h"
#include "models/optim/adamw.h"
#include "models/optim/clip.h"
#include "models/optim/sgd.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/inplace.h"
#include "ops/layer_norm.h"
#include "ops/linalg.h"
#include "ops/op_table.h"
#include "ops/optim.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/softmax.h"
#include "tests/misuse/misuse_case.h"

namespace grove::misuse {
namespace {

using namespace grove::ops;

Tensor gpu(IntArrayRef sizes) {
  return ones(sizes, TensorOptions(DType::Float32).device(cuda(0)));
}
Tensor cpu(IntArrayRef sizes) {
  return ones(sizes);
}
Tensor gpu_indices(std::vector<std::int64_t> values) {
  return from_vector(values, {}, cuda(0));
}

// The message of dispatch's device check names both devices.
const std::vector<std::string> kBothDevices = {"cpu", "cuda:0", "one device"};

std::vector<MisuseCase> mixed_device_op_cases() {
  return {
      {"AddCpuAndCuda", [] { add(cpu({2}), gpu({2})); }, kBothDevices},
      {"AddCudaAndCpu", [] { add(gpu({2}), cpu({2})); }, kBothDevices},
      {"MulCudaAndCpuScalarTensor",
       [] {
         mul(gpu({2, 3}), cpu({}));
       },
       kBothDevices},
      {"EqCpuAndCuda", [] { eq(cpu({2}), gpu({2})); }, kBothDevices},
      {"WhereCpuConditionCudaValues", [] { where(gt(cpu({2}), 0.0), gpu({2}), gpu({2})); },
       kBothDevices},
      {"MaskedFillCpuMask", [] { masked_fill(gpu({2}), gt(cpu({2}), 0.0), 1.0); }, kBothDevices},
      {"MatmulCpuAndCuda",
       [] {
         matmul(cpu({2, 3}), gpu({3, 2}));
       },
       kBothDevices},
      {"LinearCudaWeightCpuInput",
       [] {
         linear(cpu({2, 3}), gpu({4, 3}));
       },
       kBothDevices},
      {"LinearCpuBias",
       [] {
         linear(gpu({2, 3}), gpu({4, 3}), cpu({4}));
       },
       kBothDevices},
      {"BmmCpuAndCuda",
       [] {
         bmm(gpu({1, 2, 3}), cpu({1, 3, 2}));
       },
       kBothDevices},
      {"CrossEntropyCpuTargets",
       [] {
         cross_entropy(gpu({2, 3}), from_vector(std::vector<std::int64_t>{0, 1}));
       },
       kBothDevices},
      {"EmbeddingCpuIndices",
       [] {
         embedding(gpu({4, 2}), from_vector(std::vector<std::int64_t>{0, 1}));
       },
       kBothDevices},
      {"EmbeddingCpuWeight",
       [] {
         embedding(cpu({4, 2}), gpu_indices({0, 1}));
       },
       kBothDevices},
      {"LayerNormCpuWeight",
       [] {
         layer_norm(gpu({2, 3}), {3}, cpu({3}));
       },
       kBothDevices},
      {"Conv2dCpuWeight",
       [] {
         conv2d(gpu({1, 1, 4, 4}), cpu({1, 1, 3, 3}));
       },
       kBothDevices},
      {"CatCpuAndCuda",
       [] {
         cat({gpu({2}), cpu({2})});
       },
       kBothDevices},
      {"AddInPlaceCpuOperand", [] { add_(gpu({2}), cpu({2})); }, kBothDevices},
      {"AddcmulCpuOperands", [] { addcmul_(gpu({2}), cpu({2}), cpu({2})); }, kBothDevices},
      {"LerpCpuWeight", [] { lerp_(gpu({2}), gpu({2}), cpu({2})); }, kBothDevices},
      {"SgdCpuGrad", [] { sgd_(gpu({2}), cpu({2}), Tensor(), {}); }, kBothDevices},
      {"AdamwCpuStep", [] { adamw_(gpu({2}), gpu({2}), gpu({2}), gpu({2}), cpu({}), {}); },
       kBothDevices},
      {"OpTableCpuAndCuda",
       [] {
         dispatch(op_entry(OpKind::Sub), {gpu({2}), cpu({2})}, OpAttributes{});
       },
       kBothDevices},
  };
}

std::vector<MisuseCase> mixed_device_api_cases() {
  return {
      {"BackwardWithAGradientOnTheCpu",
       [] {
         const Tensor x = gpu({2}).requires_grad_();
         mul(x, 2.0).backward(cpu({2}));
       },
       {"cpu", "cuda:0"}},
      {"SetGradOnAnotherDevice",
       [] { gpu({2}).requires_grad_().set_grad(cpu({2})); },
       {"set_grad", "cpu", "cuda:0"}},
      {"SgdParamsOnTwoDevices",
       [] {
         optim::SGD({cpu({2}).requires_grad_(), gpu({2}).requires_grad_()});
       },
       {"parameter 1", "cuda:0", "cpu"}},
      {"AdamwParamsOnTwoDevices",
       [] {
         optim::AdamW({gpu({2}).requires_grad_(), cpu({2}).requires_grad_()});
       },
       {"parameter 1", "cuda:0", "cpu"}},
      {"LoadStateFromAnotherDeviceOfTheWrongShape",
       [] {
         optim::SGD source({cpu({3}).requires_grad_()}, {.momentum = 0.9});
         optim::SGD target({gpu({2}).requires_grad_()}, {.momentum = 0.9});
         target.load_state(source.state());
       },
       {"load_state", "[2]", "[3]"}},
      {"LinearOnCudaGivenACpuInput",
       [] {
         nn::Linear layer(3, 2);
         layer.to(cuda(0));
         layer(cpu({4, 3}));
       },
       kBothDevices},
      {"TreeManagerInputOnTheCpu",
       [] {
         graphs::TreeManager manager(cuda(0));
         graphs::WrappedFunction function;
         function.callable = [](const graphs::TensorList& in) {
           return graphs::TensorList{mul(in[0], 2.0)};
         };
         manager.add_function(function)({cpu({2})});
       },
       {"input 0", "cpu", "cuda:0"}},
      {"CopyIntoAnExpandedCudaTensor",
       [] { gpu({1}).expand({4}).copy_(cpu({4})); },
       {"copy_", "[4]"}},
  };
}

class CudaMisuse : public ::testing::TestWithParam<MisuseCase> {};

TEST_P(CudaMisuse, ThrowsAGroveErrorNamingTheProblem) {
  if (!cuda_is_available()) GTEST_SKIP() << "no CUDA device";
  EXPECT_TRUE(fails_with_grove_error(GetParam()));
}

std::vector<MisuseCase> all_cases() {
  std::vector<MisuseCase> cases = mixed_device_op_cases();
  append(cases, mixed_device_api_cases());
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Misuse, CudaMisuse, ::testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace grove::misuse
