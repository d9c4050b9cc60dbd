// Tensor: the handle users hold. Copying a Tensor copies a pointer (the data is shared); a
// default-constructed Tensor is undefined and most calls on it throw.
//
// Views (view, reshape when possible, transpose, permute, slice, narrow, select, expand,
// squeeze, unsqueeze) share storage with their base and never copy; see
// Note [Views, aliasing and version counters] in tensor_impl.h. clone(), contiguous() of a
// non-contiguous tensor, and to() of another device or dtype copy.
//
// Copies and fills are kernels launched on the current stream of the tensor's device, so they
// are recorded, not run, while that stream captures. Host reads (item, to_vector, printing)
// throw during capture (Note [CPU streams simulate CUDA capture]).
//
// Not thread-safe: one thread uses a tensor at a time (handles may move between threads).
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "core/array_ref.h"
#include "core/scalar.h"
#include "core/tensor_impl.h"

namespace grove {

// What a factory makes: dtype, device and whether autograd tracks it. A dtype that was never
// set reads as float32, except for full(), which then takes the dtype of its fill value
// (full({2}, 3) is int64, as in PyTorch).
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(DType dtype) : dtype_(dtype), has_dtype_(true) {}  // NOLINT: implicit on purpose
  TensorOptions(Device device) : device_(device) {}                // NOLINT

  DType dtype() const { return dtype_; }
  bool has_dtype() const { return has_dtype_; }
  Device device() const { return device_; }
  bool requires_grad() const { return requires_grad_; }
  TensorOptions dtype(DType dtype) const {
    TensorOptions copy = *this;
    copy.dtype_ = dtype;
    copy.has_dtype_ = true;
    return copy;
  }
  TensorOptions device(Device device) const {
    TensorOptions copy = *this;
    copy.device_ = device;
    return copy;
  }
  TensorOptions requires_grad(bool flag) const {
    TensorOptions copy = *this;
    copy.requires_grad_ = flag;
    return copy;
  }

 private:
  DType dtype_ = DType::Float32;
  bool has_dtype_ = false;
  Device device_ = kCPU;
  bool requires_grad_ = false;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(IntrusivePtr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return static_cast<bool>(impl_); }
  TensorImpl* impl() const { return impl_.get(); }

  // --- metadata (never touches data) ---
  IntArrayRef sizes() const { return checked().sizes(); }
  IntArrayRef strides() const { return checked().strides(); }
  std::int64_t size(std::int64_t dim) const;  // negative dims count from the end
  std::int64_t stride(std::int64_t dim) const;
  std::int64_t dim() const { return checked().dim(); }
  std::int64_t numel() const { return checked().numel(); }
  std::int64_t storage_offset() const { return checked().storage_offset(); }
  DType dtype() const { return checked().dtype(); }
  Device device() const { return checked().device(); }
  bool is_contiguous() const { return checked().is_contiguous(); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * element_size(dtype()); }
  const StoragePtr& storage() const { return checked().storage(); }
  bool is_alias_of(const Tensor& other) const { return storage() == other.storage(); }
  std::uint64_t version() const { return storage()->version(); }
  void bump_version() const { storage()->bump_version(); }

  // --- autograd fields (used by autograd/) ---
  bool requires_grad() const { return checked().requires_grad(); }
  // Marks a leaf tensor as requiring gradients; floating-point dtypes only.
  const Tensor& requires_grad_(bool requires_grad = true) const;
  // True unless the tensor is the output of an op that autograd recorded.
  bool is_leaf() const {
    const AutogradMetaInterface* meta = autograd_meta();
    return meta == nullptr || meta->is_leaf();
  }
  AutogradMetaInterface* autograd_meta() const { return checked().autograd_meta(); }
  AutogradMetaInterface* install_autograd_meta(std::unique_ptr<AutogradMetaInterface> meta) const {
    return checked().install_autograd_meta(std::move(meta));
  }

  // --- autograd (declared here for PyTorch's spelling; defined by grove_autograd in
  // autograd/tensor_autograd.cpp, so a program that calls them links grove_autograd) ---
  // The gradient accumulated into this leaf by backward(), or undefined. Shares memory with
  // the stored gradient (an optimizer updates it in place).
  Tensor grad() const;
  // Replaces the stored gradient (undefined clears it); the shape and dtype must match.
  void set_grad(const Tensor& grad) const;
  // Computes the gradient of this tensor with respect to every leaf that requires gradients
  // and accumulates it into their grad(). `gradient` may be omitted for one-element tensors
  // (it is then 1). Frees the graph's saved tensors unless retain_graph. Blocks until the
  // backward kernels are launched (not until they finish).
  void backward(const Tensor& gradient = {}, bool retain_graph = false) const;
  // Keeps grad() for a non-leaf tensor too (leaves always keep it).
  void retain_grad() const;

