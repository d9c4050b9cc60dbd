// Typed attributes: for each op that keeps arguments in OpAttributes' positional fields (`ints`,
// `reals`, `flag`), one small struct that names them, writes them (to_attributes) and reads them
// back (from), so that the user function, `infer`, the CPU and CUDA kernels and the derivative
// rule agree on one layout written down once, here. Each also prints itself
// (`stride=[1,1] padding=[1,1] dilation=[1,1] groups=1`); each op's OpEntry::describe prints a
// call's attributes with it, for error messages and the IR's printer (describe_attributes() in
// ops/op_table.h).
//
// Not here: ops whose only attribute is a named field already (the scalar of add(x, 2), the
// fill value of fill_, the alpha of add_): their entries print those directly.
//
// from() checks grove's own invariant that the OpAttributes were written by to_attributes() of
// the same struct (GROVE_INTERNAL_ASSERT); what a user can get wrong is checked in `infer`, with
// the op's name. Plain C++: the CUDA kernels include it. All functions are cheap and allocate
// nothing beyond the DimVectors they copy (inline capacity covers every rank grove allows).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "ops/dispatch.h"

namespace grove::ops {

// A (height, width) pair of a 2-d op's geometry.
using Pair = std::array<std::int64_t, 2>;

// (h, w) from a list of one value (for both) or two, as PyTorch's _pair; a grove::Error naming
// the op and `what` for any other length.
Pair pair_of(IntArrayRef values, OpKind kind, const char* what);

// conv2d, conv2d_backward_input, conv2d_backward_weight (ops/conv.h).
// ints = [sizes (4 values, backward ops only)], stride (2), padding (2), dilation (2), groups.
struct Conv2dAttributes {
  Pair stride{1, 1};
  Pair padding{0, 0};
  Pair dilation{1, 1};
  std::int64_t groups = 1;
  // conv2d_backward_input: input_sizes (N, C, H, W); conv2d_backward_weight: weight_sizes
  // (O, C / G, kH, kW); conv2d: empty.
  DimVector sizes;

  static constexpr std::size_t kGeometryInts = 7;
  static constexpr std::size_t kSizes = 4;

  OpAttributes to_attributes() const;
  static Conv2dAttributes from(const OpAttributes& attributes);
  // "stride=[1,1] padding=[0,0] dilation=[1,1] groups=1", after "<sizes_name>=[...] " when the
  // sizes are set.
  std::string describe(const char* sizes_name = "sizes") const;
};

// max_pool2d, avg_pool2d, avg_pool2d_backward (ops/pool.h).
// ints = kernel (2), stride (2), padding (2), [input_sizes (3 or 4 values, the backward only)].
struct Pool2dAttributes {
  Pair kernel{1, 1};
  Pair stride{1, 1};
  Pair padding{0, 0};
  DimVector input_sizes;  // avg_pool2d_backward: (C, H, W) or (N, C, H, W); forward: empty

  static constexpr std::size_t kWindowInts = 6;

  OpAttributes to_attributes() const;
  static Pool2dAttributes from(const OpAttributes& attributes);
  std::string describe() const;  // "kernel=[2,2] stride=[2,2] padding=[0,0]"
};

// max_pool2d_backward: ints = input_sizes (3 or 4 values).
struct MaxPool2dBackwardAttributes {
  DimVector input_sizes;

  OpAttributes to_attributes() const;
  static MaxPool2dBackwardAttributes from(const OpAttributes& attributes);
  std::string describe() const;
};

// layer_norm, rms_norm and their backward ops (ops/layer_norm.h, ops/rms_norm.h): ints =
// normalized_shape; reals[0] = eps (the forward ops only); flag = has_weight (the weight is among
// the inputs).
struct LayerNormAttributes {
  DimVector normalized_shape;
  double eps = 0.0;
  bool has_weight = false;

  OpAttributes to_attributes() const;
  static LayerNormAttributes from(const OpAttributes& attributes);
  std::string describe(bool with_eps) const;
};

// sum, mean, var, max, argmax (ops/reduce.h): ints = dims as given (possibly negative; empty:
// every dim); flag = keepdim; reals[0] = correction (var only; 0 otherwise).
struct ReduceAttributes {
  DimVector dims;
  bool keepdim = false;
  double correction = 0.0;

  OpAttributes to_attributes() const;
  static ReduceAttributes from(const OpAttributes& attributes);
  std::string describe(bool with_correction) const;
};

// softmax, log_softmax: ints[0] = dim.
struct SoftmaxAttributes {
  std::int64_t dim = -1;

  OpAttributes to_attributes() const;
  static SoftmaxAttributes from(const OpAttributes& attributes);
  std::string describe() const;
};

// cross_entropy, nll_loss and their backward ops: ints[0] = ignore_index.
struct LossAttributes {
  std::int64_t ignore_index = -100;

