// The backend parity table: every op that has a CUDA kernel, run on the CPU (the reference, see
// CONVENTIONS.md) and on the GPU over the same values, and compared. One table row per op (or per
// form of an op: scalar operands, with and without bias, ...); the harness runs each row over
//   - its dtypes (float32 and float64 always where the op takes floats; the integer and bool
//     dtypes where it takes them), and bfloat16 and float16 wherever it takes float32: the
//     CUDA kernels that take them as they are (OpEntry::cuda_takes_reduced) and the float32
//     kernels handed widened copies (Note [Reduced-precision compute]) alike,
//   - its shape variants (a plain shape, a long one that leaves a tail after vectorised packs,
//     broadcasting, size 0 and size 1 where the op allows them),
//   - four layouts of the GPU inputs: contiguous, offset by one element (not 16-byte aligned),
//     strided (a stride-3 view of a wider buffer) and transposed (the last two dims swapped in
//     memory); the CPU always gets contiguous inputs,
// and checks that the GPU call really dispatched the row's op (an op observer watches it).
// CoverageTest fails when an op with a CUDA kernel (the op table's `cuda` entry) has no row.
//
// Adding a CUDA kernel: add a row here (one entry), nothing else. What stays in the hand-written
// tests/ops/cuda_*_test.cpp files is what a table of values cannot say: capture and replay,
// device-side error reports, NaN and tie rules, bit-identity of random streams with generator
// state, and TF32 behaviour.
//
// Every test skips without a CUDA device (CTest label `gpu`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "core/rng.h"
#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/inplace.h"
#include "ops/layer_norm.h"
#include "ops/linalg.h"
#include "ops/op_table.h"
#include "ops/optim.h"
#include "ops/pool.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "ops/rms_norm.h"
#include "ops/shape.h"
#include "ops/softmax.h"
#include "tests/ops/cuda_test_util.h"

