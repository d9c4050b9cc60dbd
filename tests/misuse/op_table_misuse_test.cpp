// Misuse driven over the whole op table: for every OpKind, a valid call is recorded once through
// its user function (an observer keeps the inputs and attributes dispatch saw), then replayed
// through dispatch(op_entry(kind), ...) broken in one way at a time:
//   - with no inputs, and with one input too many (an interpreter replaying a bad node);
//   - with each input undefined;
//   - with each floating-point input replaced by a bool tensor of the same shape;
//   - with each float32 input replaced by float64 (mixed dtypes) when another input is float32.
// Each must give a grove::Error naming the op; none may read past the end of the inputs.
// A test checks that every op kind has a sample, so that an op added later is covered too.
#include <string>

#include "tests/misuse/misuse_case.h"
#include "tests/misuse/op_samples.h"

namespace grove::misuse {
namespace {

using ops::OpKind;

std::string op_label(OpKind kind) {
  return std::string(ops::op_name(kind));
}

std::vector<MisuseCase> arity_cases() {
  std::vector<MisuseCase> cases;
  for (std::size_t k = 0; k < kNumOps; ++k) {
    const auto kind = static_cast<OpKind>(k);
    const std::string name = op_label(kind);
    const std::size_t count = sample_input_count(kind);
    if (count > 0) {
      cases.push_back(
          {name + "_NoInputs",
           [kind] {
             Sample sample = sample_of(kind);
             sample.inputs.clear();
             replay(sample);
           },
           kind == OpKind::Cat  // cat's own check names what it needs
               ? std::vector<std::string>{"cat: expected at least one tensor"}
               : std::vector<std::string>{name + ": expected ", "tensor inputs, but got 0"}});
    }
    if (kind != OpKind::Cat) {
      cases.push_back(
          {name + "_OneInputTooMany",
           [kind] {
             Sample sample = sample_of(kind);
             sample.inputs.push_back(zeros({1}));
             replay(sample);
           },
           {name + ": expected ", " tensor inputs, but got " + std::to_string(count + 1)}});
    }
  }
  return cases;
}

std::vector<MisuseCase> undefined_input_cases() {
  std::vector<MisuseCase> cases;
  for (std::size_t k = 0; k < kNumOps; ++k) {
    const auto kind = static_cast<OpKind>(k);
    for (std::size_t i = 0; i < sample_input_count(kind); ++i) {
      cases.push_back({op_label(kind) + "_UndefinedInput" + std::to_string(i),
                       [kind, i] {
                         Sample sample = sample_of(kind);
                         sample.inputs[i] = Tensor();
                         replay(sample);
                       },
                       {op_label(kind) + ": input " + std::to_string(i) + " is undefined"}});
    }
  }
  return cases;
}

// Inputs that are not floating point in the samples (indices, masks); a bool there is not a
// dtype misuse of the same kind.
bool is_floating_input(OpKind kind, std::size_t i) {
  switch (kind) {
    case OpKind::Where:
      return i != 0;
    case OpKind::MaskedFill:
    case OpKind::CrossEntropy:
    case OpKind::NllLoss:
    case OpKind::Embedding:
    case OpKind::EmbeddingBackward:
    case OpKind::MaxPool2dBackward:
      return i == 0;
    case OpKind::CrossEntropyBackward:
    case OpKind::NllLossBackward:
      return i != 2;
    case OpKind::OneHot:
      return false;
    case OpKind::AdamwStep:  // the step count may be any numeric dtype
      return i != 4;
    default:
      return true;
  }
}

// Ops defined for bool tensors too, where a bool input is no misuse: copy_ converts any dtype
// either way, sum counts bools (into int64), embedding looks up rows of any dtype, tril/triu
// mask any dtype, and the collectives move any dtype.
bool takes_bool(OpKind kind, std::size_t i) {
  switch (kind) {
    case OpKind::Copy:
    case OpKind::Sum:
    case OpKind::Tril:
    case OpKind::Triu:
    case OpKind::AllReduce:
    case OpKind::Broadcast:
    case OpKind::AllGather:
      return true;
    case OpKind::Embedding:
      return i == 0;
    default:
      return false;
  }
}

std::vector<MisuseCase> bool_input_cases() {
  std::vector<MisuseCase> cases;
  for (std::size_t k = 0; k < kNumOps; ++k) {
    const auto kind = static_cast<OpKind>(k);
    for (std::size_t i = 0; i < sample_input_count(kind); ++i) {
      if (!is_floating_input(kind, i) || takes_bool(kind, i)) continue;
      cases.push_back({op_label(kind) + "_BoolInput" + std::to_string(i),
                       [kind, i] {
                         Sample sample = sample_of(kind);
                         sample.inputs[i] = ops::gt(sample.inputs[i], 0.5);
                         replay(sample);
                       },
                       {op_label(kind) + ": ", "bool"}});
    }
  }
  return cases;
}

std::vector<MisuseCase> mixed_float_cases() {
  std::vector<MisuseCase> cases;
  for (std::size_t k = 0; k < kNumOps; ++k) {
    const auto kind = static_cast<OpKind>(k);
    std::size_t floating = 0;
    for (std::size_t i = 0; i < sample_input_count(kind); ++i)
      floating += is_floating_input(kind, i);
    if (floating < 2) continue;
    for (std::size_t i = 0; i < sample_input_count(kind); ++i) {
      if (!is_floating_input(kind, i)) continue;
      if (kind == OpKind::Copy) continue;  // copy_ converts between any dtypes
      cases.push_back({op_label(kind) + "_Float64Input" + std::to_string(i),
                       [kind, i] {
                         Sample sample = sample_of(kind);
                         sample.inputs[i] = sample.inputs[i].to(DType::Float64);
                         replay(sample);
                       },
                       {op_label(kind) + ": ", "float64", "float32"}});
    }
  }
  return cases;
}

TEST(OpTableMisuse, EveryOpHasAValidSampleThatReplays) {
  for (std::size_t k = 0; k < kNumOps; ++k) {
    const auto kind = static_cast<OpKind>(k);
    ASSERT_TRUE(valid_calls().count(kind) == 1) << "no valid call of " << kind << " in this file";
    const Sample sample = sample_of(kind);
    EXPECT_EQ(sample.inputs.size(), sample_input_count(kind)) << kind;
    EXPECT_NO_THROW(replay(sample)) << kind;
  }
}

GROVE_MISUSE_SUITE(OpTableArity, arity_cases)
GROVE_MISUSE_SUITE(OpTableUndefinedInputs, undefined_input_cases)
GROVE_MISUSE_SUITE(OpTableBoolInputs, bool_input_cases)
GROVE_MISUSE_SUITE(OpTableMixedFloatInputs, mixed_float_cases)

}  // namespace
}  // namespace grove::misuse
