// Misuse driven over the whole op table: for every OpKind, a valid call is recorded once through
// its user function (an observer keeps the inputs and attributes dispatch saw), then replayed
// through dispatch(op_entry(kind), ...) broken in one way at a time:
//   - with no inputs, and with one input too many (an interpreter replaying a bad node);
//   - with each input undefined;
//   - with each input of the op's compute dtype replaced by a bool tensor of the same shape;
//   - with each float32 input replaced by float64 (mixed dtypes) when another input is tied to
//     its dtype.
// Which input is which comes from the op's entry (OpEntry::inputs), not from this file.
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
    const std::size_t count = sample_input_count(kind);  // runs the sample once
    for (std::size_t i = 0; i < count; ++i) {
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

// What input i of the sample takes, from the op's entry (OpEntry::inputs in ops/dispatch.h).
ops::InputDTypes input_dtypes(OpKind kind, std::size_t i) {
  return ops::op_entry(kind).input(i).dtypes;
}

// An input whose dtype is the op's compute dtype (or, for saved statistics, follows from it),
// which a bool tensor cannot be.
bool is_compute_input(OpKind kind, std::size_t i) {
  const ops::InputDTypes dtypes = input_dtypes(kind, i);
  return dtypes == ops::InputDTypes::Floating || dtypes == ops::InputDTypes::Numeric ||
         dtypes == ops::InputDTypes::Statistics;
}

// An input tied to the op's other inputs of its class: a float64 among float32 ones is refused.
bool is_tied_input(OpKind kind, std::size_t i) {
  return is_compute_input(kind, i) || input_dtypes(kind, i) == ops::InputDTypes::AnyShared;
}

std::vector<MisuseCase> bool_input_cases() {
  std::vector<MisuseCase> cases;
  for (std::size_t k = 0; k < kNumOps; ++k) {
    const auto kind = static_cast<OpKind>(k);
    const std::size_t count = sample_input_count(kind);  // runs the sample once
    for (std::size_t i = 0; i < count; ++i) {
      if (!is_compute_input(kind, i)) continue;
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
    const std::size_t count = sample_input_count(kind);
    std::size_t tied = 0;
    for (std::size_t i = 0; i < count; ++i) tied += is_tied_input(kind, i);
    if (tied < 2) continue;
    for (std::size_t i = 0; i < count; ++i) {
      if (!is_tied_input(kind, i)) continue;
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
    const ops::InputCount count = ops::op_entry(kind).count_inputs(sample.attributes);
    EXPECT_GE(sample.inputs.size(), count.min) << kind;
    EXPECT_LE(sample.inputs.size(), count.max) << kind;
    EXPECT_NO_THROW(replay(sample)) << kind;
  }
}

// An op whose call carries attributes prints them (OpEntry::describe), so that the IR's printer
// and the compile explainer show them; a new op without a printer fails here. (What each
// printer prints is tests/ops/attributes_test.cpp's.)
TEST(OpTableMisuse, EveryOpWithAttributesHasAPrinter) {
  for (std::size_t k = 0; k < kNumOps; ++k) {
    const auto kind = static_cast<OpKind>(k);
    const ops::OpAttributes& a = sample_of(kind).attributes;
    const bool has_attributes = !a.ints.empty() || a.has_scalar || a.flag ||
                                a.scalar.to<double>() != 0.0 || a.reals != std::array<double, 4>{};
    if (!has_attributes) continue;  // or all at their defaults (gelu's approximate=false)
    EXPECT_NE(ops::op_entry(kind).describe, nullptr) << kind << " has attributes but no printer";
    EXPECT_FALSE(ops::describe_attributes(kind, a).empty()) << kind;
  }
}

GROVE_MISUSE_SUITE(OpTableArity, arity_cases)
GROVE_MISUSE_SUITE(OpTableUndefinedInputs, undefined_input_cases)
GROVE_MISUSE_SUITE(OpTableBoolInputs, bool_input_cases)
GROVE_MISUSE_SUITE(OpTableMixedFloatInputs, mixed_float_cases)

}  // namespace
}  // namespace grove::misuse
