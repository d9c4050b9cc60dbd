// Tensor: metadata accessors, copies, host reads and factories. Views are in tensor_views.cpp,
// printing in tensor_print.cpp.
#include "core/tensor.h"

#include <cmath>
#include <cstring>

#include "core/copy_kernel.h"
#include "core/core_observer.h"
#include "core/cuda/cuda_backend.h"
#include "core/data_ptr.h"
#include "core/host_reads.h"
#include "core/stream.h"

namespace grove {

void Tensor::throw_undefined() {
  GROVE_CHECK(false,
              "this tensor is undefined (default-constructed); create it with a factory "
              "such as empty(), zeros() or from_vector() first");
}

void Tensor::check_dtype(DType expected, const char* what) const {
  GROVE_CHECK(dtype() == expected, what, ": expected a tensor of dtype ", expected,
              " but this tensor has dtype ", dtype());
}

std::int64_t wrap_dim(std::int64_t dim, std::int64_t ndim, const char* op) {
  const std::int64_t low = ndim == 0 ? -1 : -ndim;
  const std::int64_t high = ndim == 0 ? 0 : ndim - 1;
  GROVE_CHECK(dim >= low && dim <= high, op, ": dimension ", dim,
              " is out of range for a tensor of ", ndim, " dimensions (expected a value in [", low,
              ", ", high, "])");
  return dim < 0 ? dim + std::max<std::int64_t>(ndim, 1) : dim;
}

namespace {

// wrap_dim lets dim 0 and -1 through for a 0-d tensor (ops such as squeeze accept them), but a
// 0-d tensor has no size or stride to read.
void check_has_dims(const Tensor& tensor, std::int64_t dim, const char* op) {
  GROVE_CHECK(tensor.dim() > 0, op, ": dimension ", dim,
              " is out of range for a 0-dimensional "
              "tensor, which has no dimensions (use numel() or item() instead)");
}

}  // namespace

std::int64_t Tensor::size(std::int64_t dim) const {
  check_has_dims(*this, dim, "size");
  return sizes()[static_cast<std::size_t>(wrap_dim(dim, this->dim(), "size"))];
}

std::int64_t Tensor::stride(std::int64_t dim) const {
  check_has_dims(*this, dim, "stride");
  return strides()[static_cast<std::size_t>(wrap_dim(dim, this->dim(), "stride"))];
}

const Tensor& Tensor::requires_grad_(bool requires_grad) const {
  GROVE_CHECK(!requires_grad || is_floating_point(dtype()),
              "requires_grad_: only floating-point tensors can require gradients, but this "
              "tensor has dtype ",
              dtype());
  const AutogradMetaInterface* meta = autograd_meta();
  GROVE_CHECK(requires_grad || meta == nullptr || meta->is_leaf(),
              "requires_grad_(false): this tensor is the output of a recorded op (not a leaf); "
              "use detach() to get a tensor without gradient history");
  checked().set_requires_grad(requires_grad);
  return *this;
}

// --- host reads ---

namespace {

// item() of a CPU tensor of a dtype kernels compute in (`dtype` names the tensor's own).
template <typename T>
T read_item(const Tensor& tensor, DType dtype) {
  T result{};
  dispatch_dtype(tensor.dtype(), "item", [&]<typename Stored>() {
    Stored value = *static_cast<const Stored*>(tensor.data_ptr());
    if constexpr (std::is_same_v<T, bool>) {
      result = value != Stored(0);
    } else {
      if constexpr (std::is_integral_v<T> && !std::is_same_v<Stored, bool>) {
        // A NaN or a value out of T's range has no T to convert to (converting it is undefined
        // behaviour for floating values, a wrap-around for integers).
        const Scalar stored = std::is_floating_point_v<Stored>
                                  ? Scalar(static_cast<double>(value))
                                  : Scalar(static_cast<std::int64_t>(value));
        GROVE_CHECK(stored.fits(dtype_of<T>), "item(): the value ", stored, " of this ", dtype,
                    " tensor does not fit the requested ", dtype_of<T>,
                    "; read it as a floating-point type (item<double>())");
      }
      result = static_cast<T>(value);
    }
  });
  return result;
}

}  // namespace

template <typename T>
T Tensor::item() const {
  GROVE_CHECK(numel() == 1, "item(): expected a tensor with exactly one element, but got shape ",
              sizes(), " (", numel(), " elements)");
  check_host_read(device(), "item()");
  const SuspendCoreObservers host_read;               // see Note [Core observers]
  const InternalDataAccess reported;                  // see Note [Host reads during a trace]
  if (!device().is_cpu()) return to(kCPU).item<T>();  // copies and synchronises
  if constexpr (is_reduced_float_v<T>) {
    return T(item<double>());  // exact for a 16-bit tensor; otherwise rounded once
  } else {
    // A 16-bit float widens to float32 exactly, and goes on from there.
    if (is_reduced_float(dtype())) return read_item<T>(to(DType::Float32), dtype());
    return read_item<T>(*this, dtype());
  }
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  check_host_read(device(), "to_vector()");
  const SuspendCoreObservers host_read;                    // see Note [Core observers]
  const InternalDataAccess reported;                       // see Note [Host reads during a trace]
  if (!device().is_cpu()) return to(kCPU).to_vector<T>();  // copies and synchronises
  Tensor dense = contiguous();
  if (dense.dtype() != dtype_of<T>) dense = dense.to(dtype_of<T>);
  std::vector<T> values(static_cast<std::size_t>(numel()));
  if constexpr (std::is_same_v<T, bool>) {
    const bool* data = dense.data<bool>();
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = data[i];
  } else if (!values.empty()) {
    std::memcpy(values.data(), dense.data_ptr(), values.size() * sizeof(T));
  }
  return values;
}

#define GROVE_INSTANTIATE_HOST_READS(T) \
  template T Tensor::item<T>() const;   \
  template std::vector<T> Tensor::to_vector<T>() const;
GROVE_INSTANTIATE_HOST_READS(float)
GROVE_INSTANTIATE_HOST_READS(double)
GROVE_INSTANTIATE_HOST_READS(std::int64_t)
GROVE_INSTANTIATE_HOST_READS(std::int32_t)
GROVE_INSTANTIATE_HOST_READS(bool)
GROVE_INSTANTIATE_HOST_READS(BFloat16)
GROVE_INSTANTIATE_HOST_READS(Float16)
#undef GROVE_INSTANTIATE_HOST_READS

// --- copies ---

namespace {

// A value `target` cannot hold exactly is refused (Scalar::fits_exactly): converting it would
// wrap around, truncate a fraction, or be undefined for NaN and the infinities; and 2 is no bool.
void check_fill_value(const Tensor& target, const Scalar& value, const char* op) {
  GROVE_CHECK(value.fits_exactly(target.dtype()), op, ": the value ", value, " does not fit a ",
              target.dtype(), " tensor of shape ", target.sizes(),
              target.dtype() == DType::Bool ? "; a bool holds 0 or 1 (false or true)"
              : is_floating_point(target.dtype())
                  ? str("; a finite ", target.dtype(), " is below ",
                        Scalar::finite_limit(target.dtype()), " in magnitude")
                  : std::string("; an integer dtype holds whole numbers in its range"),
              "; use such a value, or a wider dtype");
}

// Core reports an event when a tensor involved requires gradients or the thread has observers;
// see Note [Core observers].
bool write_is_observed(const Tensor& target, const Tensor* source) {
  return target.requires_grad() || (source != nullptr && source->requires_grad()) ||
         thread_has_core_observers();
}

void report_copy(const Tensor& source, const Tensor& result) {
  if (source.requires_grad() || thread_has_core_observers()) [[unlikely]] {
    report_derived(source, result, DerivedKind::Copy, {});
  }
}

// In-place writes refuse expanded destinations: see Note [Views, aliasing and version counters].
void check_writable(const Tensor& dst, const char* op) {
  for (std::int64_t d = 0; d < dst.dim(); ++d) {
    GROVE_CHECK(dst.strides()[d] != 0 || dst.sizes()[d] <= 1, op, ": the destination of shape ",
                dst.sizes(), " is a broadcast (expanded) view with stride 0 in dimension ", d,
                ", so several of its elements share one memory location; write into a "
                "contiguous tensor (clone() it) instead");
  }
  GROVE_CHECK(!has_internal_overlap(dst.sizes(), dst.strides()), op,
              ": the destination of "
              "shape ",
              dst.sizes(), " and strides ", dst.strides(),
              " has elements that share "
              "memory locations (an as_strided view that overlaps itself); the result would "
              "depend on the order of the writes. Write into a clone() instead");
}

// True if `from` broadcasts to `to`: aligned from the right, each size is equal or 1.
bool broadcasts_to(IntArrayRef from, IntArrayRef to) {
  if (from.size() > to.size()) return false;
  const std::size_t leading = to.size() - from.size();
  for (std::size_t i = 0; i < from.size(); ++i) {
    if (from[i] != 1 && from[i] != to[leading + i]) return false;
  }
  return true;
}

// The copy itself, reporting nothing: copy_ and to(device) report it as one event, and the
// steps of a copy (the expand of a broadcast source, the clone of a source that overlaps the
// destination, the staging of a copy between host and device) are not reported at all; see
// Note [Core observers].
void copy_unreported(const Tensor& dst, const Tensor& src, bool non_blocking) {
  GROVE_CHECK(broadcasts_to(src.sizes(), dst.sizes()), "copy_: a source of shape ", src.sizes(),
              " cannot be broadcast to the destination's shape ", dst.sizes(),
              " (aligned from the right, each source size must equal the destination's or be 1)");
  const SuspendCoreObservers steps_of_the_copy;
  const InternalDataAccess kernel;  // see Note [Host reads during a trace]
  const Tensor source =
      src.dim() == dst.dim() && src.sizes() == dst.sizes() ? src : src.expand(dst.sizes());
  if (src.device() == dst.device()) {
    launch_copy(dst, source);
  } else {
    cuda_backend::copy_between_devices(dst, source, non_blocking);  // host and CUDA device
  }
}

}  // namespace

const Tensor& Tensor::copy_(const Tensor& src, bool non_blocking) const {
  GROVE_CHECK(src.defined(), "copy_: the source tensor is undefined");
  check_writable(*this, "copy_");
  const CoreWrite write{WriteKind::Copy, *this, &src, {}, non_blocking};
  const bool observed = write_is_observed(*this, &src);
  if (observed) [[unlikely]]
    report_before_write(write);
  copy_unreported(*this, src, non_blocking);
  bump_version();
  if (observed) [[unlikely]]
    report_write(write);
  return *this;
}

const Tensor& Tensor::fill_(const Scalar& value) const {
  check_writable(*this, "fill_");
  check_fill_value(*this, value, "fill_");
  const CoreWrite write{WriteKind::Fill, *this, nullptr, value, false};
  const bool observed = write_is_observed(*this, nullptr);
  if (observed) [[unlikely]]
    report_before_write(write);
  {
    const InternalDataAccess kernel;  // see Note [Host reads during a trace]
    launch_fill(*this, value);
  }
  bump_version();
  if (observed) [[unlikely]]
    report_write(write);
  return *this;
}

Tensor Tensor::contiguous() const {
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::clone() const {
  Tensor result = empty(sizes(), TensorOptions(dtype()).device(device()));
  copy_unreported(result, *this, false);
  report_copy(*this, result);
  return result;
}

Tensor Tensor::to(Device target, bool non_blocking) const {
  if (target == device()) return *this;
  Tensor result = empty(sizes(), TensorOptions(dtype()).device(target));
  copy_unreported(result, *this, non_blocking);  // reported as one Copy below
  report_copy(*this, result);
  return result;
}

Tensor Tensor::to(DType target) const {
  if (target == dtype()) return *this;
  Tensor result = empty(sizes(), TensorOptions(target).device(device()));
  copy_unreported(result, *this, false);
  report_copy(*this, result);
  return result;
}

Tensor Tensor::pin_memory() const {
  GROVE_CHECK(device().is_cpu(), "pin_memory: expected a CPU tensor, but got one on ", device(),
              " (only host memory can be pinned)");
  if (is_pinned()) return *this;
  const std::size_t bytes = nbytes();
  StoragePtr storage = Storage::wrap(cuda_backend::allocate_pinned(bytes), bytes);
  Tensor result(IntrusivePtr<TensorImpl>::make(std::move(storage), dtype(), sizes(),
                                               contiguous_strides(sizes()), 0));
  copy_unreported(result, *this, false);  // a CPU copy: done when it returns
  report_copy(*this, result);
  return result;
}

bool Tensor::is_pinned() const {
  return device().is_cpu() && cuda_backend::is_pinned(storage()->unchecked_data());
}

Tensor Tensor::detach() const {
  const TensorImpl& self = checked();
  return Tensor(IntrusivePtr<TensorImpl>::make(self.storage(), self.dtype(), self.sizes(),
                                               self.strides(), self.storage_offset()));
}

// --- factories ---

namespace {

// full(), with `op` naming the factory the user called in error messages.
Tensor filled(IntArrayRef sizes, const Scalar& value, TensorOptions options, const char* op) {
  check_sizes(sizes, op);
  Tensor result = empty(sizes, options.requires_grad(false));
  check_fill_value(result, value, op);
  {
    const SuspendCoreObservers factory;  // see Note [Core observers]
    result.fill_(value);
  }
  if (options.requires_grad()) result.requires_grad_(true);
  return result;
}

}  // namespace

Tensor empty(IntArrayRef sizes, TensorOptions options) {
  check_sizes(sizes, "empty");
  const std::size_t nbytes =
      static_cast<std::size_t>(product(sizes)) * element_size(options.dtype());
  StoragePtr storage = Storage::allocate(nbytes, options.device());
  Tensor result(IntrusivePtr<TensorImpl>::make(std::move(storage), options.dtype(), sizes,
                                               contiguous_strides(sizes), 0));
  if (options.requires_grad()) result.requires_grad_(true);
  return result;
}

Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions options) {
  check_sizes(sizes, "empty_strided");
  GROVE_CHECK(sizes.size() == strides.size(), "empty_strided: got ", sizes.size(), " sizes but ",
              strides.size(), " strides");
  bool has_elements = true;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    GROVE_CHECK(strides[d] >= 0, "empty_strided: strides must be non-negative, but got ", strides);
    if (sizes[d] == 0) has_elements = false;
  }
  // Elements needed: 1 + sum (size - 1) * stride, which must not wrap around (huge strides can
  // reach far past what the element count suggests) nor exceed what check_sizes allows.
  std::int64_t extent = has_elements ? 1 : 0;
  for (std::size_t d = 0; d < sizes.size() && has_elements; ++d) {
    std::int64_t reach = 0;
    const bool overflows = __builtin_mul_overflow(sizes[d] - 1, strides[d], &reach) ||
                           __builtin_add_overflow(extent, reach, &extent);
    GROVE_CHECK(!overflows, "empty_strided: sizes ", sizes, " with strides ", strides,
                " reach more elements than any device can hold; use smaller strides");
  }
  check_sizes({extent}, "empty_strided");
  StoragePtr storage = Storage::allocate(
      static_cast<std::size_t>(extent) * element_size(options.dtype()), options.device());
  Tensor result(
      IntrusivePtr<TensorImpl>::make(std::move(storage), options.dtype(), sizes, strides, 0));
  if (options.requires_grad()) result.requires_grad_(true);
  return result;
}

