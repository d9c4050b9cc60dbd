// Which op made each output of a warm-up or recording, so that the error of a stale output can
// name it (besides the function and the output index).
//
// Note [Which op made an output]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// While a ProducerScope is active on a thread (a tree manager's warm-up or recording), one
// OpObserver (Note [Op observers] in ops/dispatch.h) is registered on that thread: it notes, per
// output storage, the op that wrote it last (an in-place op counts as writing its input 0).
// The outermost scope of a thread registers it and removes it when it ends; inner scopes (a
// managed function called inside another's warm-up) only become the one that notes. Observers
// are per thread, so ops of other threads never reach a scope. Kernels written without
// dispatch() are not seen; their outputs have no producer.
#pragma once

#include <string>
#include <unordered_map>

#include "ops/op_kind.h"

namespace grove::graphs {

class ProducerScope {
 public:
  ProducerScope();
  ~ProducerScope();
  ProducerScope(const ProducerScope&) = delete;
  ProducerScope& operator=(const ProducerScope&) = delete;

  // The op that last wrote the storage starting at `storage_data` while this scope was the
  // thread's innermost, or "" if none did.
  std::string producer_of(const void* storage_data) const;
  void note(const void* storage_data, ops::OpKind kind) { producers_[storage_data] = kind; }

 private:
  std::unordered_map<const void*, ops::OpKind> producers_;
  ProducerScope* previous_;
};

}  // namespace grove::graphs
