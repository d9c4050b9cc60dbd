// Device-side error reports: how a kernel that finds a bad value (an index out of range) tells
// the host, without killing the CUDA context.
//
// Note [Device-side error reports]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The CPU kernels check indices and targets before they use them and throw. A CUDA kernel cannot
// throw, and the host cannot read device indices without a copy and a synchronisation (which a
// capture forbids). PyTorch's answer is a device-side assert: the kernel traps, and the CUDA
// context is dead for the rest of the process. grove's answer keeps the process usable:
//
// - Each device has one DeviceErrorRecord in mapped, pinned host memory (allocated on first use;
//   DeviceGraph::begin_capture makes sure it exists before a capture starts). Kernels that check
//   values get a DeviceErrorSite by value: the record's address plus static strings naming the op
//   and the value ("embedding", "index"). The kernel only copies those pointers, never reads them.
// - A kernel that finds a bad value does not use it: floating-point results get NaN there, integer
//   results 0 (each kernel's comment says exactly what). It then counts the report in the record;
//   the first report since the last check also fills in the details.
// - Every synchronisation grove does on a CUDA device (synchronize(stream), copies to the host,
//   item()) ends with check_device_errors, which reads the record (a plain host read: no copy, no
//   extra sync), clears it and throws DeviceCheckError naming the op, the bad value, its position
//   and the valid range.
//
// So a bad index is reported at the first synchronisation after the kernel ran, which may be
// several ops later: the message says which op found it. A graph replay reports the same way, as
// the site's address is baked into the captured kernel. The record is per device, not per stream:
// a synchronisation of one stream may report a kernel of another stream of the device, and the
// host reads only a published first report (one that a kernel still running is writing waits for
// a later check). A report counted while the host is clearing the record can be lost from the
// count, but a first report is never lost: the host clears `published` before `count`, so no
// kernel can become first until the record is clear. One host thread at a time checks. Reports only
// ever come from grove's own kernels, so "count" is how many checks failed, not how many elements
// were bad: a kernel reports each bad index once (per row or per position), but the forward and
// backward ops of one training step both report the same bad target.
#pragma once

#include <cstdint>

#include "core/device.h"

namespace grove::cuda_backend {

// One device's reports since the last check. Written by kernels: every report adds 1 to `count`;
// the one that took it from 0 to 1 then writes the details and, after a system-wide fence, sets
// `published`. Read and cleared by the host (published first, then count).
struct DeviceErrorRecord {
  unsigned int count;
  unsigned int published;
  const char* op;  // op, what and expected: static strings from the launching host code
  const char* what;
  const char* expected;  // the valid values, in words, after "expected "
  std::int64_t value;
  std::int64_t position;  // in the op's index tensor, in logical (row-major) order
  std::int64_t bound;     // the valid range is [0, bound) (plus what `expected` names)
};

// What a checking kernel is given: where to report and what to say. `expected` is a printf-free
// description of the valid values with "{bound}" standing for the bound, e.g.
// "0 <= index < {bound}".
struct DeviceErrorSite {
  DeviceErrorRecord* record;  // a device-accessible pointer to the device's record
  const char* op;
  const char* what;
  const char* expected;
};

// The site for a kernel launched on `device` (allocates the device's record on first use). All
// three strings must be string literals (they are read when a report is thrown, maybe much later).
DeviceErrorSite device_error_site(Device device, const char* op, const char* what,
                                  const char* expected);

// Throws DeviceCheckError for the first report a kernel on `device` made since the last check,
// and clears the record. `at` names the synchronising call for the message. Call it only after a
// synchronisation that waited for the kernels in question.
void check_device_errors(Device device, const char* at);

// Allocates `device`'s record now, so that no allocation happens while a graph captures.
void prepare_device_errors(Device device);

}  // namespace grove::cuda_backend