namespace grove::ops::testing {
namespace {

// ---------------------------------------------------------------------------------------------
// The vocabulary of a row.

// How an input's values are made (always on the CPU, then placed on the GPU).
enum class Values : std::uint8_t {
  Quarters,  // multiples of 1/4 in [-3, 3]; floats carry a NaN every 23 elements
  Finite,    // multiples of 1/4 in [-3, 3], no NaN (ops whose NaN rules are tested elsewhere)
  Positive,  // in [0.25, 3.25] (denominators, second moments)
  Mask,      // bool, half true
  Index,     // int64 in [0, bound)
  Target,    // int64 in [0, bound), every 7th the ignore index -100
};

struct Input {
  Values values = Values::Quarters;
  std::int64_t bound = 0;     // Index and Target: the exclusive upper bound
  bool follows_dtype = true;  // false: the values' own dtype (int64 indices, bool masks)
};

// One shape per input (factories, which have no inputs, take sizes[0] as the output's).
struct Shapes {
  std::string name;
  std::vector<DimVector> sizes;
};

// What a row's function gets besides its inputs.
struct Context {
  Device device;
  DType dtype;
  Generator* generator;  // seeded alike on both devices
  const std::vector<DimVector>* sizes;
};

using RunFn =
    std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs, const Context& context)>;

struct Row {
  OpKind kind;
  std::string name;
  std::vector<DType> dtypes;
  std::vector<Input> inputs;
  std::vector<Shapes> shapes;
  RunFn run;
  ParityTolerances tolerances;
};

// ---------------------------------------------------------------------------------------------
// Tolerances, each with its reason.

// One formula per element on both devices; CUDA's expf, tanhf, erff, powf differ from glibc's by
// an ulp or two and nvcc may contract a multiply-add: a few float32 ulps, a few float64 ulps.
constexpr ParityTolerances kElementwise{1e-5, 1e-6, 1e-13, 1e-15};
// Ops that only move values, or compute them in the same order and precision on both devices
// (shape ops, pooling, the embedding gather and its ordered sums, the bit-identical random
// streams): equal bits, NaN matching NaN.
constexpr ParityTolerances kExact{0.0, 0.0, 0.0, 0.0};
// Sums accumulated in double and rounded once on both devices, in different orders: an ulp or
// so in float32; float64 sums in a different order, with a floor for var's near-zero results.
constexpr ParityTolerances kReduce{1e-5, 1e-6, 1e-12, 1e-14};
// Products of quarters in [-3, 3] and their partial sums are exact in float32 up to K = 1000, so
// any order agrees; the margin is the float32 contract with TF32 off.
constexpr ParityTolerances kMatmul{1e-4, 1e-5, 1e-12, 1e-12};
// softmax's GPU rows are computed in double and rounded once, the losses' float32 rows in float32
// (ops/cuda/loss.cu); the CPU's float32 rows use a float exp and float partial sums: a few ulps,
// 1e-7 absolute for probabilities near zero. log_softmax's x - lse cancels near zero, so its
// float32 floor is a few ulps of |lse| (<= 10 here).
constexpr ParityTolerances kSoftmax{1e-5, 2e-6, 1e-12, 1e-14};
// Both devices sum in double and round once, in different orders.
constexpr ParityTolerances kLayerNorm{1e-5, 1e-6, 1e-12, 1e-13};
// cuDNN's algorithms (implicit GEMM, FFT or Winograd, chosen by its heuristics) round their
// transforms: the error scales with the sum of the terms' magnitudes, about 1e-6 of it (measured:
// 1.4e-3 absolute on a weight gradient whose terms sum to ~2000 in magnitude).
constexpr ParityTolerances kConv{1e-4, 1e-2, 1e-12, 1e-10};
// The fused optimizer updates evaluate one expression (ops/optim_math.h); nvcc may contract a
// multiply-add where g++ does not.
constexpr ParityTolerances kOptim{1e-5, 1e-7, 1e-13, 1e-15};
// randn: both devices transform the same Philox words with Box-Muller; CUDA's logf/sincosf differ
// from glibc's by an ulp or two of values up to ~5 in size.
constexpr ParityTolerances kNormal{1e-5, 1e-6, 1e-13, 1e-14};

const std::vector<DType> kFloating = {DType::Float32, DType::Float64};
const std::vector<DType> kArithmetic = {DType::Float32, DType::Float64, DType::Int64, DType::Int32};
const std::vector<DType> kAll = {DType::Float32, DType::Float64, DType::Int64, DType::Int32,
                                 DType::Bool};

// A scalar operand of `dtype`'s kind, so integer ops stay exact.
Scalar scalar_for(DType dtype, double floating, std::int64_t integer) {
  if (dtype == DType::Bool) return Scalar(true);
  return is_floating_point(dtype) ? Scalar(floating) : Scalar(integer);
}

TensorOptions on(const Context& context, DType dtype) {
  return TensorOptions(dtype).device(context.device);
}

// ---------------------------------------------------------------------------------------------
// Shape variants shared by families.

std::vector<Shapes> unary_shapes() {
  return {{"matrix", {{37, 53}}},
          {"long", {{4099}}},
          {"0-d", {{}}},
          {"size 0", {{0, 3}}},
          {"size 1", {{1}}}};
}

std::vector<Shapes> binary_shapes() {
  return {{"matrix", {{37, 53}, {37, 53}}},  {"long", {{4099}, {4099}}},
          {"broadcast", {{37, 1}, {1, 53}}}, {"row", {{53}, {37, 53}}},
          {"0-d right", {{37, 53}, {}}},     {"0-d", {{}, {}}},
          {"size 0", {{0, 3}, {1, 3}}},      {"size 1", {{1}, {1, 1}}}};
}

std::vector<Shapes> ternary_shapes() {
  return {{"matrix", {{37, 53}, {37, 53}, {37, 53}}},
          {"broadcast", {{37, 53}, {1, 53}, {37, 1}}},
          {"size 0", {{0, 3}, {0, 3}, {1, 3}}},
          {"size 1", {{1}, {1}, {1}}}};
}

// In-place ops write input 0, whose shape is the result's: the others broadcast to it.
std::vector<Shapes> inplace_binary_shapes() {
  return {{"matrix", {{37, 53}, {37, 53}}},
          {"long", {{4099}, {4099}}},
          {"broadcast", {{37, 53}, {1, 53}}},
          {"0-d", {{}, {}}},
          {"size 0", {{0, 3}, {1, 3}}}};
}

// Two operands of one shape (ops that do not broadcast).
std::vector<Shapes> same_binary_shapes() {
  return {{"matrix", {{37, 53}, {37, 53}}},
          {"long", {{4099}, {4099}}},
          {"0-d", {{}, {}}},
          {"size 0", {{0, 3}, {0, 3}}}};
}

Input in(Values values = Values::Quarters) {
  return Input{values, 0, true};
}
Input indices(std::int64_t bound) {
  return Input{Values::Index, bound, false};
}
Input targets(std::int64_t bound) {
  return Input{Values::Target, bound, false};
}
Input mask() {
  return Input{Values::Mask, 0, false};
}

// ---------------------------------------------------------------------------------------------
// The rows, family by family in ops/op_kind.h's order.

void add_elementwise_rows(std::vector<Row>& rows) {
  using Binary = Tensor (*)(const Tensor&, const Tensor&);
  using WithScalar = Tensor (*)(const Tensor&, const Scalar&);
  struct BinaryOp {
    OpKind kind;
    const char* name;
    Binary tensor_form;
    WithScalar scalar_form;  // null for maximum and minimum
    const std::vector<DType>* dtypes;
  };
  const BinaryOp binary[] = {
      {OpKind::Add, "add", add, add, &kArithmetic},
      {OpKind::Sub, "sub", sub, sub, &kArithmetic},
      {OpKind::Mul, "mul", mul, mul, &kArithmetic},
      {OpKind::Div, "div", div, div, &kFloating},
      {OpKind::Maximum, "maximum", maximum, nullptr, &kArithmetic},
      {OpKind::Minimum, "minimum", minimum, nullptr, &kArithmetic},
      {OpKind::Eq, "eq", eq, eq, &kAll},
      {OpKind::Ne, "ne", ne, ne, &kAll},
      {OpKind::Lt, "lt", lt, lt, &kAll},
      {OpKind::Le, "le", le, le, &kAll},
      {OpKind::Gt, "gt", gt, gt, &kAll},
      {OpKind::Ge, "ge", ge, ge, &kAll},
  };
  for (const BinaryOp& op : binary) {
    const Binary tensor_form = op.tensor_form;
    rows.push_back({op.kind,
                    op.name,
                    *op.dtypes,
                    {in(), in()},
                    binary_shapes(),
                    [tensor_form](const std::vector<Tensor>& x, const Context&) {
                      return std::vector<Tensor>{tensor_form(x[0], x[1])};
                    },
                    kElementwise});
    if (op.scalar_form == nullptr) continue;
    const WithScalar scalar_form = op.scalar_form;
    rows.push_back({op.kind,
                    std::string(op.name) + " scalar",
                    *op.dtypes,
                    {in()},
                    unary_shapes(),
                    [scalar_form](const std::vector<Tensor>& x, const Context& context) {
                      return std::vector<Tensor>{
                          scalar_form(x[0], scalar_for(context.dtype, 0.75, 2))};
                    },
                    kElementwise});
  }
  rows.push_back({OpKind::Where,
                  "where",
                  kAll,
                  {mask(), in(), in()},
                  ternary_shapes(),
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{where(x[0], x[1], x[2])};
                  },
                  kElementwise});
  rows.push_back({OpKind::MaskedFill,
                  "masked_fill",
                  kAll,
                  {in(), mask()},
                  inplace_binary_shapes(),
                  [](const std::vector<Tensor>& x, const Context& context) {
                    return std::vector<Tensor>{
                        masked_fill(x[0], x[1], scalar_for(context.dtype, -2.5, -7))};
                  },
                  kElementwise});
  rows.push_back({OpKind::Clamp,
                  "clamp",
                  kArithmetic,
                  {in()},
                  unary_shapes(),
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{clamp(x[0], -2.0, 1.0)};
                  },
                  kElementwise});
  rows.push_back({OpKind::Clamp,
                  "clamp fractional bounds",
                  kFloating,
                  {in()},
                  unary_shapes(),
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{clamp(x[0], -0.3, 1.1)};
                  },
                  kElementwise});

  using Unary = std::function<Tensor(const Tensor&)>;
  struct UnaryOp {
    OpKind kind;
    const char* name;
    Unary fn;
    const std::vector<DType>* dtypes;
  };
  const UnaryOp unary[] = {
      {OpKind::Neg, "neg", [](const Tensor& x) { return neg(x); }, &kArithmetic},
      {OpKind::Abs, "abs", [](const Tensor& x) { return abs(x); }, &kArithmetic},
      {OpKind::Relu, "relu", [](const Tensor& x) { return relu(x); }, &kArithmetic},
      {OpKind::Exp, "exp", [](const Tensor& x) { return exp(x); }, &kFloating},
      {OpKind::Log, "log", [](const Tensor& x) { return log(x); }, &kFloating},
      {OpKind::Sqrt, "sqrt", [](const Tensor& x) { return sqrt(x); }, &kFloating},
      {OpKind::Rsqrt, "rsqrt", [](const Tensor& x) { return rsqrt(x); }, &kFloating},
      {OpKind::Pow, "pow 2", [](const Tensor& x) { return pow(x, 2.0); }, &kFloating},
      {OpKind::Pow, "pow -1.5", [](const Tensor& x) { return pow(x, -1.5); }, &kFloating},
      {OpKind::Tanh, "tanh", [](const Tensor& x) { return tanh(x); }, &kFloating},
      {OpKind::Sigmoid, "sigmoid", [](const Tensor& x) { return sigmoid(x); }, &kFloating},
      {OpKind::Gelu, "gelu", [](const Tensor& x) { return gelu(x, false); }, &kFloating},
      {OpKind::Gelu, "gelu tanh", [](const Tensor& x) { return gelu(x, true); }, &kFloating},
  };
  for (const UnaryOp& op : unary) {
    const Unary fn = op.fn;
    rows.push_back({op.kind,
                    op.name,
                    *op.dtypes,
                    {in()},
                    unary_shapes(),
                    [fn](const std::vector<Tensor>& x, const Context&) {
                      return std::vector<Tensor>{fn(x[0])};
                    },
                    kElementwise});
  }
  rows.push_back({OpKind::ReluBackward,
                  "relu_backward",
                  kFloating,
                  {in(), in()},
                  same_binary_shapes(),
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{relu_backward(x[1], x[0])};
                  },
                  kElementwise});
  for (const bool approximate : {false, true}) {
    rows.push_back({OpKind::GeluBackward,
                    approximate ? "gelu_backward tanh" : "gelu_backward",
                    kFloating,
                    {in(), in()},
                    same_binary_shapes(),
                    [approximate](const std::vector<Tensor>& x, const Context&) {
                      return std::vector<Tensor>{gelu_backward(x[1], x[0], approximate)};
                    },
                    kElementwise});
  }
}

