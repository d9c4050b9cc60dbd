// TensorImpl: what a Tensor handle points to: storage, shape, strides, offset, dtype and the
// autograd fields. Users work with Tensor (tensor.h); kernels read TensorImpl through it.
//
// Note [Views, aliasing and version counters]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A view (view, transpose, slice, expand, ...) is a new TensorImpl over the same Storage with
// other sizes, strides and offset; no data moves. Element (i0, i1, ...) of a tensor lives at
//   storage.data + (storage_offset + sum_k i_k * strides[k]) * element_size(dtype).
// Because views alias, an in-place change through one is visible through all. Autograd must
// know when a tensor it saved was changed in place, so the version counter lives on the Storage
// and is shared by every view: each in-place op bumps it, and a saved tensor remembers the
// version it was saved at. Expanded tensors have stride 0 in broadcast dims and must not be
// written to (several elements share one memory location); in-place ops refuse them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "core/array_ref.h"
#include "core/dtype.h"
#include "core/intrusive_ptr.h"
#include "core/storage.h"

namespace grove {

// Opaque slot for autograd's per-tensor data (grad_fn, grad, hooks); defined by autograd/.
//
// Note [Autograd metadata is published once]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A tensor's autograd metadata is made on first need, and two threads may need it at once: two
// threads running ops on one shared parameter both ask for its gradient accumulator. The slot
// is an atomic pointer that goes from null to its metadata exactly once (a compare-and-swap in
// install_autograd_meta; the loser deletes its own copy and uses the winner's) and then never
// changes until the tensor is released, so readers need one acquire load and no lock: the load
// sees either null or metadata that is fully built. What is inside the metadata (grad, hooks,
// the accumulator) has its own rules (autograd/autograd_meta.h).
class AutogradMetaInterface {
 public:
  virtual ~AutogradMetaInterface() = default;
  // False for the outputs of recorded ops (they have a backward node).
  virtual bool is_leaf() const = 0;
};

class TensorImpl final : public IntrusiveTarget {
 public:
  TensorImpl(StoragePtr storage, DType dtype, IntArrayRef sizes, IntArrayRef strides,
             std::int64_t storage_offset);

  IntArrayRef sizes() const { return sizes_; }
  IntArrayRef strides() const { return strides_; }
  std::int64_t dim() const { return static_cast<std::int64_t>(sizes_.size()); }
  std::int64_t numel() const { return numel_; }
  std::int64_t storage_offset() const { return storage_offset_; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  bool is_contiguous() const { return is_contiguous_; }
  const StoragePtr& storage() const { return storage_; }

  // Pointer to element 0 (throws if the storage carries an access error).
  void* data() const {
    return static_cast<char*>(storage_->data()) +
           storage_offset_ * static_cast<std::int64_t>(element_size(dtype_));
  }

  bool requires_grad() const { return requires_grad_; }
  void set_requires_grad(bool requires_grad) { requires_grad_ = requires_grad; }
  // See Note [Autograd metadata is published once].
  AutogradMetaInterface* autograd_meta() const {
    return autograd_meta_.load(std::memory_order_acquire);
  }
  // Installs `meta` unless the tensor has metadata already, and returns the tensor's metadata:
  // `meta` itself, or the one another thread installed first (`meta` is then deleted).
  AutogradMetaInterface* install_autograd_meta(std::unique_ptr<AutogradMetaInterface> meta) {
    AutogradMetaInterface* expected = nullptr;
    if (autograd_meta_.compare_exchange_strong(expected, meta.get(), std::memory_order_acq_rel,
                                               std::memory_order_acquire)) {
      return meta.release();
    }
    return expected;
  }
  ~TensorImpl() override { delete autograd_meta_.load(std::memory_order_relaxed); }
  TensorImpl(const TensorImpl&) = delete;
  TensorImpl& operator=(const TensorImpl&) = delete;

 protected:
  // Weak handles (autograd's retain_grad hook holds one) may outlive the last strong one; the
  // memory and the autograd data go with the last strong handle, so a weak handle keeps
  // neither the data nor the tensor's graph alive.
  void release_resources() override {
    delete autograd_meta_.exchange(nullptr, std::memory_order_acq_rel);
    storage_.reset();
  }

 private:
  StoragePtr storage_;
  DimVector sizes_;
  DimVector strides_;
  std::int64_t storage_offset_;
  std::int64_t numel_;
  DType dtype_;
  bool is_contiguous_;
  bool requires_grad_ = false;
  // Owned; see Note [Autograd metadata is published once].
  std::atomic<AutogradMetaInterface*> autograd_meta_{nullptr};
};

// Row-major strides for `sizes`.
DimVector contiguous_strides(IntArrayRef sizes);
// True if (sizes, strides) is row-major dense (strides of size-1 dims do not matter).
bool is_contiguous_layout(IntArrayRef sizes, IntArrayRef strides);
std::int64_t product(IntArrayRef sizes);
// Throws grove::Error naming `op` unless every size is >= 0 and the element count, in bytes of
// the widest dtype (8), fits in 63 bits: a larger count would wrap around in product() and in
// byte sizes, and a tensor would claim more elements than its memory holds. Factories check
// before they allocate; views whose sizes are not those of their base (expand, as_strided) check
// too.
void check_sizes(IntArrayRef sizes, const char* op);
// True if two different indices of (sizes, strides) can reach one memory location (expanded
// dims, or as_strided views that fold back on themselves). Writing to such a tensor in place
// would give results that depend on the order of the writes, so in-place ops refuse it.
bool has_internal_overlap(IntArrayRef sizes, IntArrayRef strides);

}  // namespace grove
