// SavedTensor: the version check.
#include "autograd/saved_tensor.h"

#include "core/error.h"

namespace grove::autograd {

// Saved tensors are always detached: see Note [Nodes own nodes only through edges].
SavedTensor::SavedTensor(const Tensor& tensor)
    : tensor_(tensor.detach()), saved_version_(tensor.version()) {}

Tensor SavedTensor::unpack(std::string_view op, std::string_view what) const {
  const std::uint64_t version = tensor_.version();
  GROVE_CHECK(version == saved_version_, "autograd: ", what, " of ", op, " (", tensor_.dtype(),
              tensor_.sizes(),
              "), which its backward needs, was modified by an in-place operation: it was saved "
              "at version ",
              saved_version_, " and is now at version ", version,
              ". Do the in-place change on a copy (clone()), or after backward()");
  return tensor_;
}

}  // namespace grove::autograd