void add_inplace_rows(std::vector<Row>& rows) {
  // Each in-place row returns input 0 after the write: the harness compares what it holds.
  rows.push_back({OpKind::AddInplace,
                  "add_ alpha 2",
                  kArithmetic,
                  {in(), in()},
                  inplace_binary_shapes(),
                  [](const std::vector<Tensor>& x, const Context& context) {
                    return std::vector<Tensor>{add_(x[0], x[1], scalar_for(context.dtype, 2, 2))};
                  },
                  kElementwise});
  rows.push_back({OpKind::MulInplace,
                  "mul_",
                  kArithmetic,
                  {in(), in()},
                  inplace_binary_shapes(),
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{mul_(x[0], x[1])};
                  },
                  kElementwise});
  rows.push_back({OpKind::MulInplace,
                  "mul_ scalar",
                  kArithmetic,
                  {in()},
                  unary_shapes(),
                  [](const std::vector<Tensor>& x, const Context& context) {
                    return std::vector<Tensor>{mul_(x[0], scalar_for(context.dtype, -1.5, -3))};
                  },
                  kElementwise});
  rows.push_back({OpKind::Addcmul,
                  "addcmul_",
                  kFloating,
                  {in(), in(), in()},
                  ternary_shapes(),
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{addcmul_(x[0], x[1], x[2], 0.5)};
                  },
                  kElementwise});
  rows.push_back({OpKind::Addcdiv,
                  "addcdiv_",
                  kFloating,
                  {in(), in(), in(Values::Positive)},
                  ternary_shapes(),
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{addcdiv_(x[0], x[1], x[2], -0.5)};
                  },
                  kElementwise});
  rows.push_back({OpKind::Lerp,
                  "lerp_ scalar weight",
                  kFloating,
                  {in(), in()},
                  inplace_binary_shapes(),
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{lerp_(x[0], x[1], 0.3)};
                  },
                  kElementwise});
  rows.push_back({OpKind::Lerp,
                  "lerp_ tensor weight",
                  kFloating,
                  {in(), in(), in()},
                  ternary_shapes(),
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{lerp_(x[0], x[1], x[2])};
                  },
                  kElementwise});
  rows.push_back({OpKind::Fill,
                  "fill_",
                  kAll,
                  {in()},
                  unary_shapes(),
                  [](const std::vector<Tensor>& x, const Context& context) {
                    return std::vector<Tensor>{fill_(x[0], scalar_for(context.dtype, 1.25, 9))};
                  },
                  kExact});
  rows.push_back({OpKind::Copy,
                  "copy_",
                  kAll,
                  {in(), in()},
                  inplace_binary_shapes(),
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{copy_(x[0], x[1])};
                  },
                  kExact});
  rows.push_back({OpKind::Copy,
                  "copy_ from float64",
                  kAll,
                  {in(), in()},
                  inplace_binary_shapes(),
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{copy_(x[0], x[1].to(DType::Float64))};
                  },
                  kExact});
  // Random fills: the flat row-major index picks the Philox counter, whatever the layout.
  rows.push_back({OpKind::Uniform,
                  "uniform_",
                  kFloating,
                  {in()},
                  unary_shapes(),
                  [](const std::vector<Tensor>& x, const Context& context) {
                    return std::vector<Tensor>{uniform_(x[0], -2.0, 3.0, context.generator)};
                  },
                  kExact});
  rows.push_back({OpKind::Normal,
                  "normal_",
                  kFloating,
                  {in()},
                  unary_shapes(),
                  [](const std::vector<Tensor>& x, const Context& context) {
                    return std::vector<Tensor>{normal_(x[0], 1.0, 2.0, context.generator)};
                  },
                  kNormal});
}

void add_optim_rows(std::vector<Row>& rows) {
  const std::vector<Shapes> shapes = {{"matrix", {{33, 17}, {33, 17}, {33, 17}}},
                                      {"size 0", {{0, 4}, {0, 4}, {0, 4}}},
                                      {"size 1", {{1}, {1}, {1}}}};
  rows.push_back({OpKind::SgdStep,
                  "sgd_ nesterov",
                  kFloating,
                  {in(Values::Finite), in(Values::Finite), in(Values::Finite)},
                  shapes,
                  [](const std::vector<Tensor>& x, const Context&) {
                    sgd_(x[0], x[1], x[2], SgdHyperparameters{0.05, 0.9, 0.01, true});
                    return std::vector<Tensor>{x[0], x[2]};
                  },
                  kOptim});
  rows.push_back({OpKind::SgdStep,
                  "sgd_ lr tensor",
                  kFloating,
                  {in(Values::Finite), in(Values::Finite), in(Values::Finite)},
                  shapes,
                  [](const std::vector<Tensor>& x, const Context& context) {
                    const Tensor lr = full({}, 0.05, on(context, DType::Float64));
                    sgd_(x[0], x[1], x[2], lr, SgdHyperparameters{0.0, 0.9, 0.01, true});
                    return std::vector<Tensor>{x[0], x[2]};
                  },
                  kOptim});
  rows.push_back({OpKind::SgdStep,
                  "sgd_ plain",
                  kFloating,
                  {in(Values::Finite), in(Values::Finite), in(Values::Finite)},
                  shapes,
                  [](const std::vector<Tensor>& x, const Context&) {
                    sgd_(x[0], x[1], x[2], SgdHyperparameters{0.05, 0.0, 0.0, false});
                    return std::vector<Tensor>{x[0], x[2]};
                  },
                  kOptim});
  std::vector<Shapes> adam_shapes;
  for (const Shapes& s : shapes) {
    adam_shapes.push_back({s.name, {s.sizes[0], s.sizes[0], s.sizes[0], s.sizes[0]}});
  }
  rows.push_back(
      {OpKind::AdamwStep,
       "adamw_",
       kFloating,
       {in(Values::Finite), in(Values::Finite), in(Values::Finite), in(Values::Positive)},
       adam_shapes,
       [](const std::vector<Tensor>& x, const Context& context) {
         const Tensor step = full({1}, Scalar(std::int64_t{3}), on(context, DType::Int64));
         adamw_(x[0], x[1], x[2], x[3], step, AdamwHyperparameters{0.01, 0.9, 0.99, 1e-8, 0.1});
         return std::vector<Tensor>{x[0], x[2], x[3]};
       },
       kOptim});
  rows.push_back(
      {OpKind::AdamwStep,
       "adamw_ lr tensor",
       kFloating,
       {in(Values::Finite), in(Values::Finite), in(Values::Finite), in(Values::Positive)},
       adam_shapes,
       [](const std::vector<Tensor>& x, const Context& context) {
         const Tensor step = full({1}, Scalar(std::int64_t{3}), on(context, DType::Int64));
         const Tensor lr = full({}, 0.01f, on(context, DType::Float32));
         adamw_(x[0], x[1], x[2], x[3], step, lr, AdamwHyperparameters{0.0, 0.9, 0.99, 1e-8, 0.1});
         return std::vector<Tensor>{x[0], x[2], x[3]};
       },
       kOptim});
  // Loss scaling (Note [Loss scaling on the device]): quarters times 1/4 are exact, and a NaN
  // among the Quarters values sets found_inf on both devices; the skip itself (found_inf set:
  // nothing written) is checked in tests/ops/optim_test.cpp.
  rows.push_back({OpKind::UnscaleGrads,
                  "unscale_grads_",
                  kFloating,
                  {in(), in(Values::Finite)},
                  {{"two gradients", {{33, 17}, {5}}}, {"size 0", {{0, 4}, {1}}}},
                  [](const std::vector<Tensor>& x, const Context& context) {
                    const Tensor found_inf = zeros({1}, on(context, DType::Float32));
                    const Tensor scale = full({1}, 4.0, on(context, DType::Float32));
                    unscale_grads_(x, found_inf, scale);
                    return std::vector<Tensor>{x[0], x[1], found_inf};
                  },
                  kExact});
  for (const bool overflow : {false, true}) {
    rows.push_back({OpKind::UpdateScale,
                    overflow ? "update_scale_ after an overflow" : "update_scale_ growing",
                    {DType::Float32},
                    {},
                    {{"one scale", {{1}}}},
                    [overflow](const std::vector<Tensor>&, const Context& context) {
                      const Tensor scale = full({1}, 65536.0, on(context, DType::Float32));
                      const Tensor tracker = full({1}, 1, on(context, DType::Int32));
                      const Tensor found_inf =
                          full({1}, overflow ? 1.0 : 0.0, on(context, DType::Float32));
                      update_scale_(scale, tracker, found_inf, 2.0, 0.5, 2);
                      return std::vector<Tensor>{scale, tracker};
                    },
                    kExact});
  }
}

