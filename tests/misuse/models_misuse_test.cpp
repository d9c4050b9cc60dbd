// Misuse of models/nn and models/optim: modules built with impossible sizes or called on inputs
// of the wrong shape or dtype, module trees with cycles, optimizers given bad parameters,
// options out of range, mismatched state, and schedules and clipping with bad arguments.
// load_state_dict's errors are tested in tests/models/nn/state_dict_test.cpp and not repeated.
#include <cmath>
#include <limits>
#include <memory>

#include "models/nn/nn.h"
#include "models/optim/adamw.h"
#include "models/optim/clip.h"
#include "models/optim/schedule.h"
#include "models/optim/sgd.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "tests/misuse/misuse_case.h"

namespace grove::misuse {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::int64_t k2Pow40 = std::int64_t{1} << 40;

Tensor parameter(IntArrayRef sizes) {
  return zeros(sizes).requires_grad_();
}

std::vector<MisuseCase> module_cases() {
  return {
      {"LinearNegativeFeatures", [] { nn::Linear(-1, 3); }, {"Linear", "-1"}},
      {"LinearOverflowingFeatures",
       [] { nn::Linear(k2Pow40, k2Pow40); },
       {"more elements than any device can hold"}},
      {"LinearInputOfTheWrongWidth",
       [] {
         nn::Linear(3, 2)(zeros({4, 5}));
       },
       {"Linear", "3", "[4, 5]"}},
      {"LinearZeroDimInput", [] { nn::Linear(3, 2)(zeros({})); }, {"Linear", "[]"}},
      {"LinearIntegerInput",
       [] {
         nn::Linear(3, 2)(zeros({4, 3}, DType::Int64));
       },
       {"int64"}},
      {"Conv2dZeroKernel", [] { nn::Conv2d(1, 1, 0); }, {"Conv2d", "0"}},
      {"Conv2dNegativePadding", [] { nn::Conv2d(1, 1, 3, 1, -1); }, {"Conv2d", "-1"}},
      {"Conv2dInputChannelsDiffer",
       [] {
         nn::Conv2d(3, 4, 3)(zeros({1, 2, 8, 8}));
       },
       {"Conv2d", "3", "[1, 2, 8, 8]"}},
      {"Conv2dThreeDimInput",
       [] {
         nn::Conv2d(3, 4, 3)(zeros({3, 8, 8}));
       },
       {"Conv2d", "[3, 8, 8]"}},
      {"EmbeddingZeroRows", [] { nn::Embedding(0, 4); }, {"Embedding", "0"}},
      {"EmbeddingFloatIndices",
       [] { nn::Embedding(5, 4)(zeros({2})); },
       {"Embedding", "int64", "float32"}},
      {"EmbeddingIndexOutOfRange",
       [] {
         nn::Embedding(5, 4)(from_vector<std::int64_t>({1, 5}));
       },
       {"embedding", "5"}},
      {"EmbeddingNegativeIndex",
       [] { nn::Embedding(5, 4)(from_vector<std::int64_t>({-2})); },
       {"embedding", "-2"}},
      {"LayerNormEmptyShape", [] { nn::LayerNorm(0); }, {"LayerNorm", "0"}},
      {"LayerNormNaNEps", [] { nn::LayerNorm(4, kNaN); }, {"LayerNorm", "eps", "nan"}},
      {"LayerNormInfiniteEps", [] { nn::LayerNorm(4, kInf); }, {"LayerNorm", "eps", "inf"}},
      {"LayerNormInputOfTheWrongWidth",
       [] {
         nn::LayerNorm(4)(zeros({2, 3}));
       },
       {"LayerNorm", "[2, 3]"}},
      {"AttentionHeadsDoNotDivideEmbd",
       [] { nn::CausalSelfAttention(10, 3, 8); },
       {"CausalSelfAttention", "10", "3"}},
      {"AttentionSequenceLongerThanBlock",
       [] {
         nn::CausalSelfAttention(8, 2, 4)(zeros({1, 5, 8}));
       },
       {"CausalSelfAttention", "5", "4"}},
      {"AttentionTwoDimInput",
       [] {
         nn::CausalSelfAttention(8, 2, 4)(zeros({4, 8}));
       },
       {"CausalSelfAttention", "[4, 8]"}},
      {"DropoutProbabilityOne", [] { nn::Dropout(1.0); }, {"Dropout", "1"}},
      {"DropoutNaN", [] { nn::Dropout{kNaN}; }, {"Dropout", "nan"}},
      {"MaxPoolZeroKernel", [] { nn::MaxPool2d(0); }, {"MaxPool2d", "0"}},
      {"MaxPoolTwoDimInput",
       [] {
         nn::MaxPool2d(2)(zeros({4, 4}));
       },
       {"MaxPool2d", "[4, 4]"}},
      {"FlattenStartAfterEnd",
       [] {
         nn::Flatten(2, 1)(zeros({2, 3, 4}));
       },
       {"flatten"}},
      {"FlattenDimOutOfRange", [] { nn::Flatten(1)(zeros({2})); }, {"flatten", "1"}},
      {"SequentialIndexOutOfRange", [] { (nn::Sequential())[0]; }, {"Sequential", "0"}},
      {"SequentialNullModule", [] { nn::Sequential({nullptr}); }, {"null"}},
      {"ModuleWithoutForward", [] { nn::Module("Custom")(zeros({1})); }, {"forward", "Custom"}},
      {"ModuleToIntegerDtype", [] { nn::Linear(2, 2).to(DType::Int64); }, {"Linear", "int64"}},
      {"ModuleIsItsOwnChild",
       [] {
         auto sequential = std::make_shared<nn::Sequential>();
         sequential->push_back(sequential);
       },
       {"own child"}},
      {"ModuleTreeWithACycle",
       [] {
         auto outer = std::make_shared<nn::Sequential>();
         auto inner = std::make_shared<nn::Sequential>();
         outer->push_back(inner);
         inner->push_back(outer);  // would make parameters() recurse forever
       },
       {"Sequential", "cycle"}},
      {"ModuleTreeWithALongerCycle",
       [] {
         auto a = std::make_shared<nn::Sequential>();
         auto b = std::make_shared<nn::Sequential>();
         auto c = std::make_shared<nn::Sequential>();
         a->push_back(b);
         b->push_back(c);
         c->push_back(a);
       },
       {"Sequential", "cycle"}},
  };
}

std::vector<MisuseCase> optimizer_cases() {
  return {
      {"SgdNoParameters", [] { optim::SGD({}, {}); }, {"at least one parameter"}},
      {"SgdUndefinedParameter",
       [] {
         optim::SGD({parameter({2}), Tensor()});
       },
       {"parameter 1", "undefined"}},
      {"SgdParameterWithoutGrad",
       [] { optim::SGD({zeros({2})}); },
       {"parameter 0", "requires grad"}},
      {"SgdNonLeafParameter",
       [] { optim::SGD({ops::mul(parameter({2}), 2.0)}); },
       {"parameter 0", "non-leaf"}},
      {"SgdSameParameterTwice",
       [] {
         const Tensor p = parameter({2});
         optim::SGD({p, p});
       },
       {"parameter 1", "parameter 0"}},
      {"SgdIntegerParameter",
       [] { optim::SGD({zeros({2}, DType::Int32)}); },
       {"parameter 0", "int32"}},
      {"SgdNegativeLr", [] { optim::SGD({parameter({2})}, {.lr = -0.1}); }, {"-0.1"}},
      {"SgdNaNLr", [] { optim::SGD({parameter({2})}, {.lr = kNaN}); }, {"nan"}},
      {"SgdNegativeMomentum",
       [] { optim::SGD({parameter({2})}, {.momentum = -0.5}); },
       {"momentum", "-0.5"}},
      {"SgdNesterovWithoutMomentum",
       [] { optim::SGD({parameter({2})}, {.nesterov = true}); },
       {"nesterov", "momentum"}},
      {"SgdNegativeWeightDecay",
       [] { optim::SGD({parameter({2})}, {.weight_decay = -1}); },
       {"weight_decay", "-1"}},
      {"SetLrInfinite",
       [] {
         optim::SGD sgd({parameter({2})});
         sgd.set_lr(kInf);
       },
       {"inf"}},
      {"AdamwBeta2OfOne",
       [] { optim::AdamW({parameter({2})}, {.beta2 = 1.0}); },
       {"AdamW", "beta2", "1"}},
      {"AdamwNegativeBeta1",
       [] { optim::AdamW({parameter({2})}, {.beta1 = -0.1}); },
       {"AdamW", "beta1", "-0.1"}},
      {"AdamwZeroEps", [] { optim::AdamW({parameter({2})}, {.eps = 0.0}); }, {"AdamW", "eps"}},
      {"LoadStateOfAnotherParameterShape",
       [] {
         optim::AdamW source({parameter({3})});
         optim::AdamW target({parameter({2})});
         target.load_state(source.state());
       },
       {"load_state", "[2]", "[3]"}},
      {"LoadStateOfAnotherOptimizer",
       [] {
         optim::SGD source({parameter({2})}, {.momentum = 0.9});
         optim::AdamW target({parameter({2})});
         target.load_state(source.state());
       },
       {"load_state", "exp_avg"}},
      {"LoadStateWithANegativeStep",
       [] {
         optim::SGD sgd({parameter({2})});
         optim::SGD::NamedState state = sgd.state();
         state[1].second = full({}, -3, DType::Int64);
         sgd.load_state(state);
       },
       {"load_state", "step", "-3"}},
      {"LoadStateWithANaNLr",
       [] {
         optim::SGD sgd({parameter({2})});
         optim::SGD::NamedState state = sgd.state();
         state[0].second = full({}, kNaN);
         sgd.load_state(state);
       },
       {"nan"}},
      {"ClipNegativeMaxNorm",
       [] { optim::clip_grad_norm_({parameter({2})}, -1.0); },
       {"clip_grad_norm_", "-1"}},
      {"ClipUndefinedParameter",
       [] { optim::clip_grad_norm_({Tensor()}, 1.0); },
       {"clip_grad_norm_", "parameter 0", "undefined"}},
      {"ConstantLrNegative", [] { optim::ConstantLr(-1.0); }, {"-1"}},
      {"WarmupLongerThanTotal",
       [] { optim::WarmupCosineLr(1.0, 10, 5, 0.0); },
       {"WarmupCosineLr", "warmup_steps", "10"}},
      {"WarmupMinAboveBase",
       [] { optim::WarmupCosineLr(0.1, 1, 5, 0.5); },
       {"WarmupCosineLr", "min_lr"}},
      {"StepLrZeroStepSize", [] { optim::StepLr(0.1, 0, 0.5); }, {"StepLr", "step_size", "0"}},
      {"StepLrNegativeGamma", [] { optim::StepLr(0.1, 1, -0.5); }, {"StepLr", "gamma", "-0.5"}},
      {"ScheduleNegativeStep", [] { optim::ConstantLr(0.1).lr_at(-1); }, {"lr_at", "-1"}},
  };
}

GROVE_MISUSE_SUITE(Modules, module_cases)
GROVE_MISUSE_SUITE(Optimizers, optimizer_cases)

}  // namespace
}  // namespace grove::misuse
