// The op table: every op's OpEntry (argument check, CPU kernel, CUDA kernel), found by its kind.
//
// The user functions (ops::add, ops::conv2d, ...) hold their own entry and never look it up;
// the table is for code that has only a kind and attributes in hand, such as an interpreter that
// replays a recorded node: dispatch(op_entry(node.kind), inputs, node.attributes) runs the op
// exactly as its user function would (the same checks, kernels and observers), and
// describe_attributes(node.kind, node.attributes) (ops/attributes.h) prints them.
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
#include <limits>
#include <span>

#include "ops/dispatch.h"

namespace grove::ops {

// The entry of `kind`. Lives as long as the program.
const OpEntry& op_entry(OpKind kind);

// How many tensor inputs a call takes: min to max, both included.
struct InputCount {
  static constexpr std::size_t kAny = std::numeric_limits<std::size_t>::max();
  std::size_t min = 0;
  std::size_t max = 0;
  static constexpr InputCount exactly(std::size_t count) { return {count, count}; }
};

// The number of inputs a call of `kind` with these attributes takes (a binary op with a scalar
// operand takes one tensor). dispatch() checks it first, so that no `infer` reads an input that
// is not there (ops/input_counts.cpp).
InputCount input_count(OpKind kind, const OpAttributes& attributes);

// How many leading inputs an in-place op (OutputSpecs::in_place) writes: 1, except sgd_ and
// adamw_ over n parameters, which write inputs [0, n), the parameters (their states, written
// too, are optimizer-internal; ops/optim.h). dispatch() checks each of them as it checks input
// 0 and bumps their versions; a trace records them as written (graphs/ir/graph.h).
std::size_t in_place_writes(OpKind kind, const OpAttributes& attributes);

// The families' entry lists (ops/<family>.cpp), gathered by op_entry(). The order within a list
// is the order of GROVE_OPS in ops/op_kind.h.
std::span<const OpEntry> elementwise_entries();
std::span<const OpEntry> inplace_entries();
std::span<const OpEntry> optim_entries();
std::span<const OpEntry> reduce_entries();
std::span<const OpEntry> linalg_entries();
std::span<const OpEntry> softmax_entries();  // softmax, log_softmax, the losses and gradients
std::span<const OpEntry> layer_norm_entries();
std::span<const OpEntry> attention_entries();
std::span<const OpEntry> embedding_entries();
std::span<const OpEntry> conv_entries();
std::span<const OpEntry> pool_entries();
std::span<const OpEntry> shape_entries();
std::span<const OpEntry> random_entries();
std::span<const OpEntry> collective_entries();

}  // namespace grove::ops