void add_reduce_rows(std::vector<Row>& rows) {
  const std::vector<Shapes> shapes = {{"3-d", {{5, 7, 9}}},
                                      {"matrix", {{37, 53}}},
                                      {"long", {{4099, 2}}},
                                      {"size 0", {{0, 5}}},
                                      {"size 1", {{1, 1}}}};
  const std::vector<Shapes> nonempty = {{"3-d", {{5, 7, 9}}},
                                        {"matrix", {{37, 53}}},
                                        {"long", {{4099}}},
                                        {"size 1", {{1, 1}}},
                                        {"0-d", {{}}}};  // last: argmax with a dim skips it
  using Reduction = std::function<Tensor(const Tensor&)>;
  auto row = [&rows](OpKind kind, const std::string& name, const std::vector<DType>& dtypes,
                     const std::vector<Shapes>& row_shapes, Reduction fn) {
    rows.push_back({kind,
                    name,
                    dtypes,
                    {in()},
                    row_shapes,
                    [fn](const std::vector<Tensor>& x, const Context&) {
                      return std::vector<Tensor>{fn(x[0])};
                    },
                    kReduce});
  };
  row(OpKind::Sum, "sum", kAll, shapes, [](const Tensor& x) { return sum(x); });
  row(OpKind::Sum, "sum dims {0}", kAll, shapes, [](const Tensor& x) { return sum(x, {0}); });
  row(OpKind::Sum, "sum dims {0,-1} keepdim", kAll, shapes, [](const Tensor& x) {
    return sum(x, {0, -1}, true);
  });
  row(OpKind::Mean, "mean", kFloating, shapes, [](const Tensor& x) { return mean(x); });
  row(OpKind::Mean, "mean dims {-1} keepdim", kFloating, shapes,
      [](const Tensor& x) { return mean(x, {-1}, true); });
  row(OpKind::Var, "var", kFloating, shapes, [](const Tensor& x) { return var(x); });
  row(OpKind::Var, "var dims {0} population", kFloating, shapes,
      [](const Tensor& x) { return var(x, {0}, false); });
  row(OpKind::Var, "var dims {1} keepdim", kFloating, shapes,
      [](const Tensor& x) { return var(x, {1}, true, true); });
  row(OpKind::Max, "max", kArithmetic, nonempty, [](const Tensor& x) { return max(x); });
  row(OpKind::Argmax, "argmax", kArithmetic, nonempty, [](const Tensor& x) { return argmax(x); });
  const std::vector<Shapes> with_dims(nonempty.begin(), nonempty.end() - 1);
  row(OpKind::Argmax, "argmax dim -1 keepdim", kArithmetic, with_dims,
      [](const Tensor& x) { return argmax(x, -1, true); });
}

void add_linalg_rows(std::vector<Row>& rows) {
  const std::vector<Shapes> matmul_shapes = {
      {"vector . vector", {{5}, {5}}},
      {"vector @ matrix", {{5}, {5, 7}}},
      {"matrix @ vector", {{4, 5}, {5}}},
      {"matrix @ matrix", {{33, 65}, {65, 17}}},
      {"batch @ matrix", {{3, 4, 5}, {5, 7}}},
      {"broadcast batches", {{2, 1, 4, 5}, {3, 5, 7}}},
      {"M = 0", {{0, 5}, {5, 7}}},
      {"K = 0", {{4, 0}, {0, 7}}},
      {"size 1", {{1, 1}, {1, 1}}},
  };
  rows.push_back({OpKind::Matmul,
                  "matmul",
                  kFloating,
                  {in(Values::Finite), in(Values::Finite)},
                  matmul_shapes,
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{matmul(x[0], x[1])};
                  },
                  kMatmul});
  rows.push_back({OpKind::Bmm,
                  "bmm",
                  kFloating,
                  {in(Values::Finite), in(Values::Finite)},
                  {{"batch", {{3, 4, 5}, {3, 5, 7}}},
                   {"empty batch", {{0, 4, 5}, {0, 5, 7}}},
                   {"size 1", {{1, 1, 1}, {1, 1, 1}}}},
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{bmm(x[0], x[1])};
                  },
                  kMatmul});
  const std::vector<Shapes> linear_shapes = {{"mlp layer", {{128, 78}, {25, 78}, {25}}},
                                             {"batched", {{2, 3, 8}, {5, 8}, {5}}},
                                             {"vector", {{8}, {5, 8}, {5}}},
                                             {"size 0", {{0, 8}, {5, 8}, {5}}}};
  rows.push_back({OpKind::Linear,
                  "linear",
                  kFloating,
                  {in(Values::Finite), in(Values::Finite), in(Values::Finite)},
                  linear_shapes,
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{linear(x[0], x[1], x[2])};
                  },
                  kMatmul});
  rows.push_back({OpKind::Linear,
                  "linear without bias",
                  kFloating,
                  {in(Values::Finite), in(Values::Finite)},
                  {{"mlp layer", {{128, 78}, {25, 78}}}, {"batched", {{2, 3, 8}, {5, 8}}}},
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{linear(x[0], x[1])};
                  },
                  kMatmul});
  // grad (N, out), x (N, in): shapes whose bias gradient the BGRADB epilogue sums (a GPT's
  // layer; odd sizes), and the fallbacks (no rows: zeros; one column).
  const std::vector<Shapes> weight_grad_shapes = {{"gpt layer", {{256, 96}, {256, 32}}},
                                                  {"odd", {{37, 5}, {37, 11}}},
                                                  {"no rows", {{0, 5}, {0, 3}}},
                                                  {"size 1", {{1, 1}, {1, 1}}}};
  for (const bool bias : {true, false}) {
    rows.push_back({OpKind::LinearWeightGrad,
                    bias ? "linear_weight_grad" : "linear_weight_grad without bias",
                    kFloating,
                    {in(Values::Finite), in(Values::Finite)},
                    weight_grad_shapes,
                    [bias](const std::vector<Tensor>& x, const Context&) {
                      return linear_weight_grad(x[0], x[1], bias);
                    },
                    kMatmul});
  }
}

