// The recorder: how the backward graph gets built while ops run.
//
// Note [Recording the backward graph]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Autograd watches two places, and nothing else records anything. In both it is the observer
// in autograd's slot, which sees every thread (tracers register per thread instead):
//   - dispatch, through an OpObserver (Note [Op observers] in ops/dispatch.h): after an op ran,
//     if grad mode is on and an input requires gradients, on_op() makes an OpNode from the
//     op's derivative rule, with one edge per input (gradient_edge), saves what the rule asks
//     for, and makes output 0 that node's output (the other outputs of multi-output ops are
//     indices, masks or statistics and never require gradients);
//   - core's views, copies and writes, through a CoreObserver (Note [Core observers] in
//     core/core_observer.h), which core calls only when a tensor involved requires gradients:
//     a DerivedNode per view or copy, and a refusal of Tensor::copy_ and Tensor::fill_ with
//     grad mode on (they are not recorded; the ops::copy_ and ops::fill_ ops are).
// In-place ops are recorded like other ops, with the target as both input 0 and output 0: the
// new node's edge 0 is the target's old history, and the target's history becomes the node
// ("rebasing"). before_in_place() runs first and refuses what autograd cannot follow:
//   - writing into a leaf that requires gradients (its gradient would mean nothing; optimizers
//     update parameters inside a NoGradGuard);
//   - writing into a view of a tensor with history (the base would not see the new history);
//   - writing a value that requires gradients into a tensor whose memory other tensors share
//     (they would silently miss the history);
//   - writing, with grad mode on, into a view that was taken inside a NoGradGuard from a
//     tensor that requires gradients (the base would change without its history knowing).
// It also keeps copies of the values the write destroys but the rule needs: the target's old
// values (keeps_old_self), and any other input that shares the target's memory (mul_(y, y)
// must save y as it was, not as the write left it).
// A view's history says "these elements of the base as it was"; if the base is then changed
// in place, the view's values change but its history does not, so using the view afterwards
// (as an op input or the source of another view) is refused: take the view again after the
// change. (PyTorch instead rebuilds the view's history; grove refuses rather than guess.)
//
// Registration: a static object below fills both of autograd's slots when the program starts.
// Static libraries drop object files nothing refers to, so autograd/CMakeLists.txt makes every
// program that links grove_autograd refer to `grove_autograd_installed` (-Wl,--undefined).
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/autograd_meta.h"
#include "autograd/derived_node.h"
#include "autograd/grad_mode.h"
#include "autograd/op_node.h"
#include "core/core_observer.h"
#include "core/error.h"
#include "ops/op_table.h"

namespace grove::autograd {
namespace {

bool any_requires_grad(std::span<const Tensor> inputs) {
  for (const Tensor& input : inputs) {
    if (input.requires_grad()) return true;
  }
  return false;
}

// Inputs of an in-place op as they were before the write, where the write would change what
// the rule saves (see the Note). Indexed by input; undefined entries are saved as they are.
thread_local std::vector<Tensor> old_inputs;

class Recorder final : public ops::OpObserver, public CoreObserver {
 public:
  void before_in_place(const ops::OpCall& call) override {
    old_inputs.clear();
    if (!GradMode::is_enabled()) return;
    const Tensor& target = call.input(0);
    const std::string_view op = ops::op_name(call.kind);
    const AutogradMeta* target_meta = meta_of(target);
    GROVE_CHECK(target_meta == nullptr || !target_meta->made_without_grad, op, ": the target (",
                describe(target),
                ") is a view, made inside a NoGradGuard, of a tensor that requires gradients; "
                "changing it in place with grad mode on would change the base without its "
                "gradient history knowing. Do the change inside a NoGradGuard too, or take the "
                "view with grad mode on");
    if (!any_requires_grad(call.inputs)) return;
    GROVE_CHECK(ops::in_place_writes(call.kind, call.attributes) == 1, op,
                ": an update of several parameters in one call has no derivative and cannot "
                "run with grad mode on while an input requires gradients; call it inside an "
                "autograd::NoGradGuard, as optimizers do");
    GROVE_CHECK(!(target.requires_grad() && target.is_leaf()), op,
                ": a leaf tensor that requires gradients (", describe(target),
                ") cannot be modified in place while grad mode is on: its gradient would no "
                "longer describe its values. Update parameters inside an "
                "autograd::NoGradGuard (as optimizers do), or clone() it first");
    // Views among the inputs are checked now, before the write changes their versions.
    for (const Tensor& input : call.inputs) {
      if (input.requires_grad()) check_view_is_current(input, op);
    }
    const AutogradMeta* meta = meta_of(target);
    GROVE_CHECK(meta == nullptr || !meta->is_view, op, ": the target (", describe(target),
                ") is a view of a tensor with gradient history; autograd cannot follow an "
                "in-place change through a view. clone() the view first, or build the result "
                "out of place");
    GROVE_CHECK(target.requires_grad() || target.storage().use_count() == 1, op,
                ": writing a value that requires gradients into a tensor (", describe(target),
                ") whose memory other tensors share (views of it, or copies of it that earlier "
                "ops saved for backward): they would not see the gradient history. Build the "
                "result out of place (cat, stack, where), or write into a fresh tensor");
    const DerivativeRule& rule = derivative_rule(call.kind);
    if (call.attributes.has_scalar) return;  // scalar variants save no inputs
    old_inputs.resize(call.inputs.size());
    if (rule.keeps_old_self && any_requires_grad(call.inputs.subspan(1))) {
      old_inputs[0] = target.detach().clone();
    }
    for (std::size_t i = 1; i < call.inputs.size(); ++i) {
      if (rule.saves_input(i) && call.input(i).storage() == target.storage()) {
        old_inputs[i] = call.input(i).detach().clone();
      }
    }
  }

