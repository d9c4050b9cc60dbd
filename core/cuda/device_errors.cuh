// The kernels' side of Note [Device-side error reports] (core/cuda/device_errors.h).
#pragma once

#include <cstdint>

#include "core/cuda/device_errors.h"

namespace grove::cuda_backend {

// Reports a bad `value` found at `position` of the op's index tensor; `bound` is the end of the
// valid range. The caller must not use the value. Cheap when it never runs; each call is one
// atomic on host memory, so call it once per bad value, not once per element that the value
// would have touched.
__device__ inline void report_bad_value(const DeviceErrorSite& site, std::int64_t value,
                                        std::int64_t position, std::int64_t bound) {
  DeviceErrorRecord* record = site.record;
  if (atomicAdd(&record->count, 1u) == 0u) {  // the first report fills in the details
    record->op = site.op;
    record->what = site.what;
    record->expected = site.expected;
    record->value = value;
    record->position = position;
    record->bound = bound;
    __threadfence_system();  // the details reach the host before the flag does
    atomicExch(&record->published, 1u);
  }
}

}  // namespace grove::cuda_backend