void add_softmax_rows(std::vector<Row>& rows) {
  const std::vector<Shapes> shapes = {{"matrix", {{37, 53}}},
                                      {"3-d", {{4, 5, 6}}},
                                      {"rows longer than a block", {{3, 5000}}},
                                      {"size 0", {{0, 5}}},
                                      {"size 1", {{1}}}};
  for (const std::int64_t dim : {0, -1}) {
    rows.push_back({OpKind::Softmax,
                    "softmax dim " + std::to_string(dim),
                    kFloating,
                    {in()},
                    shapes,
                    [dim](const std::vector<Tensor>& x, const Context&) {
                      return std::vector<Tensor>{softmax(x[0], dim)};
                    },
                    kSoftmax});
    rows.push_back({OpKind::LogSoftmax,
                    "log_softmax dim " + std::to_string(dim),
                    kFloating,
                    {in()},
                    shapes,
                    [dim](const std::vector<Tensor>& x, const Context&) {
                      return std::vector<Tensor>{log_softmax(x[0], dim)};
                    },
                    kSoftmax});
  }
  // Targets are below 10, the ignore index -100 every 7th (Values::Target).
  const std::vector<Shapes> loss_shapes = {{"mlp batch", {{128, 10}, {128}}},
                                           {"gpt batch", {{2048, 65}, {2048}}},
                                           {"block rows", {{5, 3000}, {5}}},
                                           {"size 1", {{1, 10}, {1}}}};
  rows.push_back({OpKind::CrossEntropy,
                  "cross_entropy",
                  kFloating,
                  {in(Values::Finite), targets(10)},
                  loss_shapes,
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{cross_entropy(x[0], x[1])};
                  },
                  kSoftmax});
  rows.push_back({OpKind::NllLoss,
                  "nll_loss",
                  kFloating,
                  {in(Values::Finite), targets(10)},
                  loss_shapes,
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{nll_loss(x[0], x[1])};
                  },
                  kSoftmax});
  const std::vector<Shapes> backward_shapes = {{"mlp batch", {{}, {128, 10}, {128}}},
                                               {"gpt batch", {{}, {2048, 65}, {2048}}},
                                               {"block rows", {{}, {5, 3000}, {5}}},
                                               {"size 1", {{}, {1, 10}, {1}}}};
  rows.push_back({OpKind::CrossEntropyBackward,
                  "cross_entropy_backward",
                  kFloating,
                  {in(Values::Finite), in(Values::Finite), targets(10)},
                  backward_shapes,
                  [](const std::vector<Tensor>& x, const Context&) {
                    // The saved statistics are kept in the compute dtype (float32 for 16 bits).
                    const Tensor scores = x[1].to(compute_dtype(x[1].dtype()));
                    const Tensor lse = log(sum(exp(scores), {1}));
                    // The loss's grad is in it too (Note [A loss is in the compute dtype]).
                    const Tensor grad = x[0].to(compute_dtype(x[0].dtype()));
                    return std::vector<Tensor>{cross_entropy_backward(grad, x[1], x[2], lse)};
                  },
                  kSoftmax});
  rows.push_back({OpKind::NllLossBackward,
                  "nll_loss_backward",
                  kFloating,
                  {in(Values::Finite), in(Values::Finite), targets(10)},
                  backward_shapes,
                  [](const std::vector<Tensor>& x, const Context&) {
                    const Tensor grad = x[0].to(compute_dtype(x[0].dtype()));
                    return std::vector<Tensor>{nll_loss_backward(grad, x[1], x[2])};
                  },
                  kSoftmax});
}

void add_layer_norm_rows(std::vector<Row>& rows) {
  // normalized_shape is the last dim of input 0.
  const std::vector<Shapes> shapes = {
      {"rows", {{33, 47}, {47}, {47}}},
      {"3-d", {{2, 3, 8}, {8}, {8}}},
      {"gpt", {{2048, 128}, {128}, {128}}},
      {"block rows", {{3, 1500}, {1500}, {1500}}},
      {"size 0", {{0, 8}, {8}, {8}}},
      {"size 1", {{1, 1}, {1}, {1}}},
      // Rows of whole packs per lane: the packed kernels (ops/cuda/layer_norm.cu).
      {"gpt-2 rows", {{64, 768}, {768}, {768}}}};
  rows.push_back({OpKind::LayerNorm,
                  "layer_norm",
                  kFloating,
                  {in(Values::Finite), in(Values::Finite), in(Values::Finite)},
                  shapes,
                  [](const std::vector<Tensor>& x, const Context&) {
                    const LayerNormResult r =
                        layer_norm_with_stats(x[0], {x[0].sizes().back()}, x[1], x[2], 1e-5);
                    return std::vector<Tensor>{r.output, r.mean, r.rstd};
                  },
                  kLayerNorm});
  rows.push_back({OpKind::LayerNorm,
                  "layer_norm without affine",
                  kFloating,
                  {in(Values::Finite)},
                  {{"rows", {{33, 47}}}, {"size 1", {{1, 1}}}, {"packed rows", {{16, 256}}}},
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{layer_norm(x[0], {x[0].sizes().back()})};
                  },
                  kLayerNorm});
  rows.push_back(
      {OpKind::LayerNorm,
       "layer_norm over two dims",
       kFloating,
       {in(Values::Finite), in(Values::Finite), in(Values::Finite)},
       {{"3-d", {{4, 3, 8}, {3, 8}, {3, 8}}}, {"empty rows", {{4, 0, 8}, {0, 8}, {0, 8}}}},
       [](const std::vector<Tensor>& x, const Context&) {
         const LayerNormResult r = layer_norm_with_stats(x[0], x[1].sizes(), x[1], x[2]);
         return std::vector<Tensor>{r.output, r.mean, r.rstd};
       },
       kLayerNorm});
  // Inputs: grad, x, weight; the statistics come from the forward on the same device.
  rows.push_back({OpKind::LayerNormBackward,
                  "layer_norm_backward",
                  kFloating,
                  {in(Values::Finite), in(Values::Finite), in(Values::Finite)},
                  {{"rows", {{33, 47}, {33, 47}, {47}}},
                   {"3-d", {{2, 3, 8}, {2, 3, 8}, {8}}},
                   // Many runs of 64 rows, the last one short (Note [Summing columns]).
                   {"gpt, odd rows", {{2047, 130}, {2047, 130}, {130}}},
                   {"gpt-2 rows, packed", {{64, 768}, {64, 768}, {768}}},
                   {"size 0", {{0, 8}, {0, 8}, {8}}}},
                  [](const std::vector<Tensor>& x, const Context&) {
                    const std::int64_t n = x[1].sizes().back();
                    const LayerNormResult r = layer_norm_with_stats(x[1], {n}, x[2]);
                    const LayerNormGrads g =
                        layer_norm_backward(x[0], x[1], r.mean, r.rstd, {n}, x[2]);
                    return std::vector<Tensor>{g.grad_input, g.grad_weight, g.grad_bias};
                  },
                  kLayerNorm});
}

// rms_norm sums in double on both sides, as layer_norm: the same tolerances.
void add_rms_norm_rows(std::vector<Row>& rows) {
  const std::vector<Shapes> shapes = {
      {"rows", {{33, 47}, {47}}},          {"3-d", {{2, 3, 8}, {8}}}, {"gpt", {{2048, 128}, {128}}},
      {"block rows", {{3, 1500}, {1500}}}, {"size 0", {{0, 8}, {8}}}, {"size 1", {{1, 1}, {1}}}};
  rows.push_back({OpKind::RmsNorm,
                  "rms_norm",
                  kFloating,
                  {in(Values::Finite), in(Values::Finite)},
                  shapes,
                  [](const std::vector<Tensor>& x, const Context&) {
                    const RmsNormResult r =
                        rms_norm_with_stats(x[0], {x[0].sizes().back()}, x[1], 1e-6);
                    return std::vector<Tensor>{r.output, r.rrms};
                  },
                  kLayerNorm});
  rows.push_back(
      {OpKind::RmsNorm,
       "rms_norm without weight, over two dims",
       kFloating,
       {in(Values::Finite)},
       {{"3-d", {{4, 3, 8}}}, {"empty rows", {{4, 0, 8}}}},
       [](const std::vector<Tensor>& x, const Context&) {
         const RmsNormResult r = rms_norm_with_stats(x[0], {x[0].sizes()[1], x[0].sizes()[2]});
         return std::vector<Tensor>{r.output, r.rrms};
       },
       kLayerNorm});
  // Inputs: grad, x, weight; rrms comes from the forward on the same device.
  rows.push_back({OpKind::RmsNormBackward,
                  "rms_norm_backward",
                  kFloating,
                  {in(Values::Finite), in(Values::Finite), in(Values::Finite)},
                  {{"rows", {{33, 47}, {33, 47}, {47}}},
                   {"3-d", {{2, 3, 8}, {2, 3, 8}, {8}}},
                   {"gpt, odd rows", {{2047, 130}, {2047, 130}, {130}}},
                   {"size 0", {{0, 8}, {0, 8}, {8}}}},
                  [](const std::vector<Tensor>& x, const Context&) {
                    const std::int64_t n = x[1].sizes().back();
                    const RmsNormResult r = rms_norm_with_stats(x[1], {n}, x[2]);
                    const RmsNormGrads g = rms_norm_backward(x[0], x[1], r.rrms, {n}, x[2]);
                    return std::vector<Tensor>{g.grad_input, g.grad_weight};
                  },
                  kLayerNorm});
}

