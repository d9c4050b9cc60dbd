// Host reads of tensor data (item(), to_vector(), copies from a device to the host), and the
// guard under which a tracer forbids them.
//
// Note [Host reads during a trace]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A trace records ops so that they can run again without the function that made them
// (graphs/trace/tracer.h). A host read cannot be recorded: the function uses the value on the
// host (to branch, to print, to compute a size), and a replay would not. So while a
// NoHostReadsGuard is alive on a thread, every host read there throws HostReadDuringTrace,
// naming the read; compile() catches it and runs the function eagerly instead, saying why.
// Copies from the host to a device (from_vector on a device, to(device) of a CPU tensor) are
// writes, not reads, and stay allowed: what they copy is a constant of the trace.
// Every host read also refuses while the thread captures a graph (check_not_capturing in
// core/stream.h), as CUDA does.
#pragma once

#include "core/device.h"
#include "core/error.h"

namespace grove {

// Thrown by a host read while a NoHostReadsGuard is alive on the thread.
class HostReadDuringTrace : public Error {
 public:
  using Error::Error;
};

// While alive, host reads on this thread throw HostReadDuringTrace. Nests.
class NoHostReadsGuard {
 public:
  NoHostReadsGuard();
  ~NoHostReadsGuard();
  NoHostReadsGuard(const NoHostReadsGuard&) = delete;
  NoHostReadsGuard& operator=(const NoHostReadsGuard&) = delete;

 private:
  bool previous_;
};

// Called by every host read of data on `device`; `what` names it ("item()"). Throws
// HostReadDuringTrace under a NoHostReadsGuard, and what check_not_capturing throws while the
// thread captures.
void check_host_read(Device device, const char* what);

}  // namespace grove
