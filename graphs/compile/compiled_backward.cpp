// CompiledBackward: the autograd node of a compiled call. See compiled_backward.h.
#include "graphs/compile/compiled_backward.h"

#include "autograd/autograd_meta.h"
#include "graphs/compile/traced_function.h"

namespace grove::graphs {
namespace {

class CompiledBackward final : public autograd::Node {
 public:
  CompiledBackward(std::shared_ptr<TracedFunction> traced, std::vector<Tensor> saved,
                   std::vector<autograd::TensorMeta> output_metas,
                   std::vector<autograd::Edge> edges, std::string name,
                   const std::source_location& where, BackwardRoute route)
      : Node(static_cast<std::uint32_t>(output_metas.size()), std::move(edges)),
        traced_(std::move(traced)),
        where_(where),
        route_(route),
        saved_(std::move(saved)),
        output_metas_(std::move(output_metas)),
        name_(std::move(name)) {
    for (const Tensor& tensor : saved_) saved_versions_.push_back(tensor.version());
  }

  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override {
    GROVE_CHECK(!released_, name(),
                ": the backward of this call already ran and freed what it saved; pass "
                "retain_graph=true to the first backward to run it twice");
    TensorList inputs = saved_;
    for (std::size_t k = 0; k < saved_.size(); ++k) {
      GROVE_CHECK(saved_[k].version() == saved_versions_[k], name(), ": saved tensor ", k, " (",
                  autograd::describe(saved_[k]),
                  ") was modified in place after the compiled call; its backward needs the "
                  "values it had then. Clone it before changing it");
    }
    for (std::size_t j = 0; j < output_metas_.size(); ++j) {
      const autograd::TensorMeta& meta = output_metas_[j];
      inputs.push_back(grad_outputs[j].defined()
                           ? grad_outputs[j]
                           : zeros(meta.sizes, TensorOptions(meta.dtype).device(meta.device)));
    }
    const ExplainScope explain_scope(traced_->explain_setting());  // as the forward's call
    if (route_ == BackwardRoute::Interpreted && explaining()) {
      explain(str("backward of '", traced_->name(),
                  "' runs its graph interpreted, on the values of the call that traced"));
    }
    return traced_->run_backward(inputs, where_, route_);
  }

  std::string name() const override { return name_; }
  void release_saved() override {
    saved_.clear();
    released_ = true;
  }

 protected:
  void release_resources() override {
    saved_.clear();
    traced_.reset();
    Node::release_resources();
  }

 private:
  std::shared_ptr<TracedFunction> traced_;
  std::source_location where_;  // of the compiled call whose backward this is
  BackwardRoute route_;
  std::vector<Tensor> saved_;
  std::vector<std::uint64_t> saved_versions_;
  std::vector<autograd::TensorMeta> output_metas_;
  std::string name_;
  bool released_ = false;
};

}  // namespace

void attach_compiled_backward(std::shared_ptr<TracedFunction> traced, std::vector<Tensor>& outputs,
                              const std::vector<std::size_t>& differentiable,
                              std::vector<Tensor> saved, std::vector<autograd::Edge> edges,
                              std::string name, const std::source_location& where,
                              BackwardRoute route) {
  std::vector<autograd::TensorMeta> metas;
  for (const std::size_t i : differentiable) metas.push_back(autograd::TensorMeta::of(outputs[i]));
  auto node =
      IntrusivePtr<CompiledBackward>::make(std::move(traced), std::move(saved), std::move(metas),
                                           std::move(edges), std::move(name), where, route);
  for (std::size_t j = 0; j < differentiable.size(); ++j) {
    autograd::set_history(outputs[differentiable[j]], node, static_cast<std::uint32_t>(j));
  }
}

}  // namespace grove::graphs
