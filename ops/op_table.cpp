// The op table, gathered from the families' entry lists (see ops/op_table.h).
#include "ops/op_table.h"

#include <array>
#include <initializer_list>

#include "core/error.h"

namespace grove::ops {
namespace {

constexpr auto kNumOps = static_cast<std::size_t>(OpKind::Count);

struct Table {
  std::array<const OpEntry*, kNumOps> entries{};

  Table() {
    for (const std::span<const OpEntry> family :
         {elementwise_entries(), inplace_entries(), optim_entries(), reduce_entries(),
          linalg_entries(), softmax_entries(), layer_norm_entries(), attention_entries(),
          embedding_entries(),
          conv_entries(), pool_entries(), shape_entries(), random_entries(),
          collective_entries()}) {
      for (const OpEntry& entry : family) {
        const auto index = static_cast<std::size_t>(entry.kind);
        GROVE_INTERNAL_ASSERT(index < kNumOps, "an op entry has the kind number ", index,
                              ", past the last OpKind");
        GROVE_INTERNAL_ASSERT(entries[index] == nullptr, "two entries in the op table for ",
                              entry.kind);
        GROVE_INTERNAL_ASSERT(entry.infer != nullptr && entry.cpu != nullptr, "the entry for ",
                              entry.kind, " lacks its infer function or its CPU kernel");
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

}  // namespace grove::ops
