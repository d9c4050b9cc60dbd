// View operations: new sizes/strides/offset over the same storage, never a data copy.
// See Note [Views, aliasing and version counters] in tensor_impl.h.
#include <algorithm>
#include <optional>

#include "core/core_observer.h"
#include "core/tensor.h"

namespace grove {
namespace {

// `kind` and `args` say how the view relates to its base, for autograd and tracers; see
// Note [Core observers].
Tensor make_view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides,
                 std::int64_t storage_offset, DerivedKind kind, IntArrayRef args = {}) {
  Tensor view(
      IntrusivePtr<TensorImpl>::make(base.storage(), base.dtype(), sizes, strides, storage_offset));
  if (base.requires_grad() || thread_has_core_observers()) [[unlikely]] {
    report_derived(base, view, kind, args);
  }
  return view;
}

// Replaces one -1 in `sizes` by what makes the element count equal `numel`.
DimVector infer_size(IntArrayRef sizes, std::int64_t numel, const char* op) {
  DimVector result(sizes);
  std::optional<std::size_t> inferred;
  std::int64_t known = 1;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == -1) {
      GROVE_CHECK(!inferred, op, ": only one dimension can be -1, but got shape ", sizes);
      inferred = d;
    } else {
      GROVE_CHECK(sizes[d] >= 0, op, ": sizes must be non-negative (or -1 once), but got ", sizes);
      // A product that wraps around could equal numel by accident ([2^32, 2^32] "holds" 0).
      GROVE_CHECK(!__builtin_mul_overflow(known, sizes[d], &known), op, ": shape ", sizes,
                  " is invalid for a tensor of ", numel,
                  " elements (its sizes multiply to more than an int64 holds)");
    }
  }
  if (inferred) {
    GROVE_CHECK(known != 0 && numel % known == 0, op, ": shape ", sizes,
                " is invalid for a tensor of ", numel, " elements");
    result[*inferred] = numel / known;
  } else {
    GROVE_CHECK(known == numel, op, ": shape ", sizes, " is invalid for a tensor of ", numel,
                " elements (it holds ", known, ")");
  }
  return result;
}

