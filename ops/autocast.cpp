// See Note [Autocast] in ops/autocast.h.
#include "ops/autocast.h"

#include <unordered_map>

#include "core/stream.h"

namespace grove::ops {
namespace {

struct RuleRow {
  OpKind kind;
  AutocastRule rule;
};

// The one table of autocast rules; every op not here follows its inputs. cross_entropy and
// nll_loss are not here: they compute 16-bit scores in float32 and return a float32 loss
// (Note [A loss is in the compute dtype] in ops/softmax.cpp), which is what a cast would give.
constexpr RuleRow kAutocastRules[] = {
    // The tensor-core ops: float32 inputs run in the guard's 16-bit dtype.
    {OpKind::Matmul, AutocastRule::Lower},
    {OpKind::Linear, AutocastRule::Lower},
    {OpKind::Bmm, AutocastRule::Lower},
    {OpKind::Conv2d, AutocastRule::Lower},
    {OpKind::Attention, AutocastRule::Lower},
    // Ops whose range or sums need float32: 16-bit inputs are widened.
    {OpKind::Softmax, AutocastRule::Float32},
    {OpKind::LogSoftmax, AutocastRule::Float32},
    {OpKind::LayerNorm, AutocastRule::Float32},
    {OpKind::RmsNorm, AutocastRule::Float32},
    {OpKind::Sum, AutocastRule::Float32},
    {OpKind::Mean, AutocastRule::Float32},
    {OpKind::Var, AutocastRule::Float32},
    {OpKind::Exp, AutocastRule::Float32},
    {OpKind::Log, AutocastRule::Float32},
    {OpKind::Pow, AutocastRule::Float32},
    {OpKind::Sqrt, AutocastRule::Float32},
    {OpKind::Rsqrt, AutocastRule::Float32},
};

// A cast of a parameter, kept for the guard's life (Note [Autocast]).
struct CachedCast {
  Tensor source;  // held, so that its address is not reused for another tensor meanwhile
  std::uint64_t version;
  Tensor cast;
};

struct AutocastState {
  std::optional<DType> dtype;
  int enabling_guards = 0;  // alive guards that turned autocast on; the cache dies with the last
  std::unordered_map<const TensorImpl*, CachedCast> cache;  // casts to `dtype`
};

thread_local AutocastState state;

// The inputs autocast may cast: values, not indices, masks, counts or saved statistics.
bool casts_floating(InputDTypes dtypes) {
  return dtypes != InputDTypes::Index && dtypes != InputDTypes::Mask &&
         dtypes != InputDTypes::Count && dtypes != InputDTypes::Statistics;
}

// The wider of two floating dtypes; bfloat16 and float16 meet in float32.
DType wider(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Float64 || b == DType::Float64) return DType::Float64;
  return DType::Float32;
}

// input.to(dtype), made once per parameter version while the guard lives. Casts made while the
// stream captures are not kept: a capture must record its own (a kept one would be a buffer the
// replays never refresh).
Tensor cast(const Tensor& input, DType dtype) {
  const bool cacheable = input.requires_grad() && input.is_leaf() && dtype == state.dtype &&
                         !is_capturing(current_stream(input.device()));
  if (!cacheable) return input.to(dtype);
  auto it = state.cache.find(input.impl());
  if (it != state.cache.end() && it->second.version == input.version()) return it->second.cast;
  Tensor result = input.to(dtype);
  state.cache[input.impl()] = CachedCast{input, input.version(), result};
  return result;
}

}  // namespace

AutocastRule autocast_rule(OpKind kind) {
  for (const RuleRow& row : kAutocastRules) {
    if (row.kind == kind) return row.rule;
  }
  return AutocastRule::Follow;
}

AutocastGuard::AutocastGuard(std::optional<DType> dtype) : previous_(state.dtype) {
  GROVE_CHECK(!dtype || is_reduced_float(*dtype),
              "AutocastGuard: expected bfloat16 or float16 (or std::nullopt to turn autocast "
              "off), but got ",
              *dtype, "; float32 is what runs without a guard");
  if (dtype) {
    if (state.dtype && *state.dtype != *dtype) state.cache.clear();  // casts to the other dtype
    ++state.enabling_guards;
  }
  state.dtype = dtype;
}

AutocastGuard::~AutocastGuard() {
  const bool enabled = state.dtype.has_value();
  state.dtype = previous_;
  if (enabled && --state.enabling_guards == 0) state.cache.clear();
}

std::optional<DType> autocast_dtype() {
  return state.dtype;
}

namespace detail {

void autocast_forget_casts() {
  state.cache.clear();
}

bool is_in_place(OpKind kind) {
  return op_name(kind).ends_with('_');
}

std::vector<Tensor> autocast_inputs(const OpEntry& entry, std::span<const Tensor> inputs) {
  if (is_in_place(entry.kind)) return {};
  const DType low = *state.dtype;
  const AutocastRule rule = autocast_rule(entry.kind);
  // The floating inputs autocast may cast, and the dtype each gets.
  std::optional<DType> widest;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || !is_floating_point(inputs[i].dtype()) ||
        !casts_floating(entry.input(i).dtypes)) {
      continue;
    }
    widest = widest ? wider(*widest, inputs[i].dtype()) : inputs[i].dtype();
  }
  if (!widest) return {};
  auto target = [&](DType dtype) -> DType {
    switch (rule) {
      case AutocastRule::Lower:
        return dtype == DType::Float32 ? low : dtype;
      case AutocastRule::Float32:
        return is_reduced_float(dtype) ? DType::Float32 : dtype;
      case AutocastRule::Follow:
        return *widest;
    }
    return dtype;
  };
  std::vector<Tensor> cast_inputs;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& input = inputs[i];
    const bool floating = input.defined() && is_floating_point(input.dtype()) &&
                          casts_floating(entry.input(i).dtypes);
    const DType want = floating ? target(input.dtype()) : DType::Bool;
    if (!floating || want == input.dtype()) {
      if (!cast_inputs.empty()) cast_inputs.push_back(input);
      continue;
    }
    if (cast_inputs.empty()) cast_inputs.assign(inputs.begin(), inputs.begin() + i);
    cast_inputs.push_back(cast(input, want));
  }
  return cast_inputs;
}

}  // namespace detail
}  // namespace grove::ops
