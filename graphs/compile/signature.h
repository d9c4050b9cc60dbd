// Signature: what makes two calls of a compiled function the same trace.
//
// Note [The signature of a compiled call]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A trace is a snapshot of what the function did for some inputs (graphs/trace/tracer.h), so it
// may serve only calls for which the function would do the same ops on the same layouts. Per
// input, the signature holds:
//   - sizes, strides, dtype, device and requires_grad. Strides matter: a view() the trace took
//     of a contiguous input fails on a transposed one, and a reshape() copies instead; a call
//     with other strides is a new trace, never a replay that fails where eager mode works;
//   - which earlier input, if any, shares its memory, and whether it is the same view of it.
//     A trace of f(a, a) that writes its first input and reads its second reads the write; a
//     trace of f(a, b) does not. So calls that alias their inputs differently trace apart.
// and, for the whole call, whether grad mode is on and autocast's dtype (a trace made under an
// AutocastGuard holds its casts: Note [Autocast] in ops/autocast.h). The storage offset is not part
// of it: the tree manager copies non-static inputs into buffers of its own, and the trace's views
// are relative to the input they start from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace grove::graphs {

struct Signature {
  struct Input {
    DimVector sizes;
    DimVector strides;
    DType dtype;
    Device device;
    bool requires_grad;
    // The first earlier input over the same storage (-1: none), and whether this input is
    // the same view of it (same sizes, strides and offset).
    std::int32_t shares_memory_with = -1;
    bool same_view = false;
    friend bool operator==(const Input& a, const Input& b) {
      return IntArrayRef(a.sizes) == IntArrayRef(b.sizes) &&
             IntArrayRef(a.strides) == IntArrayRef(b.strides) && a.dtype == b.dtype &&
             a.device == b.device && a.requires_grad == b.requires_grad &&
             a.shares_memory_with == b.shares_memory_with && a.same_view == b.same_view;
    }
  };
  std::vector<Input> inputs;
  bool grad_mode = true;
  std::optional<DType> autocast;  // the AutocastGuard's dtype; nullopt: autocast off
  friend bool operator==(const Signature&, const Signature&) = default;

  // Throws if an input is undefined.
  static Signature of(const std::vector<Tensor>& inputs);
  // "(float32[128, 784], float32[128] requires_grad), grad on" (", autocast bfloat16" when
  // on); strides are shown only when
  // the input is not contiguous, sharing as "= x0" (the same view) or "shares x0".
  std::string describe() const;
};

}  // namespace grove::graphs