// Strides that view (old_sizes, old_strides) as new_sizes without copying, if possible: each
// run of old dims that is contiguous in memory may be split or merged freely.
std::optional<DimVector> view_strides(IntArrayRef old_sizes, IntArrayRef old_strides,
                                      IntArrayRef new_sizes) {
  DimVector new_strides(new_sizes.size());
  if (old_sizes.empty()) {
    std::fill(new_strides.begin(), new_strides.end(), 1);
    return new_strides;
  }
  if (product(old_sizes) == 0) return contiguous_strides(new_sizes);
  std::int64_t view_d = static_cast<std::int64_t>(new_sizes.size()) - 1;
  std::int64_t chunk_base_stride = old_strides.back();
  std::int64_t tensor_numel = 1;
  std::int64_t view_numel = 1;
  for (std::int64_t tensor_d = static_cast<std::int64_t>(old_sizes.size()) - 1; tensor_d >= 0;
       --tensor_d) {
    tensor_numel *= old_sizes[tensor_d];
    // The end of a contiguous chunk: the first dim, or a break in contiguity before it.
    const bool chunk_ends =
        tensor_d == 0 || (old_sizes[tensor_d - 1] != 1 &&
                          old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride);
    if (chunk_ends) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

}  // namespace

Tensor Tensor::view(IntArrayRef new_sizes) const {
  DimVector sizes = infer_size(new_sizes, numel(), "view");
  std::optional<DimVector> strides = view_strides(this->sizes(), this->strides(), sizes);
  GROVE_CHECK(strides.has_value(), "view: a tensor of shape ", this->sizes(), " and strides ",
              this->strides(), " cannot be viewed as shape ", IntArrayRef(sizes),
              " without copying (its memory is not laid out contiguously enough); use "
              "reshape(), or contiguous() first");
  return make_view(*this, sizes, *strides, storage_offset(), DerivedKind::Reshape);
}

Tensor Tensor::reshape(IntArrayRef new_sizes) const {
  DimVector sizes = infer_size(new_sizes, numel(), "reshape");
  if (std::optional<DimVector> strides = view_strides(this->sizes(), this->strides(), sizes)) {
    return make_view(*this, sizes, *strides, storage_offset(), DerivedKind::Reshape);
  }
  return clone().view(sizes);
}

Tensor Tensor::transpose(std::int64_t dim0, std::int64_t dim1) const {
  const std::int64_t a = wrap_dim(dim0, dim(), "transpose");
  const std::int64_t b = wrap_dim(dim1, dim(), "transpose");
  DimVector sizes(this->sizes());
  DimVector strides(this->strides());
  if (dim() > 0) {
    std::swap(sizes[a], sizes[b]);
    std::swap(strides[a], strides[b]);
  }
  DimVector dims(static_cast<std::size_t>(dim()));
  for (std::size_t d = 0; d < dims.size(); ++d) dims[d] = static_cast<std::int64_t>(d);
  if (dim() > 0) std::swap(dims[static_cast<std::size_t>(a)], dims[static_cast<std::size_t>(b)]);
  return make_view(*this, sizes, strides, storage_offset(), DerivedKind::Permute, dims);
}

Tensor Tensor::t() const {
  GROVE_CHECK(dim() <= 2, "t(): expected a tensor of at most 2 dimensions, but got ", dim(),
              " (shape ", sizes(), "); use transpose(dim0, dim1)");
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::permute(IntArrayRef dims) const {
  GROVE_CHECK(static_cast<std::int64_t>(dims.size()) == dim(), "permute: expected ", dim(),
              " dimensions (one per dimension of shape ", sizes(), "), but got ", dims);
  DimVector sizes(dims.size());
  DimVector strides(dims.size());
  DimVector wrapped(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const auto d = static_cast<std::size_t>(wrap_dim(dims[i], dim(), "permute"));
    GROVE_CHECK(!seen[d], "permute: dimension ", d, " appears twice in ", dims);
    seen[d] = true;
    wrapped[i] = static_cast<std::int64_t>(d);
    sizes[i] = this->sizes()[d];
    strides[i] = this->strides()[d];
  }
  return make_view(*this, sizes, strides, storage_offset(), DerivedKind::Permute, wrapped);
}

Tensor Tensor::slice(std::int64_t dim_in, std::int64_t start, std::int64_t end,
                     std::int64_t step) const {
  GROVE_CHECK(dim() > 0, "slice: cannot slice a 0-dimensional tensor");
  const std::int64_t d = wrap_dim(dim_in, dim(), "slice");
  GROVE_CHECK(step > 0, "slice: step must be positive, but got ", step);
  const std::int64_t length = sizes()[d];
  auto clamp_index = [&](std::int64_t index) {
    if (index < 0) index += length;
    return std::clamp<std::int64_t>(index, 0, length);
  };
  start = clamp_index(start);
  end = std::max(clamp_index(end), start);
  DimVector sizes(this->sizes());
  DimVector strides(this->strides());
  sizes[d] = end == start ? 0 : (end - start - 1) / step + 1;  // no overflow for huge steps
  strides[d] *= step;
  const std::int64_t args[] = {d, start, step};
  return make_view(*this, sizes, strides, storage_offset() + start * this->strides()[d],
                   DerivedKind::Slice, args);
}

Tensor Tensor::narrow(std::int64_t dim_in, std::int64_t start, std::int64_t length) const {
  GROVE_CHECK(dim() > 0, "narrow: cannot narrow a 0-dimensional tensor");
  const std::int64_t d = wrap_dim(dim_in, dim(), "narrow");
  const std::int64_t size = sizes()[d];
  GROVE_CHECK(length >= 0, "narrow: length must be non-negative, but got ", length);
  const std::int64_t first = start < 0 ? start + size : start;
  // Written as length <= size - first so that a huge length cannot overflow.
  GROVE_CHECK(first >= 0 && first <= size && length <= size - first, "narrow: start ", start,
              " with length ", length, " is out of bounds for dimension ", d, " of size ", size,
              " (expected -", size, " <= start <= ", size, " and start + length <= ", size, ")");
  return slice(d, first, first + length);
}

Tensor Tensor::select(std::int64_t dim_in, std::int64_t index) const {
  GROVE_CHECK(dim() > 0, "select: cannot select from a 0-dimensional tensor");
  const std::int64_t d = wrap_dim(dim_in, dim(), "select");
  const std::int64_t size = sizes()[d];
  GROVE_CHECK(index >= -size && index < size, "select: index ", index,
              " is out of range for dimension ", d, " of size ", size);
  if (index < 0) index += size;
  DimVector sizes(this->sizes());
  DimVector strides(this->strides());
  sizes.erase(static_cast<std::size_t>(d));
  strides.erase(static_cast<std::size_t>(d));
  const std::int64_t args[] = {d, index};
  return make_view(*this, sizes, strides, storage_offset() + index * this->strides()[d],
                   DerivedKind::Select, args);
}

Tensor Tensor::expand(IntArrayRef new_sizes) const {
  GROVE_CHECK(static_cast<std::int64_t>(new_sizes.size()) >= dim(), "expand: the target shape ",
              new_sizes, " has fewer dimensions than the tensor's shape ", sizes());
  const std::size_t leading = new_sizes.size() - static_cast<std::size_t>(dim());
  DimVector sizes(new_sizes.size());
  DimVector strides(new_sizes.size());
  for (std::size_t i = 0; i < new_sizes.size(); ++i) {
    const std::int64_t wanted = new_sizes[i];
    if (i < leading) {
      GROVE_CHECK(wanted >= 0,
                  "expand: new leading dimensions cannot be -1 or negative, but "
                  "got ",
                  new_sizes);
      sizes[i] = wanted;
      strides[i] = 0;
      continue;
    }
    const std::int64_t have = this->sizes()[i - leading];
    const std::int64_t stride = this->strides()[i - leading];
    GROVE_CHECK(wanted >= -1,
                "expand: sizes must be non-negative (or -1 to keep a size), but "
                "got ",
                new_sizes);
    if (wanted == -1 || wanted == have) {
      sizes[i] = have;
      strides[i] = stride;
    } else {
      GROVE_CHECK(have == 1 && wanted >= 0, "expand: cannot expand shape ", this->sizes(), " to ",
                  new_sizes, ": dimension ", i, " has size ", have,
                  ", and only size-1 dimensions can be expanded");
      sizes[i] = wanted;
      strides[i] = 0;
    }
  }
  check_sizes(sizes, "expand");  // sizes of stride 0 can be anything, but numel must not wrap
  return make_view(*this, sizes, strides, storage_offset(), DerivedKind::Expand);
}

Tensor Tensor::squeeze() const {
  DimVector sizes;
  DimVector strides;
  for (std::int64_t d = 0; d < dim(); ++d) {
    if (this->sizes()[d] == 1) continue;
    sizes.push_back(this->sizes()[d]);
    strides.push_back(this->strides()[d]);
  }
  return make_view(*this, sizes, strides, storage_offset(), DerivedKind::Reshape);
}

Tensor Tensor::squeeze(std::int64_t dim_in) const {
  if (dim() == 0) {
    wrap_dim(dim_in, 0, "squeeze");
    return *this;
  }
  const std::int64_t d = wrap_dim(dim_in, dim(), "squeeze");
  if (sizes()[d] != 1) return *this;
  DimVector sizes(this->sizes());
  DimVector strides(this->strides());
  sizes.erase(static_cast<std::size_t>(d));
  strides.erase(static_cast<std::size_t>(d));
  return make_view(*this, sizes, strides, storage_offset(), DerivedKind::Reshape);
}

Tensor Tensor::unsqueeze(std::int64_t dim_in) const {
  // The new dim may go at any of dim() + 1 positions; say so in terms of this tensor's rank
  // (wrap_dim's message would name a tensor of dim() + 1 dimensions).
  const std::int64_t positions = dim() + 1;
  GROVE_CHECK(dim_in >= -positions && dim_in < positions, "unsqueeze: dimension ", dim_in,
              " is out of range for inserting a dimension into a tensor of ", dim(),
              " dimensions (expected a value in [", -positions, ", ", positions - 1, "])");
  const std::int64_t d = dim_in < 0 ? dim_in + positions : dim_in;
  DimVector sizes(this->sizes());
  DimVector strides(this->strides());
  const std::int64_t stride = d < dim() ? this->sizes()[d] * this->strides()[d] : 1;
  sizes.insert(static_cast<std::size_t>(d), 1);
  strides.insert(static_cast<std::size_t>(d), stride);
  return make_view(*this, sizes, strides, storage_offset(), DerivedKind::Reshape);
}

Tensor Tensor::as_strided(IntArrayRef sizes, IntArrayRef strides,
                          std::int64_t storage_offset) const {
  GROVE_CHECK(sizes.size() == strides.size(), "as_strided: got ", sizes.size(), " sizes but ",
              strides.size(), " strides");
  GROVE_CHECK(storage_offset >= 0, "as_strided: storage_offset must be non-negative, but got ",
              storage_offset);
  bool empty_view = false;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    GROVE_CHECK(sizes[d] >= 0 && strides[d] >= 0, "as_strided: sizes and strides must be ",
                "non-negative, but got sizes ", sizes, " and strides ", strides);
    if (sizes[d] == 0) empty_view = true;
  }
  check_sizes(sizes, "as_strided");
  const auto capacity = static_cast<std::int64_t>(storage()->nbytes() / element_size(dtype()));
  // The highest element index touched; a sum that would wrap around is past the storage too.
  std::int64_t last = storage_offset;
  bool beyond = false;
  for (std::size_t d = 0; d < sizes.size() && !empty_view && !beyond; ++d) {
    std::int64_t reach = 0;
    beyond = __builtin_mul_overflow(sizes[d] - 1, strides[d], &reach) ||
             __builtin_add_overflow(last, reach, &last);
  }
  GROVE_CHECK(empty_view || (!beyond && last < capacity), "as_strided: sizes ", sizes,
              " with strides ", strides, " and offset ", storage_offset, " reach ",
              beyond ? std::string("past the largest int64 element index") : str("element ", last),
              ", beyond the storage's ", capacity, " elements");
  const std::int64_t args[] = {storage_offset};
  return make_view(*this, sizes, strides, storage_offset, DerivedKind::AsStrided, args);
}

}  // namespace grove
