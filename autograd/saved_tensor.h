// SavedTensor: a tensor a node keeps for its backward, with the version it had when saved.
//
// See Note [Views, aliasing and version counters] in core/tensor_impl.h: every in-place op
// bumps the version of the storage it writes. If a saved tensor's version moved by the time
// backward needs it, its values are not the ones the forward used, and unpack() throws instead
// of computing a wrong gradient.
//
// Tensors are saved detached (a new handle over the same memory, without the grad_fn), so a
// node owns no other node through them: see Note [Nodes own nodes only through edges] in
// node.h. (An op's output saved with its grad_fn would even make the node own itself.)
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace grove::autograd {

class SavedTensor {
 public:
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& tensor);

  bool defined() const { return tensor_.defined(); }
  // The saved tensor; throws if it was modified in place since it was saved. `op` and `what`
  // ("input 1", "output 0") name it in the error.
  Tensor unpack(std::string_view op, std::string_view what) const;
  void reset() { tensor_ = Tensor(); }

 private:
  Tensor tensor_;
  std::uint64_t saved_version_ = 0;
};

}  // namespace grove::autograd