// Both sides sum in the inputs' precision (the CPU with Eigen, as matmul), in different orders;
// the backward's p (dp - delta) cancels, so float32 carries about 1e-5 of relative error (7e-5
// at worst measured on the GPT's shapes), and sums over the 100 positions of "three tiles" a few
// 1e-5 of absolute error (2.7e-5 measured against the CPU; numpy's float32 against float64 errs
// as much). float64: a few ulps. bfloat16 and float16 run cuDNN's fused attention, which rounds
// the probabilities to 8 (11) bits before they multiply v, and its backward likewise: single
// elements near zero then differ from the CPU's float32 composition by the rounding of the large
// terms that cancel in them (0.055 absolute on a bfloat16 grad_q of magnitude ~1), so they are
// compared as a whole: 2% relative error in bfloat16, 0.25% in float16.
constexpr ParityTolerances kAttention{1e-4, 5e-5, 1e-11, 1e-12, 2e-2};

void add_attention_rows(std::vector<Row>& rows) {
  // q, k, v (B, T, H, D); the backward's grad of that shape too.
  const std::vector<Shapes> shapes = {
      {"gpt head", {{2, 64, 4, 32}, {2, 64, 4, 32}, {2, 64, 4, 32}}},
      {"odd sizes", {{3, 37, 2, 5}, {3, 37, 2, 5}, {3, 37, 2, 5}}},
      {"widest head", {{1, 9, 1, 256}, {1, 9, 1, 256}, {1, 9, 1, 256}}},
      {"three tiles", {{1, 100, 2, 48}, {1, 100, 2, 48}, {1, 100, 2, 48}}},
      {"one position", {{2, 1, 3, 4}, {2, 1, 3, 4}, {2, 1, 3, 4}}},
      {"size 0", {{0, 4, 2, 4}, {0, 4, 2, 4}, {0, 4, 2, 4}}}};
  for (const bool causal : {true, false}) {
    rows.push_back({OpKind::Attention,
                    causal ? "attention causal" : "attention",
                    kFloating,
                    {in(Values::Finite), in(Values::Finite), in(Values::Finite)},
                    shapes,
                    [causal](const std::vector<Tensor>& x, const Context&) {
                      // q read through a transposed view: the kernels follow strides
                      const Tensor q = x[0].transpose(1, 2).contiguous().transpose(1, 2);
                      const AttentionResult r = attention_with_lse(q, x[1], x[2], causal, 0.25);
                      return std::vector<Tensor>{r.output, r.lse};
                    },
                    kAttention});
    std::vector<Shapes> backward_shapes;
    for (const Shapes& s : shapes) {
      Shapes with_grad = s;
      with_grad.sizes.push_back(s.sizes[0]);
      backward_shapes.push_back(with_grad);
    }
    rows.push_back(
        {OpKind::AttentionBackward,
         causal ? "attention_backward causal" : "attention_backward",
         kFloating,
         {in(Values::Finite), in(Values::Finite), in(Values::Finite), in(Values::Finite)},
         backward_shapes,
         [causal](const std::vector<Tensor>& x, const Context&) {
           const AttentionResult r = attention_with_lse(x[0], x[1], x[2], causal, 0.25);
           const AttentionGrads g =
               attention_backward(x[3], x[0], x[1], x[2], r.output, r.lse, causal, 0.25);
           return std::vector<Tensor>{g.grad_q, g.grad_k, g.grad_v};
         },
         kAttention});
  }
}

void add_embedding_rows(std::vector<Row>& rows) {
  rows.push_back({OpKind::Embedding,
                  "embedding",
                  kArithmetic,
                  {in(), indices(10)},
                  {{"matrix of indices", {{10, 8}, {4, 6}}},
                   {"gpt tokens", {{10, 128}, {2048}}},
                   {"size 0", {{10, 8}, {0}}}},
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{embedding(x[0], x[1])};
                  },
                  kExact});
  // Up to 512 indices the kernel scans; above, it sorts (ops/cuda/embedding.cu): both paths.
  for (const std::int64_t rows_count : {std::int64_t{10}, std::int64_t{50000}}) {
    rows.push_back({OpKind::EmbeddingBackward,
                    "embedding_backward " + std::to_string(rows_count) + " rows",
                    kFloating,
                    {in(), indices(rows_count)},
                    {{"scan path", {{4, 6, 8}, {4, 6}}},
                     {"sort path", {{2048, 16}, {2048}}},
                     {"size 0", {{0, 8}, {0}}}},
                    [rows_count](const std::vector<Tensor>& x, const Context&) {
                      return std::vector<Tensor>{embedding_backward(x[0], x[1], rows_count)};
                    },
                    kExact});
  }
}

// A convolution's geometry, for the three conv rows.
struct ConvGeometry {
  std::string name;
  DimVector input, weight;
  DimVector stride, padding, dilation;
  std::int64_t groups;
};

