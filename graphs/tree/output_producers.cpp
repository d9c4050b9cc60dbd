// The op observer behind ProducerScope. See Note [Which op made an output] in
// output_producers.h.
#include "graphs/tree/output_producers.h"

#include "ops/dispatch.h"

namespace grove::graphs {
namespace {

thread_local ProducerScope* innermost_scope = nullptr;

class ProducerObserver final : public ops::OpObserver {
 public:
  void on_op(const ops::OpCall& call, const ops::OpOutputs& outputs) override {
    ProducerScope* scope = innermost_scope;
    if (scope == nullptr) return;
    for (const Tensor& output : outputs.span()) {
      if (output.defined()) scope->note(output.storage()->unchecked_data(), call.kind);
    }
  }
};

// Stateless: what it notes goes to the thread's innermost scope.
ProducerObserver observer;

}  // namespace

ProducerScope::ProducerScope() : previous_(innermost_scope) {
  if (previous_ == nullptr) ops::add_op_observer(&observer);
  innermost_scope = this;
}

ProducerScope::~ProducerScope() {
  innermost_scope = previous_;
  if (previous_ == nullptr) ops::remove_op_observer(&observer);
}

std::string ProducerScope::producer_of(const void* storage_data) const {
  auto found = producers_.find(storage_data);
  return found == producers_.end() ? std::string() : std::string(ops::op_name(found->second));
}

}  // namespace grove::graphs
