// CPU kernels of embedding and embedding_backward (ops/embedding.h), and the index checks they
// share with one_hot (ops/cpu/shape.cpp) and max_pool2d_backward (ops/cpu/pool.cpp). See
// Note [Index checks during capture] in ops/embedding.h.
#pragma once

#include <string>

#include "core/strided_loop.h"
#include "ops/dispatch.h"

namespace grove::ops::cpu {

void embedding(const OpCall& call, const OpOutputs& outputs);
void embedding_backward(const OpCall& call, const OpOutputs& outputs);

// The shape of an index tensor in a trivially copyable form, so that a kernel can name the
// position of a bad index (shapes beyond kMaxKernelDims dims report the flat position only).
struct IndexShape {
  int ndim = 0;
  std::int64_t sizes[kMaxKernelDims] = {};
};
IndexShape index_shape(const Tensor& indices);

// "index 7 at position [1, 2] of the indices of shape [2, 3] is out of range for <range_name>
// (expected 0 <= index < 5)".
std::string index_error(std::int64_t index, std::int64_t flat, const IndexShape& shape,
                        std::int64_t limit, const char* range_name);
// Thrown by kernels: the message above, prefixed with the op's name.
[[noreturn]] void throw_index_error(OpKind kind, std::int64_t index, std::int64_t flat,
                                    const IndexShape& shape, std::int64_t limit,
                                    const char* range_name);

// True when this thread may read tensor data on the host (no capture on the device's current
// stream and none begun by this thread), as check_not_capturing() decides.
bool host_reads_allowed(Device device);
// When host reads are allowed, throws (naming the op and inputs) for the first index outside
// [0, limit), in row-major order. Otherwise does nothing: the kernel checks.
void check_indices_on_host(const OpCall& call, const Tensor& indices, std::int64_t limit,
                           const char* range_name);

}  // namespace grove::ops::cpu
