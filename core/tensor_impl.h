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

#include <cstdint>
#include <memory>

#include "core/array_ref.h"
#include "core/dtype.h"
#include "core/intrusive_ptr.h"
#include "core/storage.h"

namespace grove {

// Opaque slot for autograd's per-tensor data (grad_fn, grad, hooks); defined by autograd/.
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
  AutogradMetaInterface* autograd_meta() const { return autograd_meta_.get(); }
  void set_autograd_meta(std::unique_ptr<AutogradMetaInterface> meta) {
    autograd_meta_ = std::move(meta);
  }

 protected:
  // Weak handles (autograd's retain_grad hook holds one) may outlive the last strong one; the
  // memory and the autograd data go with the last strong handle, so a weak handle keeps
  // neither the data nor the tensor's graph alive.
  void release_resources() override {
    autograd_meta_.reset();
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
  std::unique_ptr<AutogradMetaInterface> autograd_meta_;
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
