// Host accesses of tensor memory (item(), to_vector(), printing, copies from a device to the
// host, and raw pointers), and the watch under which a tracer sees them.
//
// Note [Host reads during a trace]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A trace records ops so that they can run again without the function that made them
// (graphs/trace/tracer.h). A host access cannot be recorded: the function uses the value on the
// host (to branch, to print, to compute a size), or reads and writes memory behind the trace's
// back through a raw pointer, and a replay would do neither. A host access is any of:
//   - a read of values: item(), to_vector(), printing a tensor, a copy from a device to the host
//     (each calls check_host_read with its name);
//   - a raw pointer to tensor memory taken by the caller: Tensor::data_ptr(), data<T>(),
//     Storage::data() (checked in Storage::data(), the one place they all pass through).
// grove's own code takes raw pointers too: kernels inside dispatch, core's copies and fills,
// factories, the host reads themselves. Those run under an InternalDataAccess and are not the
// caller's accesses (what they do is recorded as the op, copy or write it belongs to). A read of
// values (check_host_read) is reported even there: an op that read values on the host would
// bake them into the trace as surely as the caller.
//
// While a HostAccessWatch is alive on a thread, the first host access there is reported to its
// listener (a tracer), before the access happens. The listener decides: a tracer stops recording
// and lets the access, and the rest of the function, run eagerly (so the call that traces has the
// effects of exactly one eager call), or throws HostReadDuringTrace under
// CompileOptions::or_error. A listener that ends its watch passes the access on to the watch it
// was nested in (an outer trace cannot replay the read either).
// Copies from the host to a device (from_vector on a device, to(device) of a CPU tensor) are
// writes, not reads, and stay allowed: what they copy is a constant of the trace.
// Every host read also refuses while the thread captures a graph (check_not_capturing in
// core/stream.h), as CUDA does.
#pragma once

#include "core/device.h"
#include "core/error.h"

namespace grove {

// Thrown by a host access that a listener refuses (a tracer under CompileOptions::or_error).
class HostReadDuringTrace : public Error {
 public:
  using Error::Error;
};

// Told of the first host access on its thread while its HostAccessWatch is alive.
class HostAccessListener {
 public:
  virtual ~HostAccessListener() = default;
  // `what` names the access ("item()"), `message` says why a trace cannot replay it. Called
  // before the access; may throw (the access then does not happen) or end its watch.
  virtual void on_host_access(Device device, const char* what, const std::string& message) = 0;
};

// While alive, host accesses on this thread are reported to `listener`. Nests (the inner watch
// hides the outer one until it ends). Destroy watches in the reverse order of their creation.
class HostAccessWatch {
 public:
  explicit HostAccessWatch(HostAccessListener& listener);
  ~HostAccessWatch();
  HostAccessWatch(const HostAccessWatch&) = delete;
  HostAccessWatch& operator=(const HostAccessWatch&) = delete;

 private:
  HostAccessListener* previous_;
};

// grove's own raw accesses (kernels, core copies and fills, factories): not reported while
// alive on the thread. Nests. Dispatch holds one around every op, so it costs one thread-local
// read unless a watch is alive (only then is there anything to suspend).
class InternalDataAccess {
 public:
  InternalDataAccess();
  ~InternalDataAccess();
  InternalDataAccess(const InternalDataAccess&) = delete;
  InternalDataAccess& operator=(const InternalDataAccess&) = delete;

 private:
  bool suspended_;  // raw accesses were watched when it began, and it suspended that
};

// Called by every host read of data on `device`; `what` names it ("item()"). Reports it to the
// thread's watch, if any, then throws what check_not_capturing throws while the thread captures.
void check_host_read(Device device, const char* what);

namespace detail {
// True while a watch is alive on this thread and no InternalDataAccess is (read by
// Storage::data() on every call, so one thread-local load).
extern thread_local constinit bool raw_access_watched;
// Storage::data()'s report of a raw pointer handed to the caller.
void report_raw_access(Device device);
}  // namespace detail

}  // namespace grove
