// Observers of core: how autograd and tracers see the tensors core makes and writes without
// going through an op.
//
// Note [Core observers]
// ~~~~~~~~~~~~~~~~~~~~~
// Ops reach autograd and tracers through dispatch (Note [Op observers] in ops/dispatch.h), but
// views (view, reshape, squeeze, unsqueeze, transpose, t, permute, slice, narrow, select,
// expand, as_strided), copies (clone, contiguous, to(dtype), to(device), pin_memory) and core's
// own writes (Tensor::copy_, Tensor::fill_) are made by core, which sits below both and cannot
// call them. So core reports each of them to CoreObservers:
//   - on_derived(source, result, kind, args) after making `result` from `source`; `kind`,
//     `args` and the result's sizes, strides, dtype and device say how to make it again (a
//     tracer's node) and how its gradient flows back (autograd's DerivedNode);
//   - before_write(write) before writing in place (it may throw to refuse the write), and
//     on_write(write) once the write is launched.
// An observer sits in one of two places:
//   - autograd's slot, one for the process (set_autograd_core_observer, installed when the
//     program starts): it sees the events of every thread in which a tensor involved requires
//     gradients (the source of a view or copy; the target or source of a write). That test is
//     one flag read, so tensors without gradients cost what they always did;
//   - the calling thread's list (add_core_observer, CoreObserverGuard; tracers): such an
//     observer sees every event of the thread that registered it, whatever requires gradients,
//     and nothing of other threads. A thread with an empty list pays one thread-local read.
// Autograd's observer runs first (so the others see `result` with its history), then the
// thread's observers in registration order.
// Not reported:
//   - anything while a SuspendCoreObservers is alive on the thread. Dispatch holds one around
//     each kernel: the views and copies a kernel makes of its inputs are its own business; the
//     op as a whole goes to the op observers;
//   - calls that return the tensor they were called on (contiguous() of a contiguous tensor,
//     to() of its own dtype or device, t() of a tensor of at most one dimension, squeeze(d) of
//     a dimension whose size is not 1): nothing new was made;
//   - detach(), an alias without history, and core's internal steps of a reported call (the
//     copy inside to(device) is the one Copy event, not also a write);
//   - factories (empty, zeros, ones, full, arange, from_vector): their tensors are new, and the
//     fill inside zeros() is part of making it; ops' factories go through dispatch;
//   - host reads (item, to_vector, printing): what they copy to read never reaches a tensor.
// The reshape() of a tensor that cannot be viewed is reported as what it does: a Copy, then a
// Reshape of the copy.
// Observers see what other observers do through core and dispatch, themselves included: the
// copies autograd keeps of values an in-place op destroys are reported to the thread's
// observers. An observer that makes views or copies it does not want to see holds a
// SuspendCoreObservers while it does.
#pragma once

#include <cstdint>

#include "core/array_ref.h"
#include "core/observer_list.h"
#include "core/scalar.h"

namespace grove {

class Tensor;

// How a tensor made by core relates to the tensor it came from, and the arguments that remaking
// it or its backward needs (with the result's sizes and strides).
enum class DerivedKind : std::uint8_t {
  Reshape,    // view, reshape, squeeze, unsqueeze: same elements in another shape; no args
  Permute,    // transpose, t, permute: args = dims (result dim i is source dim args[i])
  Slice,      // slice, narrow: args = {dim, start, step}
  Select,     // select: args = {dim, index}
  Expand,     // expand: no args
  AsStrided,  // as_strided: args = {storage_offset}
  Copy,       // clone, contiguous, to(dtype), to(device), pin_memory: same values in a new
              // contiguous tensor of the result's dtype and device; no args
};

// One of core's in-place writes.
enum class WriteKind : std::uint8_t {
  Copy,  // Tensor::copy_(source, non_blocking): source broadcasts to target and converts dtype
  Fill,  // Tensor::fill_(value)
};

struct CoreWrite {
  WriteKind kind;
  const Tensor& target;
  const Tensor* source;  // Copy: the source as the caller passed it; Fill: null
  Scalar value;          // Fill: the value; Copy: unused
  bool non_blocking;     // Copy: the caller's flag; Fill: false

  const char* name() const { return kind == WriteKind::Copy ? "copy_" : "fill_"; }
};

// See Note [Core observers]. Callbacks run on the thread that made the view, copy or write.
class CoreObserver {
 public:
  virtual ~CoreObserver() = default;
  // `result` was made from `source`.
  virtual void on_derived(const Tensor& source, const Tensor& result, DerivedKind kind,
                          IntArrayRef args) = 0;
  // Core is about to write `write.target` in place; may throw to refuse.
  virtual void before_write(const CoreWrite& /*write*/) {}
  // The write is launched (done on the host; queued on a stream).
  virtual void on_write(const CoreWrite& /*write*/) {}
};

// Autograd's slot: null, or the one observer that sees, on every thread, the events in which a
// tensor involved requires gradients. Set once by autograd when the program starts.
void set_autograd_core_observer(CoreObserver* observer);

// Registers `observer` for the calling thread only (at most kMaxThreadObservers per thread);
// remove it on the same thread. Changes made inside a callback apply from the next event.
void add_core_observer(CoreObserver* observer);
void remove_core_observer(CoreObserver* observer);

// Registers an observer on this thread for the guard's lifetime.
class CoreObserverGuard {
 public:
  explicit CoreObserverGuard(CoreObserver* observer) : observer_(observer) {
    add_core_observer(observer);
  }
  ~CoreObserverGuard() { remove_core_observer(observer_); }
  CoreObserverGuard(const CoreObserverGuard&) = delete;
  CoreObserverGuard& operator=(const CoreObserverGuard&) = delete;

 private:
  CoreObserver* observer_;
};

// While alive, core reports nothing on this thread, to any observer (autograd's included).
// Dispatch holds one around each kernel; see the Note.
class SuspendCoreObservers {
 public:
  SuspendCoreObservers();
  ~SuspendCoreObservers();
  SuspendCoreObservers(const SuspendCoreObservers&) = delete;
  SuspendCoreObservers& operator=(const SuspendCoreObservers&) = delete;

 private:
  bool previous_;
};

// --- for core's own files: the reporting calls ---

namespace detail {
// This thread's observers. constinit: read without a thread-local initialisation check.
extern thread_local constinit ThreadObserverList<CoreObserver> thread_core_observers;
}  // namespace detail

// True if this thread has observers of its own; core reports an event when this is true or a
// tensor involved requires gradients, and skips the call otherwise.
inline bool thread_has_core_observers() {
  return !detail::thread_core_observers.empty();
}

// Tell the observers that may listen (see the Note); cheap to call when nobody does, but core
// calls them only after the test above.
void report_derived(const Tensor& source, const Tensor& result, DerivedKind kind, IntArrayRef args);
void report_before_write(const CoreWrite& write);
void report_write(const CoreWrite& write);

}  // namespace grove
