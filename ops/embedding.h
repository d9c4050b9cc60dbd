// embedding: rows of a table picked by integer indices.
//   weight: (V, D), indices: int64 of any shape (*)  ->  output: (*, D) in weight's dtype,
//   output[i..., :] = weight[indices[i...], :].
// The output is a new contiguous tensor (a gather, not a view); weight may have any strides.
//
// Note [Index checks during capture]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// An index outside [0, V) must be a clear error, never a silent clamp or an access out of bounds.
// Ops that take indices (embedding, embedding_backward, one_hot, max_pool2d_backward) check them
// twice:
// - on the host, before the launch, when host reads are allowed (no capture on this thread):
//   the error names the op, the bad index, its position in the index tensor and the inputs;
// - inside the kernel, always. While a graph captures, the host must not read the indices (they
//   may not even be computed yet: CUDA refuses the read, and the CPU stream simulates that), so
//   the host check is skipped and the kernel's check is the one that fires, when the graph is
//   replayed: the replay throws a grove::Error with the same words, and the kernels after the
//   failing one do not run.
// The CUDA kernels skip the host check (it would need a copy of the indices to the host and a
// synchronisation on every call) and cannot throw: a bad index is not used (floating results
// get NaN there, integer ones 0) but reported, and the next synchronisation (synchronize,
// to(kCPU), item()) throws grove::DeviceCheckError naming the op, the index and its position;
// the context stays usable (Note [Out-of-range indices on the GPU] in ops/cuda/embedding.cu).
// In eager mode the kernel's check never fires on the CPU, since the host check ran first.
#pragma once

#include "core/tensor.h"

namespace grove::ops {

Tensor embedding(const Tensor& weight, const Tensor& indices);

// The gradient of embedding with respect to its weight, for autograd's rule:
//   grad: (*, D) with * = indices' shape, indices: int64 (*)  ->  (num_weights, D) in grad's
//   dtype (floating point), with row r = the sum of grad[i..., :] over every position i... where
//   indices[i...] == r (repeated indices add up; rows no index picks are 0).
// Deterministic: each output element is summed by one thread, in row-major order of the indices,
// so the result does not depend on the thread count. Indices are checked as in embedding
// (Note [Index checks during capture]) against [0, num_weights).
Tensor embedding_backward(const Tensor& grad, const Tensor& indices, std::int64_t num_weights);

}  // namespace grove::ops
