// The op table, gathered from the families' entry lists (see ops/op_table.h).
#include "ops/op_table.h"

#include <algorithm>
#include <array>
#include <initializer_list>

#include "core/error.h"

namespace grove::ops {
namespace {

constexpr auto kNumOps = static_cast<std::size_t>(OpKind::Count);

// Optional inputs come last (a call leaves out a suffix), and a repeated input exists.
void check_inputs(const OpEntry& entry) {
  bool seen_optional = false;
  for (const InputSpec& input : entry.inputs) {
    GROVE_INTERNAL_ASSERT(input.name != nullptr, "an input of ", entry.kind, " has no name");
    GROVE_INTERNAL_ASSERT(input.optional || !seen_optional, entry.kind, ": the required input ",
                          input.name, " follows an optional one");
    seen_optional = seen_optional || input.optional;
  }
  GROVE_INTERNAL_ASSERT(!entry.repeats_last_input || !entry.inputs.empty(), entry.kind,
                        " repeats its last input but lists none");
}

struct Table {
  std::array<const OpEntry*, kNumOps> entries{};

  Table() {
    for (const std::span<const OpEntry> family :
         {elementwise_entries(), inplace_entries(), optim_entries(), reduce_entries(),
          linalg_entries(), softmax_entries(), layer_norm_entries(), rms_norm_entries(),
          attention_entries(), embedding_entries(), conv_entries(), pool_entries(), shape_entries(),
          random_entries(), collective_entries()}) {
      for (const OpEntry& entry : family) {
        const auto index = static_cast<std::size_t>(entry.kind);
        GROVE_INTERNAL_ASSERT(index < kNumOps, "an op entry has the kind number ", index,
                              ", past the last OpKind");
        GROVE_INTERNAL_ASSERT(entries[index] == nullptr, "two entries in the op table for ",
                              entry.kind);
        GROVE_INTERNAL_ASSERT(entry.infer != nullptr && entry.cpu != nullptr, "the entry for ",
                              entry.kind, " lacks its infer function or its CPU kernel");
        check_inputs(entry);
        entries[index] = &entry;
      }
    }
  }
};

}  // namespace

const OpEntry& op_entry(OpKind kind) {
  static const Table table;
  const auto index = static_cast<std::size_t>(kind);
  GROVE_INTERNAL_ASSERT(index < kNumOps && table.entries[index] != nullptr, "op ", kind,
                        " has no entry in the op table; add it to its family's list "
                        "(<family>_entries() in ops/<family>.cpp)");
  return *table.entries[index];
}

InputCount OpEntry::count_inputs(const OpAttributes& attributes) const {
  if (input_count != nullptr) return input_count(attributes);
  std::size_t required = 0;
  for (const InputSpec& spec : inputs) required += spec.optional ? 0 : 1;
  return {required, repeats_last_input ? InputCount::kAny : inputs.size()};
}

std::size_t OpEntry::writes(const OpAttributes& attributes) const {
  return in_place_writes != nullptr ? in_place_writes(attributes) : 1;
}

std::string OpEntry::describe_attributes(const OpAttributes& attributes) const {
  return describe != nullptr ? describe(attributes) : std::string();
}

const InputSpec& OpEntry::input(std::size_t i) const {
  GROVE_INTERNAL_ASSERT(!inputs.empty(), kind, " takes no inputs");
  GROVE_INTERNAL_ASSERT(i < inputs.size() || repeats_last_input, kind, " lists ", inputs.size(),
                        " inputs; there is no input ", i);
  return inputs[std::min(i, inputs.size() - 1)];
}

}  // namespace grove::ops
