// The per-signature function cache of a tree manager, and capture sizes. See function_cache.h.
#include "graphs/tree/function_cache.h"

#include <algorithm>

namespace grove::graphs {
namespace {

// Walks the parts of an input signature: per input, defined-ness, dtype, device, sizes, strides.
template <typename Visit>
void for_each_signature_part(const TensorList& inputs, Visit visit) {
  visit(static_cast<std::int64_t>(inputs.size()));
  for (const Tensor& input : inputs) {
    if (!input.defined()) {
      visit(-1);
      continue;
    }
    visit(static_cast<std::int64_t>(input.dtype()));
    visit(static_cast<std::int64_t>(input.device().type) * 256 + input.device().index);
    visit(input.dim());
    for (std::int64_t size : input.sizes()) visit(size);
    for (std::int64_t stride : input.strides()) visit(stride);
  }
}

std::size_t signature_hash(const TensorList& inputs) {
  std::size_t hash = 0xcbf29ce484222325ULL;
  for_each_signature_part(inputs, [&](std::int64_t part) {
    hash = (hash ^ static_cast<std::size_t>(part)) * 0x100000001b3ULL;
  });
  return hash;
}

bool signature_matches(const std::vector<std::int64_t>& encoded, const TensorList& inputs) {
  std::size_t position = 0;
  bool equal = true;
  for_each_signature_part(inputs, [&](std::int64_t part) {
    equal = equal && position < encoded.size() && encoded[position] == part;
    ++position;
  });
  return equal && position == encoded.size();
}

void check_indices(const WrappedFunction& wrapped, const TensorList& inputs) {
  for (const auto* list : {&wrapped.static_input_indices, &wrapped.mutated_input_indices}) {
    for (int index : *list) {
      GROVE_CHECK(
          index >= 0 && index < static_cast<int>(inputs.size()), "graphed function '", wrapped.name,
          "': input index ", index, " in ",
          list == &wrapped.static_input_indices ? "static_input_indices" : "mutated_input_indices",
          " is out of range for a call with ", inputs.size(), " inputs");
    }
  }
}

}  // namespace

int FunctionCache::add(WrappedFunction function) {
  GROVE_CHECK(static_cast<bool>(function.callable), "add_function: the function '", function.name,
              "' has no callable");
  for (const std::vector<std::int64_t>& sizes : function.capture_sizes) {
    GROVE_CHECK(sizes.size() == function.dynamic_dims.size(), "add_function: '", function.name,
                "': an entry of capture_sizes has ", sizes.size(), " sizes, but the function has ",
                function.dynamic_dims.size(),
                " dynamic_dims; give one size per dynamic dim (dynamic_dims = {{input, dim}} "
                "names the dimension whose size changes)");
  }
  AddedFunction& added = added_.emplace_back();
  added.wrapped = std::move(function);
  return static_cast<int>(added_.size()) - 1;
}

FunctionInfo& FunctionCache::function_for(int added_id, const TensorList& inputs, bool& is_new) {
  AddedFunction& added = this->added(added_id);
  const std::size_t hash = signature_hash(inputs);
  is_new = false;
  for (const AddedFunction::Signature& signature : added.signatures) {
    if (signature.hash == hash && signature_matches(signature.encoded, inputs)) {
      return functions_[static_cast<std::size_t>(signature.function_id)];
    }
  }
  check_indices(added.wrapped, inputs);
  FunctionInfo& function = functions_.emplace_back();
  function.id = static_cast<int>(functions_.size()) - 1;
  function.added_id = added_id;
  function.wrapped = &added.wrapped;
  function.signature_index = static_cast<int>(added.signatures.size());
  function.mutated_inputs = added.wrapped.mutated_input_indices;
  std::vector<std::int64_t> encoded;
  for_each_signature_part(inputs, [&](std::int64_t part) { encoded.push_back(part); });
  added.signatures.push_back({hash, std::move(encoded), function.id});
  is_new = true;
  return function;
}

bool size_is_captured(const WrappedFunction& function, const TensorList& inputs) {
  if (function.capture_sizes.empty()) return true;
  std::vector<std::int64_t> sizes;
  for (const DynamicDim& dynamic : function.dynamic_dims) {
    const bool exists = dynamic.input >= 0 && dynamic.input < static_cast<int>(inputs.size()) &&
                        inputs[static_cast<std::size_t>(dynamic.input)].defined() &&
                        dynamic.dim >= 0 &&
                        dynamic.dim < inputs[static_cast<std::size_t>(dynamic.input)].dim();
    GROVE_CHECK(exists, "graphed function '", function.name, "': dynamic dim ", dynamic.dim,
                " of input ", dynamic.input,
                " does not exist in this call (check dynamic_dims; the call has ", inputs.size(),
                " inputs)");
    sizes.push_back(inputs[static_cast<std::size_t>(dynamic.input)].size(dynamic.dim));
  }
  return std::find(function.capture_sizes.begin(), function.capture_sizes.end(), sizes) !=
         function.capture_sizes.end();
}

}  // namespace grove::graphs
