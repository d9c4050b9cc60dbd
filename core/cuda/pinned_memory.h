// The caching allocator of page-locked ("pinned") host memory: what the files of the CUDA backend
// need beyond allocate_pinned / is_pinned, which core files reach through core/cuda/cuda_backend.h
// (and users through Tensor::pin_memory() / is_pinned()).
//
// Note [Reuse of pinned host blocks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// cudaHostAlloc and cudaFreeHost are slow (they map pages for the device and synchronise), so
// freed blocks are kept and handed out again, per size class (powers of two, at least 512
// bytes). A copy from or to pinned memory is truly asynchronous: the host call returns before
// the DMA engine has read or written the bytes. So a block whose tensor dies right after a
// non-blocking copy may still be in use by that copy. Whoever launches such a copy calls
// record_pinned_use(ptr, stream), which records a CUDA event on the copy's stream for the block
// holding ptr; a freed block is handed out again only once every event recorded on it has
// completed (cudaEventQuery), otherwise a fresh block is allocated. Blocks are never given back
// to CUDA (like the device allocator, the cache lives as long as the process).
//
// Thread-safe: one mutex guards the cache.
#pragma once

#include "core/cuda/cuda_backend.h"
#include "core/stream.h"

namespace grove::cuda_backend {
// Marks the block holding ptr as in use by the work queued on `stream` so far (a copy from or to
// it): the block is not reused before that work is done. No-op if ptr is not pinned.
void record_pinned_use(const void* ptr, Stream stream);

}  // namespace grove::cuda_backend