  // --- data access ---
  // Pointer to element 0; throws if the storage carries an access error.
  void* data_ptr() const { return checked().data(); }
  // Typed pointer; T must match dtype().
  template <typename T>
  T* data() const {
    check_dtype(dtype_of<T>, "data<T>()");
    return static_cast<T*>(data_ptr());
  }
  // The value of a one-element tensor, converted to T. Reads on the host (not during capture).
  template <typename T>
  T item() const;
  // All elements in row-major order, converted to T. Reads on the host.
  template <typename T>
  std::vector<T> to_vector() const;

  // --- views ---
  Tensor view(IntArrayRef sizes) const;     // one size may be -1 (inferred)
  Tensor reshape(IntArrayRef sizes) const;  // a view when the strides allow, else a copy
  Tensor transpose(std::int64_t dim0, std::int64_t dim1) const;
  Tensor t() const;  // transpose of a 2-d tensor
  Tensor permute(IntArrayRef dims) const;
  // Elements start, start+step, ... < end along dim (Python slicing: negative and out-of-range
  // bounds are clamped).
  Tensor slice(std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step = 1) const;
  Tensor narrow(std::int64_t dim, std::int64_t start, std::int64_t length) const;  // strict bounds
  Tensor select(std::int64_t dim, std::int64_t index) const;                       // removes dim
  Tensor expand(IntArrayRef sizes) const;  // -1 keeps a size; size-1 dims broadcast (stride 0)
  Tensor squeeze() const;                  // drops every size-1 dim
  Tensor squeeze(std::int64_t dim) const;  // drops dim if its size is 1
  Tensor unsqueeze(std::int64_t dim) const;
  Tensor as_strided(IntArrayRef sizes, IntArrayRef strides, std::int64_t storage_offset) const;

  // --- copies ---
  Tensor contiguous() const;  // itself if already contiguous
  Tensor clone() const;       // a new contiguous tensor with the same values
  // With non_blocking, a copy between a CUDA device and pinned host memory (pin_memory) is only
  // queued on the current stream; see copy_.
  Tensor to(Device device, bool non_blocking = false) const;
  Tensor to(DType dtype) const;
  Tensor detach() const;  // same data, no autograd history, requires_grad false

  // --- pinned host memory (for the data loader) ---
  // A contiguous CPU copy in page-locked memory from the CUDA backend's caching host allocator
  // (itself if it is already pinned), so that copies to a device may be asynchronous. Throws
  // "no CUDA device is available" without one. See Note [Reuse of pinned host blocks] in
  // core/cuda/pinned_memory.h.
  Tensor pin_memory() const;
  // True if this CPU tensor's data lies in pinned memory; false for every other tensor.
  bool is_pinned() const;

  // --- in-place (bump the version counter) ---
  // Copies src into this tensor, broadcasting src and converting its dtype. With non_blocking,
  // a dense copy from pinned host memory to a CUDA device, or from a CUDA device into pinned host
  // memory, returns before it is done (synchronise the stream before reading or reusing those
  // host bytes); every other copy ignores the flag.
  const Tensor& copy_(const Tensor& src, bool non_blocking = false) const;
  const Tensor& fill_(const Scalar& value) const;
  const Tensor& zero_() const { return fill_(0); }

 private:
  TensorImpl& checked() const {
    if (!impl_) [[unlikely]]
      throw_undefined();
    return *impl_;
  }
  [[noreturn]] static void throw_undefined();
  void check_dtype(DType expected, const char* what) const;

  IntrusivePtr<TensorImpl> impl_;
};

// Prints values with shape, dtype and device; long tensors are summarised with "...".
std::ostream& operator<<(std::ostream& out, const Tensor& tensor);

// --- factories ---
Tensor empty(IntArrayRef sizes, TensorOptions options = {});
Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions options = {});
Tensor zeros(IntArrayRef sizes, TensorOptions options = {});
Tensor ones(IntArrayRef sizes, TensorOptions options = {});
Tensor full(IntArrayRef sizes, const Scalar& value, TensorOptions options = {});
Tensor empty_like(const Tensor& other);
Tensor zeros_like(const Tensor& other);
// [0, end) and [start, end) by step; the dtype is the options' (float32 unless given).
Tensor arange(double end, TensorOptions options = {});
Tensor arange(double start, double end, double step = 1.0, TensorOptions options = {});
// A tensor holding `values` with the given shape (a 1-d tensor if sizes is empty).
template <typename T>
Tensor from_vector(const std::vector<T>& values, IntArrayRef sizes = {}, Device device = kCPU);

// Normalises a possibly negative dim into [0, ndim), or throws naming `op`.
std::int64_t wrap_dim(std::int64_t dim, std::int64_t ndim, const char* op);

}  // namespace grove