  OpAttributes to_attributes() const;
  static LossAttributes from(const OpAttributes& attributes);
  std::string describe() const;
};

// clamp: reals[0] = low, reals[1] = high (+/-infinity for no bound).
struct ClampAttributes {
  double low = 0.0;
  double high = 0.0;

  OpAttributes to_attributes() const;
  static ClampAttributes from(const OpAttributes& attributes) {
    return {attributes.reals[0], attributes.reals[1]};
  }
  std::string describe() const;
};

// pow: reals[0] = exponent.
struct PowAttributes {
  double exponent = 1.0;

  OpAttributes to_attributes() const;
  static PowAttributes from(const OpAttributes& attributes) { return {attributes.reals[0]}; }
  std::string describe() const;
};

// attention, attention_backward: flag = causal, reals[0] = scale.
struct AttentionAttributes {
  bool causal = false;
  double scale = 1.0;

  OpAttributes to_attributes() const;
  static AttentionAttributes from(const OpAttributes& attributes) {
    return {attributes.flag, attributes.reals[0]};
  }
  std::string describe() const;
};

// gelu, gelu_backward: flag = approximate (the tanh approximation).
struct GeluAttributes {
  bool approximate = false;

  OpAttributes to_attributes() const;
  static GeluAttributes from(const OpAttributes& attributes) { return {attributes.flag}; }
  std::string describe() const;
};

// What the unary elementwise kernels take besides the input, for whichever unary op they run:
// clamp's bounds, pow's exponent, gelu's approximation; zeros and false for the other ops.
struct UnaryParameters {
  double first = 0.0;        // clamp: low; pow: the exponent
  double second = 0.0;       // clamp: high
  bool approximate = false;  // gelu

  static UnaryParameters of(const OpCall& call) {
    switch (call.kind) {
      case OpKind::Clamp: {
        const ClampAttributes clamp = ClampAttributes::from(call.attributes);
        return {clamp.low, clamp.high, false};
      }
      case OpKind::Pow:
        return {PowAttributes::from(call.attributes).exponent, 0.0, false};
      case OpKind::Gelu:
        return {0.0, 0.0, GeluAttributes::from(call.attributes).approximate};
      default:
        return {};
    }
  }
};

// uniform_ (reals = low, high) and normal_ (reals = mean, std); generator: null for the
// device's default one.
struct UniformAttributes {
  double low = 0.0;
  double high = 1.0;
  Generator* generator = nullptr;

  OpAttributes to_attributes() const;
  static UniformAttributes from(const OpAttributes& attributes) {
    return {attributes.reals[0], attributes.reals[1], attributes.generator};
  }
  std::string describe() const;
};
struct NormalAttributes {
  double mean = 0.0;
  double std = 1.0;
  Generator* generator = nullptr;

  OpAttributes to_attributes() const;
  static NormalAttributes from(const OpAttributes& attributes) {
    return {attributes.reals[0], attributes.reals[1], attributes.generator};
  }
  std::string describe() const;
};

// The most parameters one sgd_ or adamw_ call updates (ops/optim.h).
inline constexpr std::int64_t kMaxOptimParams = std::int64_t{1} << 20;

// sgd_ (ops/optim.h): reals = lr, momentum, weight_decay; flag = nesterov; ints = {1} when the
// learning rate is read from the call's last input, a tensor (lr is then unused), else empty;
// ints = {lr_from_tensor, params} when one call updates params > 1 parameters, and
// {lr_from_tensor, params, 1} when the update is skipped if its last input, found_inf, is not 0
// (GradScaler's skip: Note [Loss scaling on the device] in ops/optim.h).
struct SgdAttributes {
  double lr = 0.0;
  double momentum = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  bool lr_from_tensor = false;
  std::int64_t params = 1;
  bool skip_if_found_inf = false;

  OpAttributes to_attributes() const;
  static SgdAttributes from(const OpAttributes& attributes) {
    return {attributes.reals[0],
            attributes.reals[1],
            attributes.reals[2],
            attributes.flag,
            !attributes.ints.empty() && attributes.ints[0] != 0,
            attributes.ints.size() > 1 ? attributes.ints[1] : 1,
            attributes.ints.size() > 2 && attributes.ints[2] != 0};
  }
  std::string describe() const;
};

// adamw_ (ops/optim.h): reals = lr, beta1, beta2, eps; scalar = weight_decay; ints = {1} when
// the learning rate is read from the call's last input, a tensor (lr is then unused), else empty;
// ints = {lr_from_tensor, params} when one call updates params > 1 parameters, and
// {lr_from_tensor, params, 1} when it skips on found_inf, as sgd_.
struct AdamwAttributes {
  double lr = 0.0;
  double beta1 = 0.0;
  double beta2 = 0.0;
  double eps = 0.0;
  double weight_decay = 0.0;
  bool lr_from_tensor = false;
  std::int64_t params = 1;
  bool skip_if_found_inf = false;

