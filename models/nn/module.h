// nn::Module: the base class of every layer and model. A module owns named parameters (leaf
// tensors that require gradients), named buffers (tensors that are state but not trained, e.g.
// a causal mask) and named child modules, and walks them recursively under dotted names
// ("blocks.0.ln1.weight"), as torch.nn.Module does.
//
// It is not an optimizer, a loss or a serialiser: optimizers take parameters(), losses are ops
// called on forward()'s output (ops::cross_entropy), and checkpoint files are written elsewhere
// from state_dict().
//
// Invariants:
// - Every name is non-empty, has no '.', and is unique among one module's parameters, buffers
//   and children. Walks visit a module's own entries in registration order, then each child's,
//   children in registration order, so names and order never change for a given model (to()
//   and load_state_dict keep them).
// - Parameters are leaves: register_parameter detaches its value and sets requires_grad; to()
//   replaces a parameter that moves by a new leaf with the same flag (and moved gradient).
// - A buffer is persistent (in state_dict) or not (a plain member that to() moves, such as a
//   mask that can be rebuilt from the configuration); named_buffers() lists both.
//
// Contract: a module is built on the CPU (its initialisation draws from the CPU default
// generator, core/rng.h) and moved with to() before an optimizer takes its parameters. Not
// thread-safe: one thread builds, moves and calls a module at a time. Children are held by
// shared_ptr (a module may hold and use a child it registered); modules cannot be copied.
// forward() allocates its outputs through the ops; nothing here synchronises the host except
// what the ops themselves do.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace grove::nn {

// (full name, tensor) pairs, in registration order.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module {
 public:
  explicit Module(std::string type_name);  // "Linear", "Sequential", ...
  virtual ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The module's computation. The default throws an error naming the module's type (containers
  // of modules that take other inputs override it or are called through their own methods).
  virtual Tensor forward(const Tensor& input);
  Tensor operator()(const Tensor& input) { return forward(input); }

  const std::string& type_name() const { return type_name_; }

  // --- walks (recursive: own entries in registration order, then each child's) ---
  std::vector<Tensor> parameters() const;
  NamedTensors named_parameters() const;  // "fc1.weight", "blocks.0.ln1.bias", ...
  NamedTensors named_buffers() const;     // persistent and non-persistent
  // Direct children only, in registration order.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  std::int64_t parameter_count() const;  // total number of elements of parameters()

  // --- modes (recursive) ---
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // --- devices and dtypes (recursive; names and order are kept) ---
  // Moves parameters and buffers to `device`. A tensor already there is kept as it is (the same
  // handle); one that moves is replaced by a new tensor, a parameter by a new leaf with the same
  // requires_grad and its gradient moved too. Call it before an optimizer takes parameters():
  // the optimizer would otherwise hold the old tensors. Blocks as a copy between devices does.
  void to(Device device);
  // Converts floating-point parameters and buffers to `dtype` (float32 or float64), as
  // torch's module.double(); other buffers (bool masks, int64 tables) are kept.
  void to(DType dtype);

  // Clears (set_to_none) or zeroes in place the gradient of every parameter.
  void zero_grad(bool set_to_none = true);

  // --- state (recursive) ---
  // Every parameter, then every persistent buffer, by full name; the tensors are detached
  // handles sharing the module's memory (clone them to keep a snapshot).
  NamedTensors state_dict() const;
  // Copies `state` into the parameters and persistent buffers in place (under no-grad; a copy
  // between devices is allowed). Every entry is checked before anything is copied, so on an
  // error the module is unchanged: a shape or dtype that differs from the module's is always an
  // error; with strict, so are missing and unexpected names. The error lists every problem.
  void load_state_dict(const NamedTensors& state, bool strict = true);

  // The module tree printed like PyTorch's repr:
  //   Mlp(
  //     (fc1): Linear(in_features=784, out_features=256, bias=true)
  //     ...
  //   )
  std::string to_string() const;
  // The text inside the parentheses of this module's line ("in_features=784, ..."); empty by
  // default.
  virtual std::string extra_repr() const;

 protected:
  // Registers a parameter: the value is detached (if it has history) and made a leaf requiring
  // gradients (floating point only). Returns the stored tensor.
  Tensor register_parameter(std::string name, Tensor value);
  // Registers a buffer; a non-persistent one is left out of state_dict().
  Tensor register_buffer(std::string name, Tensor value, bool persistent = true);
  // Registers a child module and returns it, so members can be initialised in one line:
  //   fc1_ = register_module("fc1", std::make_shared<Linear>(784, 256));
  template <class M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    add_child(std::move(name), module);
    return module;
  }

  // This module's own parameter or buffer by name (not dotted); an unknown name is an error.
  // The reference stays valid until the next register_* call; to() updates the tensor it names,
  // so read it at each forward rather than keeping a copy.
  const Tensor& parameter(std::string_view name) const;
  const Tensor& buffer(std::string_view name) const;
  bool has_parameter(std::string_view name) const;

 private:
  struct Buffer {
    std::string name;
    Tensor value;
    bool persistent;
  };

  void add_child(std::string name, std::shared_ptr<Module> child);
  // True if `module` is this module or one below it (add_child keeps the tree free of cycles).
  bool contains(const Module* module) const;
  void check_new_name(const std::string& name, const char* what) const;
  // Appends own entries then children's, prefixing names with `prefix`.
  void collect_parameters(const std::string& prefix, NamedTensors& out) const;
  void collect_buffers(const std::string& prefix, bool persistent_only, NamedTensors& out) const;
  void append_repr(std::string& out, int indent) const;

  std::string type_name_;
  bool training_ = true;
  NamedTensors parameters_;
  std::vector<Buffer> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

}  // namespace grove::nn
