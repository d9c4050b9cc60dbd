// nn::Module: registration, the recursive walks, modes, device and dtype moves, zero_grad and
// the printed tree. state_dict and load_state_dict live in state_dict.cpp.
//
// Invariants kept here: names are unique per module and dot-free (check_new_name); parameters
// stay leaves through to() (each moved one is a fresh detached tensor with requires_grad set).
#include "models/nn/module.h"

#include <algorithm>

#include "autograd/grad_mode.h"
#include "core/error.h"
#include "ops/inplace.h"

namespace grove::nn {

Module::Module(std::string type_name) : type_name_(std::move(type_name)) {}

Module::~Module() = default;

Tensor Module::forward(const Tensor& /*input*/) {
  GROVE_CHECK(false, "forward: the module ", type_name_,
              " has no forward(const Tensor&); call the method it provides for its inputs, or "
              "override forward in a subclass");
  return {};
}

std::string Module::extra_repr() const {
  return {};
}

// --- registration ---

void Module::check_new_name(const std::string& name, const char* what) const {
  GROVE_CHECK(!name.empty(), type_name_, ": expected a non-empty ", what, " name");
  GROVE_CHECK(name.find('.') == std::string::npos, type_name_, ": expected a ", what,
              " name without '.', got \"", name,
              "\"; dots separate the levels of full names (\"fc1.weight\")");
  const auto same = [&](const auto& entry) { return entry.first == name; };
  const bool taken = std::any_of(parameters_.begin(), parameters_.end(), same) ||
                     std::any_of(children_.begin(), children_.end(), same) ||
                     std::any_of(buffers_.begin(), buffers_.end(),
                                 [&](const Buffer& b) { return b.name == name; });
  GROVE_CHECK(!taken, type_name_, ": the name \"", name,
              "\" is already used by a parameter, buffer or child of this module; pick another");
}

Tensor Module::register_parameter(std::string name, Tensor value) {
  check_new_name(name, "parameter");
  GROVE_CHECK(value.defined(), type_name_, ": parameter \"", name,
              "\" expected a defined tensor, got an undefined one");
  GROVE_CHECK(is_floating_point(value.dtype()), type_name_, ": parameter \"", name,
              "\" expected a floating-point tensor, got ", value.dtype(),
              "; register integer or bool state with register_buffer");
  // A leaf of its own: no history from the ops that initialised it.
  Tensor leaf = value.is_leaf() ? value : value.detach();
  leaf.requires_grad_(true);
  parameters_.emplace_back(std::move(name), leaf);
  return leaf;
}

Tensor Module::register_buffer(std::string name, Tensor value, bool persistent) {
  check_new_name(name, "buffer");
  GROVE_CHECK(value.defined(), type_name_, ": buffer \"", name,
              "\" expected a defined tensor, got an undefined one");
  Tensor stored = value.detach();
  buffers_.push_back({std::move(name), stored, persistent});
  return stored;
}

void Module::add_child(std::string name, std::shared_ptr<Module> child) {
  check_new_name(name, "child module");
  GROVE_CHECK(child != nullptr, type_name_, ": child module \"", name,
              "\" expected a module, got a null pointer");
  GROVE_CHECK(child.get() != this, type_name_, ": a module cannot be its own child (\"", name,
              "\")");
  // A cycle (this module already below the child) would make every walk (parameters(),
  // to(), state_dict()) recurse forever, and the shared_ptrs would keep each other alive.
  GROVE_CHECK(!child->contains(this), type_name_, ": adding the child module \"", name, "\" (",
              child->type_name(),
              ") would make a cycle: this module is already inside it; a "
              "module tree cannot contain itself");
  children_.emplace_back(std::move(name), std::move(child));
}

bool Module::contains(const Module* module) const {
  if (module == this) return true;
  for (const auto& [child_name, child] : children_) {
    if (child->contains(module)) return true;
  }
  return false;
}

const Tensor& Module::parameter(std::string_view name) const {
  for (const auto& [own_name, value] : parameters_) {
    if (own_name == name) return value;
  }
  GROVE_CHECK(false, type_name_, ": expected a parameter named \"", name,
              "\", but it has none; see named_parameters() for the names it has");
  return parameters_.front().second;  // not reached
}

bool Module::has_parameter(std::string_view name) const {
  return std::any_of(parameters_.begin(), parameters_.end(),
                     [&](const auto& entry) { return entry.first == name; });
}

const Tensor& Module::buffer(std::string_view name) const {
  for (const Buffer& entry : buffers_) {
    if (entry.name == name) return entry.value;
  }
  GROVE_CHECK(false, type_name_, ": expected a buffer named \"", name,
              "\", but it has none; see named_buffers() for the names it has");
  return buffers_.front().value;  // not reached
}

// --- walks ---

void Module::collect_parameters(const std::string& prefix, NamedTensors& out) const {
  for (const auto& [name, value] : parameters_) out.emplace_back(prefix + name, value);
  for (const auto& [name, child] : children_) child->collect_parameters(prefix + name + ".", out);
}

void Module::collect_buffers(const std::string& prefix, bool persistent_only,
                             NamedTensors& out) const {
  for (const Buffer& entry : buffers_) {
    if (entry.persistent || !persistent_only) out.emplace_back(prefix + entry.name, entry.value);
  }
  for (const auto& [name, child] : children_) {
    child->collect_buffers(prefix + name + ".", persistent_only, out);
  }
}

NamedTensors Module::named_parameters() const {
  NamedTensors out;
  collect_parameters("", out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& entry : named_parameters()) out.push_back(std::move(entry.second));
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors out;
  collect_buffers("", /*persistent_only=*/false, out);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  return children_;
}

std::int64_t Module::parameter_count() const {
  std::int64_t count = 0;
  for (const auto& entry : named_parameters()) count += entry.second.numel();
  return count;
}

// --- modes, moves, gradients ---

void Module::train(bool on) {
  training_ = on;
  for (auto& entry : children_) entry.second->train(on);
}

namespace {

// A new leaf holding `value`'s data converted by `convert`, with the same requires_grad and the
// gradient converted the same way.
template <class Convert>
Tensor moved_parameter(const Tensor& value, const Convert& convert) {
  const Tensor moved = convert(value.detach());
  if (value.requires_grad()) moved.requires_grad_(true);
  const Tensor grad = value.grad();
  if (grad.defined()) moved.set_grad(convert(grad));
  return moved;
}

}  // namespace

void Module::to(Device device) {
  const autograd::NoGradGuard no_grad;
  const auto convert = [device](const Tensor& tensor) { return tensor.to(device); };
  for (auto& entry : parameters_) {
    if (entry.second.device() != device) entry.second = moved_parameter(entry.second, convert);
  }
  for (Buffer& entry : buffers_) entry.value = entry.value.to(device);
  for (auto& entry : children_) entry.second->to(device);
}

void Module::to(DType dtype) {
  GROVE_CHECK(is_floating_point(dtype), type_name_,
              ".to(dtype): expected a floating-point dtype (float32 or float64), got ", dtype,
              "; parameters must stay floating point to take gradients");
  const autograd::NoGradGuard no_grad;
  const auto convert = [dtype](const Tensor& tensor) { return tensor.to(dtype); };
  for (auto& entry : parameters_) {
    if (entry.second.dtype() != dtype) entry.second = moved_parameter(entry.second, convert);
  }
  for (Buffer& entry : buffers_) {
    if (is_floating_point(entry.value.dtype())) entry.value = entry.value.to(dtype);
  }
  for (auto& entry : children_) entry.second->to(dtype);
}

void Module::zero_grad(bool set_to_none) {
  const autograd::NoGradGuard no_grad;
  for (const Tensor& parameter : parameters()) {
    const Tensor grad = parameter.grad();
    if (!grad.defined()) continue;
    if (set_to_none) {
      parameter.set_grad(Tensor());
    } else {
      ops::zero_(grad);  // in place: an optimizer or a captured step may hold this memory
    }
  }
}

// --- printing ---

void Module::append_repr(std::string& out, int indent) const {
  const std::string extra = extra_repr();
  out += type_name_ + "(";
  if (children_.empty()) {
    out += extra + ")";
    return;
  }
  const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
  out += "\n";
  if (!extra.empty()) out += pad + extra + "\n";
  for (const auto& [name, child] : children_) {
    out += pad + "(" + name + "): ";
    child->append_repr(out, indent + 2);
    out += "\n";
  }
  out += std::string(static_cast<std::size_t>(indent), ' ') + ")";
}

std::string Module::to_string() const {
  std::string out;
  append_repr(out, 0);
  return out;
}

}  // namespace grove::nn
