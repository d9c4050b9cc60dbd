// Host accesses and their watch. See Note [Host reads during a trace] in host_reads.h.
#include "core/host_reads.h"

#include "core/stream.h"

namespace grove {
namespace detail {
thread_local constinit bool raw_access_watched = false;
}  // namespace detail

namespace {

thread_local constinit HostAccessListener* listener = nullptr;
thread_local constinit bool internal_access = false;

void update_watched() {
  detail::raw_access_watched = listener != nullptr && !internal_access;
}

// Tells the watching listeners, innermost first: one that ends its watch passes the access on
// to the watch it was nested in; one that keeps watching (or throws) ends the report.
void report(Device device, const char* what, const std::string& message) {
  while (listener != nullptr) {
    HostAccessListener* told = listener;
    told->on_host_access(device, what, message);
    if (listener == told) return;
  }
}

std::string read_message(Device device, const char* what) {
  return detail::join_message(
      what, " reads tensor data on the host while a function is being traced (", device,
      "); a traced function is replayed without running its C++ code, so the value would never "
      "be read again. Move the read out of the compiled function (return the tensor and read it "
      "after the call), or run this function eagerly");
}

}  // namespace

HostAccessWatch::HostAccessWatch(HostAccessListener& watcher) : previous_(listener) {
  listener = &watcher;
  update_watched();
}

HostAccessWatch::~HostAccessWatch() {
  listener = previous_;
  update_watched();
}

// A scope inside another one, or with no watch alive, finds raw_access_watched false and has
// nothing to do; the outermost scope under a watch suspends it until it ends.
InternalDataAccess::InternalDataAccess() : suspended_(detail::raw_access_watched) {
  if (!suspended_) return;
  internal_access = true;
  detail::raw_access_watched = false;
}

InternalDataAccess::~InternalDataAccess() {
  if (!suspended_) return;
  internal_access = false;
  update_watched();
}

// Reported also inside grove's own code: an op that reads values on the host would bake them
// into a trace as surely as the caller's read.
void check_host_read(Device device, const char* what) {
  if (listener != nullptr) [[unlikely]] {
    report(device, what, read_message(device, what));
  }
  check_not_capturing(device, what);
}

namespace detail {

void report_raw_access(Device device) {
  // The flag is recomputed whenever a watch or an InternalDataAccess begins or ends.
  GROVE_INTERNAL_ASSERT(listener != nullptr && !internal_access,
                        "raw_access_watched is set without a watch, or inside grove's own access");
  report(device, "data_ptr()",
         join_message("data_ptr() (or data<T>(), Storage::data()) hands out a raw pointer to "
                      "tensor memory while a function is being traced (",
                      device,
                      "); what is read or written through it is not part of the trace, and a "
                      "replay would not do it. Use grove ops inside the compiled function, and "
                      "read raw memory after the call, or run this function eagerly"));
}

}  // namespace detail
}  // namespace grove
