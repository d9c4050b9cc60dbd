// Typed attributes: writing, reading and printing (see ops/attributes.h).
#include "ops/attributes.h"

#include <charconv>
#include <sstream>

#include "core/error.h"

namespace grove::ops {
namespace {

// "[1,1]": lists without spaces, so that a printed attribute is one word.
std::string list(IntArrayRef values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(values[i]);
  }
  return out + "]";
}
std::string list(const Pair& pair) {
  return list(IntArrayRef(pair.data(), pair.size()));
}

// The shortest text that reads back as the same double ("1e-05", "0.9", "inf").
std::string real(double value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

std::string boolean(bool value) {
  return value ? "true" : "false";
}

std::string generator_text(Generator* generator) {
  return generator == nullptr ? "default" : "given";
}

std::string device_text(Device device) {
  std::ostringstream out;
  out << device;
  return out.str();
}

std::string dtype_text(DType dtype) {
  std::ostringstream out;
  out << dtype;
  return out.str();
}

Pair pair_at(IntArrayRef ints, std::size_t at) {
  return {ints[at], ints[at + 1]};
}

void append(DimVector& ints, const Pair& pair) {
  ints.push_back(pair[0]);
  ints.push_back(pair[1]);
}

void append(DimVector& ints, IntArrayRef values) {
  for (const std::int64_t value : values) ints.push_back(value);
}

// The attributes of an op that has only ints[0].
OpAttributes with_int(std::int64_t value) {
  OpAttributes attributes;
  attributes.ints.push_back(value);
  return attributes;
}
std::int64_t only_int(const OpAttributes& attributes, const char* what) {
  GROVE_INTERNAL_ASSERT(attributes.ints.size() == 1, "expected one attribute int (", what,
                        "), but got ", attributes.ints.size());
  return attributes.ints[0];
}

constexpr std::size_t kDeviceInts = 2;

void append_device(DimVector& ints, Device device) {
  ints.push_back(static_cast<std::int64_t>(device.type));
  ints.push_back(device.index);
}
Device device_at_front(IntArrayRef ints) {
  GROVE_INTERNAL_ASSERT(ints.size() >= kDeviceInts, "factory attributes lack the device");
  return Device(static_cast<DeviceType>(ints[0]), static_cast<int>(ints[1]));
}

}  // namespace

Pair pair_of(IntArrayRef values, OpKind kind, const char* what) {
  GROVE_CHECK(values.size() == 1 || values.size() == 2, op_name(kind), ": expected ", what,
              " as one value or two (height, width), but got ", values);
  return {values[0], values[values.size() - 1]};
}

// ---- conv and pool ---------------------------------------------------------------------------

OpAttributes Conv2dAttributes::to_attributes() const {
  OpAttributes attributes;
  append(attributes.ints, sizes);
  append(attributes.ints, stride);
  append(attributes.ints, padding);
  append(attributes.ints, dilation);
  attributes.ints.push_back(groups);
  return attributes;
}

Conv2dAttributes Conv2dAttributes::from(const OpAttributes& attributes) {
  const IntArrayRef ints = attributes.ints;
  GROVE_INTERNAL_ASSERT(ints.size() == kGeometryInts || ints.size() == kSizes + kGeometryInts,
                        "conv attributes hold 7 ints (11 with sizes), but got ", ints.size());
  const std::size_t at = ints.size() - kGeometryInts;
  Conv2dAttributes result;
  result.sizes = IntArrayRef(ints.data(), at);
  result.stride = pair_at(ints, at);
  result.padding = pair_at(ints, at + 2);
  result.dilation = pair_at(ints, at + 4);
  result.groups = ints[at + 6];
  return result;
}

std::string Conv2dAttributes::describe(const char* sizes_name) const {
  std::string out;
  if (!sizes.empty()) out += std::string(sizes_name) + "=" + list(sizes) + " ";
  return out + "stride=" + list(stride) + " padding=" + list(padding) +
         " dilation=" + list(dilation) + " groups=" + std::to_string(groups);
}

OpAttributes Pool2dAttributes::to_attributes() const {
  OpAttributes attributes;
  append(attributes.ints, kernel);
  append(attributes.ints, stride);
  append(attributes.ints, padding);
  append(attributes.ints, input_sizes);
  return attributes;
}

Pool2dAttributes Pool2dAttributes::from(const OpAttributes& attributes) {
  const IntArrayRef ints = attributes.ints;
  GROVE_INTERNAL_ASSERT(ints.size() == kWindowInts || ints.size() == kWindowInts + 3 ||
                            ints.size() == kWindowInts + 4,
                        "pool attributes hold 6 ints (9 or 10 with input sizes), but got ",
                        ints.size());
  Pool2dAttributes result;
  result.kernel = pair_at(ints, 0);
  result.stride = pair_at(ints, 2);
  result.padding = pair_at(ints, 4);
  result.input_sizes = IntArrayRef(ints.data() + kWindowInts, ints.size() - kWindowInts);
  return result;
}

std::string Pool2dAttributes::describe() const {
  std::string out;
  if (!input_sizes.empty()) out += "input_sizes=" + list(input_sizes) + " ";
  return out + "kernel=" + list(kernel) + " stride=" + list(stride) + " padding=" + list(padding);
}

OpAttributes MaxPool2dBackwardAttributes::to_attributes() const {
  OpAttributes attributes;
  attributes.ints = input_sizes;
  return attributes;
}

MaxPool2dBackwardAttributes MaxPool2dBackwardAttributes::from(const OpAttributes& attributes) {
  GROVE_INTERNAL_ASSERT(attributes.ints.size() == 3 || attributes.ints.size() == 4,
                        "max_pool2d_backward's attributes hold 3 or 4 input sizes, but got ",
                        attributes.ints.size());
  return {attributes.ints};
}

std::string MaxPool2dBackwardAttributes::describe() const {
  return "input_sizes=" + list(input_sizes);
}

// ---- layer_norm, reductions, softmax and the losses ----------------------------------------

OpAttributes AttentionAttributes::to_attributes() const {
  OpAttributes attributes;
  attributes.flag = causal;
  attributes.reals[0] = scale;
  return attributes;
}

std::string AttentionAttributes::describe() const {
  return "causal=" + boolean(causal) + " scale=" + real(scale);
}

OpAttributes LayerNormAttributes::to_attributes() const {
  OpAttributes attributes;
  attributes.ints = normalized_shape;
  attributes.reals[0] = eps;
  attributes.flag = has_weight;
  return attributes;
}

LayerNormAttributes LayerNormAttributes::from(const OpAttributes& attributes) {
  return {attributes.ints, attributes.reals[0], attributes.flag};
}

std::string LayerNormAttributes::describe(bool with_eps) const {
  std::string out = "normalized_shape=" + list(normalized_shape);
  if (with_eps) out += " eps=" + real(eps);
  return out + " weight=" + boolean(has_weight);
}

OpAttributes ReduceAttributes::to_attributes() const {
  OpAttributes attributes;
  attributes.ints = dims;
  attributes.flag = keepdim;
  attributes.reals[0] = correction;
  return attributes;
}

ReduceAttributes ReduceAttributes::from(const OpAttributes& attributes) {
  return {attributes.ints, attributes.flag, attributes.reals[0]};
}

std::string ReduceAttributes::describe(bool with_correction) const {
  std::string out = "dims=" + list(dims) + " keepdim=" + boolean(keepdim);
  if (with_correction) out += " correction=" + real(correction);
  return out;
}

OpAttributes SoftmaxAttributes::to_attributes() const {
  return with_int(dim);
}
SoftmaxAttributes SoftmaxAttributes::from(const OpAttributes& attributes) {
  return {only_int(attributes, "dim")};
}
std::string SoftmaxAttributes::describe() const {
  return "dim=" + std::to_string(dim);
}

OpAttributes LossAttributes::to_attributes() const {
  return with_int(ignore_index);
}
LossAttributes LossAttributes::from(const OpAttributes& attributes) {
  return {only_int(attributes, "ignore_index")};
}
std::string LossAttributes::describe() const {
  return "ignore_index=" + std::to_string(ignore_index);
}

// ---- elementwise, in-place and optimizer updates --------------------------------------------

OpAttributes ClampAttributes::to_attributes() const {
  OpAttributes attributes;
  attributes.reals[0] = low;
  attributes.reals[1] = high;
  return attributes;
}
std::string ClampAttributes::describe() const {
  return "low=" + real(low) + " high=" + real(high);
}

OpAttributes PowAttributes::to_attributes() const {
  OpAttributes attributes;
  attributes.reals[0] = exponent;
  return attributes;
}
std::string PowAttributes::describe() const {
  return "exponent=" + real(exponent);
}

OpAttributes GeluAttributes::to_attributes() const {
  OpAttributes attributes;
  attributes.flag = approximate;
  return attributes;
}
std::string GeluAttributes::describe() const {
  return "approximate=" + boolean(approximate);
}

OpAttributes UniformAttributes::to_attributes() const {
  OpAttributes attributes;
  attributes.reals[0] = low;
  attributes.reals[1] = high;
  attributes.generator = generator;
  return attributes;
}
std::string UniformAttributes::describe() const {
  return "low=" + real(low) + " high=" + real(high) + " generator=" + generator_text(generator);
}

OpAttributes NormalAttributes::to_attributes() const {
  OpAttributes attributes;
  attributes.reals[0] = mean;
  attributes.reals[1] = std;
  attributes.generator = generator;
  return attributes;
}
std::string NormalAttributes::describe() const {
  return "mean=" + real(mean) + " std=" + real(std) + " generator=" + generator_text(generator);
}

OpAttributes SgdAttributes::to_attributes() const {
  OpAttributes attributes;
  attributes.reals = {lr, momentum, weight_decay, 0.0};
  attributes.flag = nesterov;
  if (skip_if_found_inf) {
    attributes.ints = {lr_from_tensor ? 1 : 0, params, 1};
  } else if (params != 1) {
    attributes.ints = {lr_from_tensor ? 1 : 0, params};
  } else if (lr_from_tensor) {
    attributes.ints = {1};
  }
  return attributes;
}
std::string SgdAttributes::describe() const {
  return "lr=" + (lr_from_tensor ? std::string("<tensor>") : real(lr)) +
         " momentum=" + real(momentum) + " weight_decay=" + real(weight_decay) +
         " nesterov=" + boolean(nesterov) +
         (params != 1 ? " params=" + std::to_string(params) : "") +
         (skip_if_found_inf ? " skip_if_found_inf=true" : "");
}

OpAttributes AdamwAttributes::to_attributes() const {
  OpAttributes attributes;
  attributes.reals = {lr, beta1, beta2, eps};
  attributes.scalar = Scalar(weight_decay);
  if (skip_if_found_inf) {
    attributes.ints = {lr_from_tensor ? 1 : 0, params, 1};
  } else if (params != 1) {
    attributes.ints = {lr_from_tensor ? 1 : 0, params};
  } else if (lr_from_tensor) {
    attributes.ints = {1};
  }
  return attributes;
}
std::string AdamwAttributes::describe() const {
  return "lr=" + (lr_from_tensor ? std::string("<tensor>") : real(lr)) + " beta1=" + real(beta1) +
         " beta2=" + real(beta2) + " eps=" + real(eps) + " weight_decay=" + real(weight_decay) +
         (params != 1 ? " params=" + std::to_string(params) : "") +
         (skip_if_found_inf ? " skip_if_found_inf=true" : "");
}

OpAttributes UnscaleAttributes::to_attributes() const {
  OpAttributes attributes;
  attributes.ints = {grads};
  return attributes;
}
std::string UnscaleAttributes::describe() const {
  return "grads=" + std::to_string(grads);
}

OpAttributes UpdateScaleAttributes::to_attributes() const {
  OpAttributes attributes;
  attributes.reals = {growth_factor, backoff_factor, 0.0, 0.0};
  attributes.ints = {growth_interval};
  return attributes;
}
std::string UpdateScaleAttributes::describe() const {
  return "growth_factor=" + real(growth_factor) + " backoff_factor=" + real(backoff_factor) +
         " growth_interval=" + std::to_string(growth_interval);
}

// ---- random ops --------------------------------------------------------------------------------

OpAttributes FactoryAttributes::to_attributes() const {
  OpAttributes attributes;
  append_device(attributes.ints, device);
  append(attributes.ints, sizes);
  attributes.dtype = dtype;
  attributes.generator = generator;
  return attributes;
}

FactoryAttributes FactoryAttributes::from(const OpAttributes& attributes) {
  const IntArrayRef ints = attributes.ints;
  FactoryAttributes result;
  result.device = device_at_front(ints);
  result.sizes = IntArrayRef(ints.data() + kDeviceInts, ints.size() - kDeviceInts);
  result.dtype = attributes.dtype;
  result.generator = attributes.generator;
  return result;
}

std::string FactoryAttributes::describe() const {
  return "sizes=" + list(sizes) + " dtype=" + dtype_text(dtype) + " device=" + device_text(device) +
         " generator=" + generator_text(generator);
}

OpAttributes RandintAttributes::to_attributes() const {
  OpAttributes attributes;
  append_device(attributes.ints, device);
  attributes.ints.push_back(low);
  attributes.ints.push_back(high);
  append(attributes.ints, sizes);
  attributes.dtype = DType::Int64;
  attributes.generator = generator;
  return attributes;
}

RandintAttributes RandintAttributes::from(const OpAttributes& attributes) {
  const IntArrayRef ints = attributes.ints;
  GROVE_INTERNAL_ASSERT(ints.size() >= kDeviceInts + 2, "randint's attributes lack low and high");
  RandintAttributes result;
  result.device = device_at_front(ints);
  result.low = ints[kDeviceInts];
  result.high = ints[kDeviceInts + 1];
  result.sizes = IntArrayRef(ints.data() + kDeviceInts + 2, ints.size() - kDeviceInts - 2);
  result.generator = attributes.generator;
  return result;
}

std::string RandintAttributes::describe() const {
  return "low=" + std::to_string(low) + " high=" + std::to_string(high) + " sizes=" + list(sizes) +
         " device=" + device_text(device) + " generator=" + generator_text(generator);
}

OpAttributes DropoutAttributes::to_attributes() const {
  OpAttributes attributes;
  attributes.reals[0] = p;
  attributes.flag = true;  // training: dropout() dispatches only then
  attributes.generator = generator;
  return attributes;
}
std::string DropoutAttributes::describe() const {
  return "p=" + real(p) + " generator=" + generator_text(generator);
}

// ---- shape ops and embedding -----------------------------------------------------------------

OpAttributes CatAttributes::to_attributes() const {
  return with_int(dim);
}
CatAttributes CatAttributes::from(const OpAttributes& attributes) {
  return {only_int(attributes, "dim")};
}
std::string CatAttributes::describe() const {
  return "dim=" + std::to_string(dim);
}

OpAttributes TriangleAttributes::to_attributes() const {
  return with_int(diagonal);
}
TriangleAttributes TriangleAttributes::from(const OpAttributes& attributes) {
  return {only_int(attributes, "diagonal")};
}
std::string TriangleAttributes::describe() const {
  return "diagonal=" + std::to_string(diagonal);
}

OpAttributes OneHotAttributes::to_attributes() const {
  return with_int(num_classes);
}
OneHotAttributes OneHotAttributes::from(const OpAttributes& attributes) {
  return {only_int(attributes, "num_classes")};
}
std::string OneHotAttributes::describe() const {
  return "num_classes=" + std::to_string(num_classes);
}

OpAttributes EmbeddingBackwardAttributes::to_attributes() const {
  return with_int(num_weights);
}
EmbeddingBackwardAttributes EmbeddingBackwardAttributes::from(const OpAttributes& attributes) {
  return {only_int(attributes, "num_weights")};
}
std::string EmbeddingBackwardAttributes::describe() const {
  return "num_weights=" + std::to_string(num_weights);
}

std::string describe_scalar(const char* name, const OpAttributes& attributes) {
  std::ostringstream out;
  out << name << "=" << attributes.scalar;
  return out.str();
}

std::string describe_scalar_operand(const OpAttributes& attributes) {
  return attributes.has_scalar ? describe_scalar("scalar", attributes) : std::string();
}

InputCount binary_input_count(const OpAttributes& attributes) {
  return InputCount::exactly(attributes.has_scalar ? 1 : 2);
}

}  // namespace grove::ops
