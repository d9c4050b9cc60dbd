// The functions a tree manager knows: each function added with add_function (an AddedFunction)
// and, per input signature it has been called with, one FunctionInfo (tree_node.h), which the
// trees' nodes point to. Signatures are what a recording depends on besides addresses: per
// input, defined-ness, dtype, device, sizes and strides.
//
// Not thread-safe (the manager's thread only). Addresses of AddedFunctions and FunctionInfos
// are stable for the cache's life; neither is ever removed (a released function keeps its name
// for the messages of outputs that outlive it).
#pragma once

#include <deque>

#include "graphs/tree/tree_node.h"
#include "graphs/tree/tree_types.h"

namespace grove::graphs {

struct AddedFunction {
  struct Signature {
    std::size_t hash;
    std::vector<std::int64_t> encoded;
    int function_id;
  };
  WrappedFunction wrapped;
  std::vector<Signature> signatures;
  bool warned_dynamic = false;
  bool released = false;  // its last ManagedFunction handle is gone
};

class FunctionCache {
 public:
  // Checks the function (a callable, capture sizes that fit its dynamic dims) and keeps it.
  int add(WrappedFunction function);
  AddedFunction& added(int added_id) { return added_[static_cast<std::size_t>(added_id)]; }
  std::size_t num_added() const { return added_.size(); }

  // The FunctionInfo of this call's signature, made on first sight (then `is_new` is set).
  // Throws if an input index the function declares is out of range for the call.
  FunctionInfo& function_for(int added_id, const TensorList& inputs, bool& is_new);
  std::deque<FunctionInfo>& functions() { return functions_; }

 private:
  std::deque<AddedFunction> added_;  // stable addresses
  std::deque<FunctionInfo> functions_;
};

// True unless the function lists capture_sizes and this call's sizes of its dynamic dims are
// not among them. Throws if a dynamic dim does not exist in the call's inputs.
bool size_is_captured(const WrappedFunction& function, const TensorList& inputs);

}  // namespace grove::graphs
