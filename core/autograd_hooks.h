// How core tells autograd about the tensors it makes without going through an op.
//
// Note [Core reports views and copies to autograd]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Ops reach autograd through dispatch (Note [Op observers] in ops/dispatch.h), but views
// (view, transpose, slice, expand, ...) and copies (clone, contiguous, to) are made by core,
// which sits below autograd and cannot call it. So core keeps one hooks pointer that autograd
// installs when it is linked in:
//   - after making a view or copy of a tensor that requires gradients, core calls
//     on_derived(source, result, kind, args), and autograd gives `result` a backward node;
//   - before writing in place into a tensor (Tensor::copy_, Tensor::fill_) when the target or
//     the source requires gradients, core calls before_core_write(), which refuses writes that
//     autograd cannot follow (use the ops::copy_ / ops::fill_ ops, which it can).
// Tensors that do not require gradients never reach the hooks: the test is one flag read.
// With no hooks installed (a program that does not link grove_autograd), nothing is recorded.
#pragma once

#include <cstdint>

#include "core/array_ref.h"

namespace grove {

class Tensor;

// How a tensor made by core relates to the tensor it came from, and the arguments that its
// backward needs.
enum class DerivedKind : std::uint8_t {
  Reshape,    // view, reshape, squeeze, unsqueeze: same elements in another shape; no args
  Permute,    // transpose, t, permute: args = dims (result dim i is source dim args[i])
  Slice,      // slice, narrow: args = {dim, start, step}
  Select,     // select: args = {dim, index}
  Expand,     // expand: no args
  AsStrided,  // as_strided: args = {storage_offset}
  Copy,       // clone, contiguous, to(dtype), to(device): same values; no args
};

class CoreAutogradHooks {
 public:
  virtual ~CoreAutogradHooks() = default;
  // `result` was made from `source`, which requires gradients.
  virtual void on_derived(const Tensor& source, const Tensor& result, DerivedKind kind,
                          IntArrayRef args) const = 0;
  // Core is about to write `target` in place (`source` is null for fills); may throw to refuse.
  virtual void before_core_write(const Tensor& target, const Tensor* source,
                                 const char* op) const = 0;
};

// The installed hooks, or null (also while a SuspendCoreAutogradHooks is alive on this thread).
// Installed once by autograd at program start.
const CoreAutogradHooks* core_autograd_hooks();
void set_core_autograd_hooks(const CoreAutogradHooks* hooks);

// While alive, core reports nothing on this thread. Dispatch holds one around each kernel: the
// views and copies a kernel makes of its inputs are its own business; the op as a whole is
// recorded by autograd's op observer.
class SuspendCoreAutogradHooks {
 public:
  SuspendCoreAutogradHooks();
  ~SuspendCoreAutogradHooks();
  SuspendCoreAutogradHooks(const SuspendCoreAutogradHooks&) = delete;
  SuspendCoreAutogradHooks& operator=(const SuspendCoreAutogradHooks&) = delete;

 private:
  bool previous_;
};

}  // namespace grove