Tensor full(IntArrayRef sizes, const Scalar& value, TensorOptions options) {
  // Without an explicit dtype the fill value decides: float32, int64 or bool.
  if (!options.has_dtype()) options = options.dtype(value.default_dtype());
  return filled(sizes, value, options, "full");
}

Tensor zeros(IntArrayRef sizes, TensorOptions options) {
  return filled(sizes, 0, options, "zeros");  // float32 unless options say otherwise
}
Tensor ones(IntArrayRef sizes, TensorOptions options) {
  return filled(sizes, 1, options, "ones");
}

Tensor empty_like(const Tensor& other) {
  return empty(other.sizes(), TensorOptions(other.dtype()).device(other.device()));
}

Tensor zeros_like(const Tensor& other) {
  return zeros(other.sizes(), TensorOptions(other.dtype()).device(other.device()));
}

Tensor arange(double end, TensorOptions options) {
  return arange(0.0, end, 1.0, options);
}

Tensor arange(double start, double end, double step, TensorOptions options) {
  GROVE_CHECK(options.dtype() != DType::Bool,
              "arange: expected a numeric dtype, but got bool (a range of values has no bool "
              "form); make it as int64 and compare, e.g. ne(arange(n, int64), 0)");
  GROVE_CHECK(step != 0.0, "arange: step must be non-zero");
  GROVE_CHECK(std::isfinite(start) && std::isfinite(end) && std::isfinite(step),
              "arange: start, end and step must be finite, but got ", start, ", ", end, ", ", step);
  GROVE_CHECK((end - start) / step >= 0.0 || start == end, "arange: with step ", step,
              " the range [", start, ", ", end,
              ") is empty in the wrong direction; swap start "
              "and end or change the sign of step");
  const double steps = std::ceil((end - start) / step);
  // 2^60 elements is already more than check_sizes lets any tensor have; checked in double first
  // so that the conversion to int64 cannot overflow.
  GROVE_CHECK(steps < 0x1p60, "arange: the range [", start, ", ", end, ") with step ", step,
              " has ", steps, " elements, more elements than any device can hold");
  const auto count = static_cast<std::int64_t>(steps);
  check_sizes({count}, "arange");
  std::vector<double> values(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = start + step * static_cast<double>(i);
  const SuspendCoreObservers factory;  // see Note [Core observers]
  return from_vector(values, {}, options.device()).to(options.dtype());
}

template <typename T>
Tensor from_vector(const std::vector<T>& values, IntArrayRef sizes, Device device) {
  check_not_capturing(device, "from_vector()");
  const auto count = static_cast<std::int64_t>(values.size());
  DimVector shape = sizes.empty() ? DimVector{count} : DimVector(sizes);
  check_sizes(shape, "from_vector");
  GROVE_CHECK(product(shape) == count, "from_vector: shape ", IntArrayRef(shape), " holds ",
              product(shape), " elements, but ", count, " values were given");
  Tensor host = empty(shape, dtype_of<T>);
  const InternalDataAccess filling;  // see Note [Host reads during a trace]
  if constexpr (std::is_same_v<T, bool>) {
    bool* data = host.data<bool>();
    for (std::size_t i = 0; i < values.size(); ++i) data[i] = values[i];
  } else if (count > 0) {
    std::memcpy(host.data_ptr(), values.data(), values.size() * sizeof(T));
  }
  const SuspendCoreObservers factory;  // see Note [Core observers]
  return host.to(device);
}

template Tensor from_vector(const std::vector<float>&, IntArrayRef, Device);
template Tensor from_vector(const std::vector<double>&, IntArrayRef, Device);
template Tensor from_vector(const std::vector<std::int64_t>&, IntArrayRef, Device);
template Tensor from_vector(const std::vector<std::int32_t>&, IntArrayRef, Device);
template Tensor from_vector(const std::vector<BFloat16>&, IntArrayRef, Device);
template Tensor from_vector(const std::vector<Float16>&, IntArrayRef, Device);
template Tensor from_vector(const std::vector<bool>&, IntArrayRef, Device);

}  // namespace grove