  void on_op(const ops::OpCall& call, const ops::OpOutputs& outputs) override {
    if (!GradMode::is_enabled() || !any_requires_grad(call.inputs)) return;
    const DerivativeRule& rule = derivative_rule(call.kind);
    if (rule.differentiability == Differentiability::Never) return;
    GROVE_CHECK(rule.differentiability == Differentiability::Rule, ops::op_name(call.kind),
                ": an input requires gradients, but this op has no derivative (grove does not "
                "differentiate its backward ops); call it inside an autograd::NoGradGuard");
    const bool in_place = !outputs.span().empty() && call.inputs.size() > 0 &&
                          outputs[0].impl() == call.input(0).impl();

    std::vector<Edge> edges;
    std::vector<TensorMeta> metas;
    edges.reserve(call.inputs.size());
    metas.reserve(call.inputs.size());
    for (const Tensor& input : call.inputs) {
      // (In-place ops checked their inputs in before_in_place, before the write.)
      if (input.requires_grad() && !in_place) check_view_is_current(input, ops::op_name(call.kind));
      edges.push_back(input.requires_grad() ? gradient_edge(input) : Edge{});
      metas.push_back(TensorMeta::of(input));
    }
    auto node =
        IntrusivePtr<OpNode>::make(rule, call.attributes, std::move(edges), std::move(metas));
    // Scalar variants (mul(x, 2), mul_(x, 2), lerp_(x, end, 0.5)) need no saved inputs; others
    // save what the wanted gradients need.
    const bool save_inputs = !call.attributes.has_scalar;
    std::uint32_t wanted = 0;
    for (std::size_t i = 0; i < call.inputs.size() && i < 32; ++i) {
      if (call.input(i).requires_grad()) wanted |= 1U << i;
    }
    for (std::size_t i = 0; i < call.inputs.size() && save_inputs; ++i) {
      if (!rule.must_save_input(i, wanted)) continue;
      const Tensor* old =
          in_place && i < old_inputs.size() && old_inputs[i].defined() ? &old_inputs[i] : nullptr;
      if (old != nullptr) {
        node->save_input(i, *old);
      } else if (!(in_place && i == 0)) {  // the target itself is saved only as it was
        node->save_input(i, call.input(i));
      }
    }
    old_inputs.clear();
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      if (rule.saves_output(i)) node->save_output(i, outputs[i]);
    }
    if (in_place) move_retain_hook(outputs[0], *node);
    set_history(outputs[0], std::move(node), 0);
  }

  // retain_grad() on the target of an in-place op means the gradient of its new value, so the
  // hook moves from the old history to the new node.
  static void move_retain_hook(const Tensor& target, Node& node) {
    const AutogradMeta* meta = meta_of(target);
    if (meta == nullptr || !meta->retains_grad || !meta->grad_fn) return;
    if (GradHook hook = meta->grad_fn->take_retain_hook(meta->output_nr)) {
      node.set_retain_hook(0, std::move(hook));
    }
  }

  void on_derived(const Tensor& source, const Tensor& result, DerivedKind kind,
                  IntArrayRef args) override {
    if (!GradMode::is_enabled()) {
      // No history, but remember where the view came from: see before_in_place.
      if (kind != DerivedKind::Copy) ensure_meta(result).made_without_grad = true;
      return;
    }
    GROVE_CHECK(kind != DerivedKind::AsStrided,
                "as_strided: autograd does not differentiate through as_strided views of a "
                "tensor that requires gradients (",
                describe(source), "); use view, slice, select, expand or permute");
    check_view_is_current(source, "view");
    auto node =
        IntrusivePtr<DerivedNode>::make(kind, args, TensorMeta::of(source), gradient_edge(source));
    set_history(result, std::move(node), 0);
    if (kind != DerivedKind::Copy) {
      AutogradMeta& meta = ensure_meta(result);
      meta.is_view = true;
      meta.view_version = result.version();
    }
  }

  void before_write(const CoreWrite& write) override {
    if (!GradMode::is_enabled()) return;
    GROVE_CHECK(
        false, "Tensor::", write.name(), ": writing into ", describe(write.target),
        write.source != nullptr ? std::string(" from ") + describe(*write.source) : std::string(),
        " while grad mode is on and a tensor involved requires gradients; core's "
        "copies are not recorded. Use ops::",
        write.name(), "(...), which autograd records, or do it inside an autograd::NoGradGuard");
  }
};

Recorder recorder;

bool install() {
  ops::set_autograd_op_observer(&recorder);
  set_autograd_core_observer(&recorder);
  return true;
}

}  // namespace
}  // namespace grove::autograd

// Referred to by every program that links grove_autograd (see the Note above); its
// initialisation installs the recorder.
extern "C" {
extern const bool grove_autograd_installed;
const bool grove_autograd_installed = grove::autograd::install();
}