  OpAttributes to_attributes() const;
  static AdamwAttributes from(const OpAttributes& attributes) {
    return {attributes.reals[0],
            attributes.reals[1],
            attributes.reals[2],
            attributes.reals[3],
            attributes.scalar.to<double>(),
            !attributes.ints.empty() && attributes.ints[0] != 0,
            attributes.ints.size() > 1 ? attributes.ints[1] : 1,
            attributes.ints.size() > 2 && attributes.ints[2] != 0};
  }
  std::string describe() const;
};

// unscale_grads_ (ops/optim.h): ints = {grads}, the number of gradients the call unscales.
struct UnscaleAttributes {
  std::int64_t grads = 1;

  OpAttributes to_attributes() const;
  static UnscaleAttributes from(const OpAttributes& attributes) {
    return {attributes.ints.empty() ? 1 : attributes.ints[0]};
  }
  std::string describe() const;
};

// update_scale_ (ops/optim.h): reals = growth_factor, backoff_factor; ints = {growth_interval}.
struct UpdateScaleAttributes {
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  std::int64_t growth_interval = 2000;

  OpAttributes to_attributes() const;
  static UpdateScaleAttributes from(const OpAttributes& attributes) {
    return {attributes.reals[0], attributes.reals[1],
            attributes.ints.empty() ? 1 : attributes.ints[0]};
  }
  std::string describe() const;
};

// rand, randn (ops/random.h). Factories have no input to take a device from, and OpAttributes
// has no device field, so the device travels at the front of ints:
// ints = device type, device index, sizes...; dtype; generator (null: the device's default).
struct FactoryAttributes {
  Device device = kCPU;
  DimVector sizes;
  DType dtype = DType::Float32;
  Generator* generator = nullptr;

  OpAttributes to_attributes() const;
  static FactoryAttributes from(const OpAttributes& attributes);
  std::string describe() const;
};

// randint: ints = device type, device index, low, high, sizes...; dtype int64; generator.
struct RandintAttributes {
  Device device = kCPU;
  std::int64_t low = 0;
  std::int64_t high = 1;
  DimVector sizes;
  Generator* generator = nullptr;

  // How many values are drawn from, high - low: it may not fit an int64 (e.g. [-2^62, 2^62]); it
  // always fits a uint64. A value is low + bits % range, in uint64.
  std::uint64_t range() const {
    return static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low);
  }

  OpAttributes to_attributes() const;
  static RandintAttributes from(const OpAttributes& attributes);
  std::string describe() const;
};

// dropout: reals[0] = p; flag = training (always true once dispatched); generator.
struct DropoutAttributes {
  double p = 0.5;
  Generator* generator = nullptr;

  OpAttributes to_attributes() const;
  static DropoutAttributes from(const OpAttributes& attributes) {
    return {attributes.reals[0], attributes.generator};
  }
  std::string describe() const;
};

// cat: ints[0] = dim (possibly negative).
struct CatAttributes {
  std::int64_t dim = 0;

  OpAttributes to_attributes() const;
  static CatAttributes from(const OpAttributes& attributes);
  std::string describe() const;
};

// tril, triu: ints[0] = diagonal.
struct TriangleAttributes {
  std::int64_t diagonal = 0;

  OpAttributes to_attributes() const;
  static TriangleAttributes from(const OpAttributes& attributes);
  std::string describe() const;
};

// one_hot: ints[0] = num_classes.
struct OneHotAttributes {
  std::int64_t num_classes = 0;

  OpAttributes to_attributes() const;
  static OneHotAttributes from(const OpAttributes& attributes);
  std::string describe() const;
};

// embedding_backward: ints[0] = num_weights (the rows of the weight).
struct EmbeddingBackwardAttributes {
  std::int64_t num_weights = 0;

  OpAttributes to_attributes() const;
  static EmbeddingBackwardAttributes from(const OpAttributes& attributes);
  std::string describe() const;
};

// Printers for OpEntry::describe (ops/dispatch.h), shared by the families' entries.
// `A::from(attributes).describe()` for a struct above whose printer takes no arguments.
template <class A>
std::string describe_as(const OpAttributes& attributes) {
  return A::from(attributes).describe();
}
// "<name>=<scalar>" for ops whose one attribute is the named scalar field (fill_'s value,
// add_'s alpha); the binary ops' "scalar=2" only when the right operand is a scalar.
std::string describe_scalar(const char* name, const OpAttributes& attributes);
std::string describe_scalar_operand(const OpAttributes& attributes);

// Binary ops (add, eq, mul_, ...): (a, b), or (a) alone when b is the scalar attribute.
InputCount binary_input_count(const OpAttributes& attributes);

}  // namespace grove::ops