std::vector<ConvGeometry> conv_geometries() {
  return {{"cnn layer 1", {8, 1, 28, 28}, {32, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
          {"cnn layer 2", {4, 32, 14, 14}, {64, 32, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
          {"1x1 kernel, odd sizes", {1, 5, 7, 3}, {4, 5, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1},
          {"stride 2 dilation 2", {2, 3, 11, 9}, {4, 3, 3, 2}, {2, 2}, {0, 1}, {2, 2}, 1},
          {"groups 2", {2, 4, 8, 8}, {6, 2, 3, 3}, {1, 2}, {1, 1}, {1, 1}, 2},
          {"size 1", {1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1}};
}

DimVector conv_output_sizes(const ConvGeometry& g) {
  DimVector out = {g.input[0], g.weight[0]};
  for (std::size_t d = 0; d < 2; ++d) {
    const std::int64_t extent = g.dilation[d] * (g.weight[d + 2] - 1) + 1;
    out.push_back((g.input[d + 2] + 2 * g.padding[d] - extent) / g.stride[d] + 1);
  }
  return out;
}

void add_conv_rows(std::vector<Row>& rows) {
  for (const ConvGeometry& g : conv_geometries()) {
    const DimVector out = conv_output_sizes(g);
    rows.push_back({OpKind::Conv2d,
                    "conv2d " + g.name,
                    kFloating,
                    {in(Values::Finite), in(Values::Finite), in(Values::Finite)},
                    {{g.name, {g.input, g.weight, {g.weight[0]}}}},
                    [g](const std::vector<Tensor>& x, const Context&) {
                      return std::vector<Tensor>{
                          conv2d(x[0], x[1], x[2], g.stride, g.padding, g.dilation, g.groups)};
                    },
                    kConv});
    rows.push_back({OpKind::Conv2d,
                    "conv2d without bias " + g.name,
                    kFloating,
                    {in(Values::Finite), in(Values::Finite)},
                    {{g.name, {g.input, g.weight}}},
                    [g](const std::vector<Tensor>& x, const Context&) {
                      return std::vector<Tensor>{
                          conv2d(x[0], x[1], {}, g.stride, g.padding, g.dilation, g.groups)};
                    },
                    kConv});
    rows.push_back({OpKind::Conv2dBackwardInput,
                    "conv2d_backward_input " + g.name,
                    kFloating,
                    {in(Values::Finite), in(Values::Finite)},
                    {{g.name, {out, g.weight}}},
                    [g](const std::vector<Tensor>& x, const Context&) {
                      return std::vector<Tensor>{conv2d_backward_input(
                          x[0], x[1], g.input, g.stride, g.padding, g.dilation, g.groups)};
                    },
                    kConv});
    rows.push_back({OpKind::Conv2dBackwardWeight,
                    "conv2d_backward_weight " + g.name,
                    kFloating,
                    {in(Values::Finite), in(Values::Finite)},
                    {{g.name, {out, g.input}}},
                    [g](const std::vector<Tensor>& x, const Context&) {
                      return std::vector<Tensor>{conv2d_backward_weight(
                          x[0], x[1], g.weight, g.stride, g.padding, g.dilation, g.groups)};
                    },
                    kConv});
  }
}

void add_pool_rows(std::vector<Row>& rows) {
  // (input sizes, kernel, stride, padding, pooled sizes)
  struct Pool {
    std::string name;
    DimVector input, kernel, stride, padding, output;
  };
  const Pool pools[] = {
      {"cnn 2x2", {8, 32, 28, 28}, {2, 2}, {2, 2}, {0, 0}, {8, 32, 14, 14}},
      {"3x3 stride 1 padding 1", {2, 3, 7, 9}, {3, 3}, {1, 1}, {1, 1}, {2, 3, 7, 9}},
      {"overlapping 3x2 stride 2x1, no batch", {3, 9, 8}, {3, 2}, {2, 1}, {1, 0}, {3, 5, 7}},
      {"empty batch", {0, 3, 4, 4}, {2, 2}, {2, 2}, {0, 0}, {0, 3, 2, 2}},
  };
  for (const Pool& p : pools) {
    rows.push_back({OpKind::MaxPool2d,
                    "max_pool2d " + p.name,
                    kFloating,
                    {in()},
                    {{p.name, {p.input}}},
                    [p](const std::vector<Tensor>& x, const Context&) {
                      auto [values, where] =
                          max_pool2d_with_indices(x[0], p.kernel, p.stride, p.padding);
                      return std::vector<Tensor>{values, where};
                    },
                    kExact});
    rows.push_back({OpKind::AvgPool2d,
                    "avg_pool2d " + p.name,
                    kFloating,
                    {in()},
                    {{p.name, {p.input}}},
                    [p](const std::vector<Tensor>& x, const Context&) {
                      return std::vector<Tensor>{avg_pool2d(x[0], p.kernel, p.stride, p.padding)};
                    },
                    kExact});
    // Inputs: grad (pooled sizes), x; the indices come from the forward on the same device.
    rows.push_back({OpKind::MaxPool2dBackward,
                    "max_pool2d_backward " + p.name,
                    kFloating,
                    {in(Values::Finite), in(Values::Finite)},
                    {{p.name, {p.output, p.input}}},
                    [p](const std::vector<Tensor>& x, const Context&) {
                      const Tensor where =
                          max_pool2d_with_indices(x[1], p.kernel, p.stride, p.padding).second;
                      return std::vector<Tensor>{max_pool2d_backward(x[0], where, p.input)};
                    },
                    kExact});
    rows.push_back({OpKind::AvgPool2dBackward,
                    "avg_pool2d_backward " + p.name,
                    kFloating,
                    {in()},
                    {{p.name, {p.output}}},
                    [p](const std::vector<Tensor>& x, const Context&) {
                      return std::vector<Tensor>{
                          avg_pool2d_backward(x[0], p.input, p.kernel, p.stride, p.padding)};
                    },
                    kExact});
  }
}

void add_shape_rows(std::vector<Row>& rows) {
  rows.push_back({OpKind::Cat,
                  "cat dim 0",
                  kAll,
                  {in(), in(), in()},
                  {{"rows", {{2, 3}, {4, 3}, {1, 3}}},
                   {"one empty", {{2, 3}, {0, 3}, {5, 3}}},
                   {"vectors", {{4099}, {1}, {7}}}},
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{cat({x[0], x[1], x[2]}, 0)};
                  },
                  kExact});
  rows.push_back(
      {OpKind::Cat,
       "cat dim -1",
       kAll,
       {in(), in(), in()},
       {{"columns", {{2, 3, 2}, {2, 3, 5}, {2, 3, 1}}}, {"one empty", {{2, 3}, {2, 0}, {2, 5}}}},
       [](const std::vector<Tensor>& x, const Context&) {
         return std::vector<Tensor>{cat({x[0], x[1], x[2]}, -1)};
       },
       kExact});
  const std::vector<Shapes> matrices = {
      {"wide", {{7, 9}}}, {"batched", {{3, 5, 4}}}, {"size 0", {{0, 4}}}, {"size 1", {{1, 1}}}};
  for (const std::int64_t diagonal : {0, 2, -1}) {
    rows.push_back({OpKind::Tril,
                    "tril " + std::to_string(diagonal),
                    kAll,
                    {in()},
                    matrices,
                    [diagonal](const std::vector<Tensor>& x, const Context&) {
                      return std::vector<Tensor>{tril(x[0], diagonal)};
                    },
                    kExact});
    rows.push_back({OpKind::Triu,
                    "triu " + std::to_string(diagonal),
                    kAll,
                    {in()},
                    matrices,
                    [diagonal](const std::vector<Tensor>& x, const Context&) {
                      return std::vector<Tensor>{triu(x[0], diagonal)};
                    },
                    kExact});
  }
  rows.push_back({OpKind::OneHot,
                  "one_hot",
                  {DType::Int64},
                  {indices(6)},
                  {{"vector", {{17}}}, {"matrix", {{3, 4}}}, {"size 0", {{0}}}},
                  [](const std::vector<Tensor>& x, const Context&) {
                    return std::vector<Tensor>{one_hot(x[0], 6)};
                  },
                  kExact});
}

void add_random_rows(std::vector<Row>& rows) {
  // Factories: no inputs; the shape variant's first entry is the result's sizes. Both devices
  // draw the same Philox words from generators in the same state.
  const std::vector<Shapes> sizes = {{"matrix", {{33, 65}}},
                                     {"odd length", {{100003}}},
                                     {"0-d", {{}}},
                                     {"size 0", {{3, 0, 2}}},
                                     {"size 1", {{1}}}};
  rows.push_back({OpKind::Rand,
                  "rand",
                  kFloating,
                  {},
                  sizes,
                  [](const std::vector<Tensor>&, const Context& context) {
                    return std::vector<Tensor>{
                        rand((*context.sizes)[0], on(context, context.dtype), context.generator)};
                  },
                  kExact});
  rows.push_back({OpKind::Randn,
                  "randn",
                  kFloating,
                  {},
                  sizes,
                  [](const std::vector<Tensor>&, const Context& context) {
                    return std::vector<Tensor>{
                        randn((*context.sizes)[0], on(context, context.dtype), context.generator)};
                  },
                  kNormal});
  rows.push_back({OpKind::Randint,
                  "randint",
                  {DType::Int64},
                  {},
                  sizes,
                  [](const std::vector<Tensor>&, const Context& context) {
                    return std::vector<Tensor>{
                        randint(-5, 7, (*context.sizes)[0], context.generator, context.device)};
                  },
                  kExact});
  rows.push_back({OpKind::Dropout,
                  "dropout",
                  kFloating,
                  {in()},
                  unary_shapes(),
                  [](const std::vector<Tensor>& x, const Context& context) {
                    return std::vector<Tensor>{dropout(x[0], 0.3, true, context.generator)};
                  },
                  kExact});
}

std::vector<Row> parity_rows() {
  std::vector<Row> rows;
  add_elementwise_rows(rows);
  add_inplace_rows(rows);
  add_optim_rows(rows);
  add_reduce_rows(rows);
  add_linalg_rows(rows);
  add_softmax_rows(rows);
  add_layer_norm_rows(rows);
  add_rms_norm_rows(rows);
  add_attention_rows(rows);
  add_embedding_rows(rows);
  add_conv_rows(rows);
  add_pool_rows(rows);
  add_shape_rows(rows);
  add_random_rows(rows);
  return rows;
}

// ---------------------------------------------------------------------------------------------
// The harness.

// Input values on the CPU (contiguous).
Tensor make_input(const Input& input, IntArrayRef sizes, DType dtype, unsigned seed) {
  switch (input.values) {
    case Values::Quarters:
      return random_quarters(sizes, dtype, seed, /*nan_every=*/23);
    case Values::Finite:
      return random_quarters(sizes, dtype, seed);
    case Values::Positive:
      return random_tensor(sizes, dtype, 0.25, 3.25, seed);
    case Values::Mask:
      return random_quarters(sizes, DType::Bool, seed);
    case Values::Index:
      return random_integers(sizes, 0, input.bound, seed);
    case Values::Target: {
      const Tensor t = random_integers(sizes, 0, input.bound, seed);
      std::int64_t* data = t.data<std::int64_t>();
      for (std::int64_t i = 3; i < t.numel(); i += 7) data[i] = -100;
      return t;
    }
  }
  return {};
}

enum class Layout : std::uint8_t { Contiguous, Offset, Strided, Transposed };

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::Contiguous:
      return "contiguous";
    case Layout::Offset:
      return "offset by one element";
    case Layout::Strided:
      return "strided";
    case Layout::Transposed:
      return "transposed";
  }
  return "?";
}

// The CPU input's values on the GPU in `layout`: contiguous; contiguous but starting one element
// into its buffer (so vectorised kernels meet a block that is not 16-byte aligned); a stride-3
// view of a wider buffer; or the last two dims swapped in memory (tensors of fewer than two dims
// stay contiguous).
Tensor place_on_gpu(const Tensor& cpu, Layout layout) {
  switch (layout) {
    case Layout::Contiguous:
      return cpu.to(kGpu);
    case Layout::Offset: {
      const Tensor buffer = zeros({cpu.numel() + 1}, TensorOptions(cpu.dtype()).device(kGpu));
      const Tensor view = buffer.slice(0, 1, cpu.numel() + 1).view(cpu.sizes());
      view.copy_(cpu.to(kGpu));
      return view;
    }
    case Layout::Strided:
      return strided_on_gpu(cpu);
    case Layout::Transposed:
      if (cpu.dim() < 2) return cpu.to(kGpu);
      return cpu.transpose(-1, -2).contiguous().to(kGpu).transpose(-1, -2);
  }
  return {};
}

// Watches the dispatch point for one op kind.
class KindSeen final : public OpObserver {
 public:
  explicit KindSeen(OpKind kind) : kind_(kind) {}
  void on_op(const OpCall& call, const OpOutputs&) override { seen_ = seen_ || call.kind == kind_; }
  bool seen() const { return seen_; }

 private:
  OpKind kind_;
  bool seen_ = false;
};

constexpr std::uint64_t kSeed = 20261125;

// The optimizers keep float32 master state: they refuse 16-bit parameters (ops/optim.h).
bool takes_reduced(OpKind kind) {
  return kind != OpKind::SgdStep && kind != OpKind::AdamwStep;
}

// The row's dtypes, with bfloat16 and float16 where it takes float32.
std::vector<DType> dtypes_of(const Row& row) {
  std::vector<DType> dtypes = row.dtypes;
  const bool floating = std::find(dtypes.begin(), dtypes.end(), DType::Float32) != dtypes.end();
  if (floating && takes_reduced(row.kind)) {
    dtypes.push_back(DType::BFloat16);
    dtypes.push_back(DType::Float16);
  }
  return dtypes;
}

void run_row(const Row& row) {
  const Layout layouts[] = {Layout::Contiguous, Layout::Offset, Layout::Strided,
                            Layout::Transposed};
  for (const DType dtype : dtypes_of(row)) {
    for (const Shapes& shapes : row.shapes) {
      ASSERT_TRUE(row.inputs.empty() || shapes.sizes.size() == row.inputs.size())
          << row.name << " " << shapes.name << ": one shape per input";
      for (const Layout layout : layouts) {
        const std::string what = row.name + " " + std::string(dtype_name(dtype)) + " " +
                                 shapes.name + " " + layout_name(layout);
        std::vector<Tensor> cpu_inputs, gpu_inputs;
        for (std::size_t i = 0; i < row.inputs.size(); ++i) {
          const Input& input = row.inputs[i];
          Tensor value = make_input(input, shapes.sizes[i], dtype, static_cast<unsigned>(i + 1));
          if (input.follows_dtype) value = value.to(dtype);
          cpu_inputs.push_back(value);
          gpu_inputs.push_back(place_on_gpu(value, layout));
        }
        Generator cpu_generator(kSeed), gpu_generator(kSeed);
        const std::vector<Tensor> expected =
            row.run(cpu_inputs, Context{kCPU, dtype, &cpu_generator, &shapes.sizes});
        KindSeen seen(row.kind);
        std::vector<Tensor> got;
        {
          const OpObserverGuard watching(&seen);
          got = row.run(gpu_inputs, Context{kGpu, dtype, &gpu_generator, &shapes.sizes});
        }
        EXPECT_TRUE(seen.seen()) << what << ": the GPU call never dispatched " << row.kind;
        ASSERT_EQ(got.size(), expected.size()) << what;
        for (std::size_t i = 0; i < got.size(); ++i) {
          expect_device_parity(expected[i], got[i], what + " output " + std::to_string(i),
                               row.tolerances);
        }
        EXPECT_EQ(cpu_generator.offset(), gpu_generator.offset())
            << what << ": the devices reserved different numbers of Philox counters";
      }
    }
  }
}

const std::vector<Row>& all_rows() {
  static const std::vector<Row> rows = parity_rows();
  return rows;
}

class CudaParityTest : public ::testing::TestWithParam<std::size_t> {};

TEST_P(CudaParityTest, MatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  run_row(all_rows()[GetParam()]);
}

std::string row_test_name(const ::testing::TestParamInfo<std::size_t>& info) {
  std::string name = std::to_string(info.param) + "_" + all_rows()[info.param].name;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Rows, CudaParityTest, ::testing::Range<std::size_t>(0, all_rows().size()),
                         row_test_name);

// Every op with a CUDA kernel has a row. Runs without a GPU too: the op table says which kinds
// have a CUDA kernel in this build. The collectives have no kernel of grove's to compare: their
// CUDA entry hands the memory to NCCL, which tests/dist/nccl_test.cpp checks on the GPU.
TEST(CudaParityCoverageTest, EveryOpWithACudaKernelHasARow) {
  std::set<OpKind> covered = {OpKind::AllReduce, OpKind::Broadcast, OpKind::AllGather};
  for (const Row& row : all_rows()) covered.insert(row.kind);
  for (std::size_t k = 0; k < static_cast<std::size_t>(OpKind::Count); ++k) {
    const auto kind = static_cast<OpKind>(k);
    if (op_entry(kind).cuda == nullptr) continue;
    EXPECT_TRUE(covered.count(kind) == 1)
        << kind << " has a CUDA kernel but no row in the parity table (tests/ops/"
        << "cuda_parity_test.cpp): add one";
  }
}

}  // namespace
}  // namespace grove::ops::testing
