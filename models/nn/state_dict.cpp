// nn::Module::state_dict and load_state_dict: the module's trained state by full name.
//
// Not a file format: checkpoints (safetensors) are written and read elsewhere from these pairs.
// Invariants: state_dict lists parameters then persistent buffers, each by the name
// named_parameters / named_buffers give it; load_state_dict validates every entry before it
// copies any, so a failed load leaves the module exactly as it was.
#include <map>
#include <sstream>

#include "autograd/grad_mode.h"
#include "core/error.h"
#include "models/nn/module.h"

namespace grove::nn {

NamedTensors Module::state_dict() const {
  NamedTensors out;
  collect_parameters("", out);
  collect_buffers("", /*persistent_only=*/true, out);
  for (auto& entry : out) entry.second = entry.second.detach();
  return out;
}

namespace {

// "a, b, c" from names.
std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

void Module::load_state_dict(const NamedTensors& state, bool strict) {
  // What the module expects, by full name, in its own order.
  NamedTensors expected;
  collect_parameters("", expected);
  collect_buffers("", /*persistent_only=*/true, expected);
  std::map<std::string, std::size_t> expected_index;
  for (std::size_t i = 0; i < expected.size(); ++i) expected_index[expected[i].first] = i;

  std::vector<const Tensor*> source(expected.size(), nullptr);
  std::vector<std::string> unexpected, duplicated, mismatched;
  for (const auto& [name, value] : state) {
    const auto found = expected_index.find(name);
    if (found == expected_index.end()) {
      unexpected.push_back(name);
      continue;
    }
    const Tensor& target = expected[found->second].second;
    if (source[found->second] != nullptr) {
      duplicated.push_back(name);
      continue;
    }
    source[found->second] = &value;
    std::ostringstream problem;
    if (!value.defined()) {
      problem << name << ": expected a tensor of shape " << target.sizes() << ", found an "
              << "undefined tensor";
    } else if (value.sizes() != target.sizes()) {
      problem << name << ": expected shape " << target.sizes() << ", found shape " << value.sizes();
    } else if (value.dtype() != target.dtype()) {
      problem << name << ": expected dtype " << target.dtype() << ", found dtype " << value.dtype();
    }
    if (!problem.str().empty()) mismatched.push_back(problem.str());
  }
  std::vector<std::string> missing;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (source[i] == nullptr) missing.push_back(expected[i].first);
  }

  const bool names_fail = strict && (!missing.empty() || !unexpected.empty());
  if (names_fail || !mismatched.empty() || !duplicated.empty()) {
    std::string message = "load_state_dict: the state does not fit this " + type_name_ + ":";
    if (strict && !missing.empty()) message += "\n  missing entries: " + join(missing);
    if (strict && !unexpected.empty()) message += "\n  unexpected entries: " + join(unexpected);
    if (!duplicated.empty()) message += "\n  entries given twice: " + join(duplicated);
    for (const std::string& problem : mismatched)
      message += "\n  mis-shaped or mistyped " + problem;
    message +=
        "\nNothing was loaded. Hint: was the state saved from another model or configuration? "
        "Compare with state_dict()'s names and shapes; strict = false skips missing and "
        "unexpected entries (never mismatched ones); convert dtypes with to(dtype) first.";
    GROVE_CHECK(false, message);
  }

  const autograd::NoGradGuard no_grad;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (source[i] != nullptr) expected[i].second.copy_(*source[i]);  // any device to any
  }
}

}  // namespace grove::nn
