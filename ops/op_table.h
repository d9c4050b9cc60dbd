// The op table: every op's OpEntry (its inputs, argument check, kernels, attribute printer),
// found by its kind.
//
// The user functions (ops::add, ops::conv2d, ...) hold their own entry and never look it up;
// the table is for code that has only a kind and attributes in hand, such as an interpreter that
// replays a recorded node: dispatch(op_entry(node.kind), inputs, node.attributes) runs the op
// exactly as its user function would (the same checks, kernels and observers), and
// describe_attributes(node.kind, node.attributes) prints them.
//
// It is gathered, the first time it is used, from one list per op family (the functions below,
// each written at the end of ops/<family>.cpp), the way autograd/derivatives.cpp gathers the
// derivative rules: no static registration, and one list to read per family. An op missing from
// every list, or present in two, is a bug in grove (an internal assertion; a test checks that
// every OpKind has exactly one entry).
//
// Thread safety: the table is built once (a function-local static) and read-only after that.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "ops/dispatch.h"

namespace grove::ops {

// The entry of `kind`. Lives as long as the program.
const OpEntry& op_entry(OpKind kind);

// The facts of a call of `kind`, for code that holds a kind rather than an entry (the IR, the
// autograd recorder); each is the entry's own (OpEntry in ops/dispatch.h).
inline InputCount input_count(OpKind kind, const OpAttributes& attributes) {
  return op_entry(kind).count_inputs(attributes);
}
inline std::size_t in_place_writes(OpKind kind, const OpAttributes& attributes) {
  return op_entry(kind).writes(attributes);
}
// "name=value" pairs separated by spaces, in the order of the attribute struct's fields
// (ops/attributes.h); empty for ops without attributes (matmul).
inline std::string describe_attributes(OpKind kind, const OpAttributes& attributes) {
  return op_entry(kind).describe_attributes(attributes);
}
inline std::string describe_attributes(const OpCall& call) {
  return describe_attributes(call.kind, call.attributes);
}

// The families' entry lists (ops/<family>.cpp), gathered by op_entry(). The order within a list
// is the order of GROVE_OPS in ops/op_kind.h.
std::span<const OpEntry> elementwise_entries();
std::span<const OpEntry> inplace_entries();
std::span<const OpEntry> optim_entries();
std::span<const OpEntry> reduce_entries();
std::span<const OpEntry> linalg_entries();
std::span<const OpEntry> softmax_entries();  // softmax, log_softmax, the losses and gradients
std::span<const OpEntry> layer_norm_entries();
std::span<const OpEntry> rms_norm_entries();
std::span<const OpEntry> attention_entries();
std::span<const OpEntry> embedding_entries();
std::span<const OpEntry> conv_entries();
std::span<const OpEntry> pool_entries();
std::span<const OpEntry> shape_entries();
std::span<const OpEntry> random_entries();
std::span<const OpEntry> collective_entries();

}  // namespace grove::ops
