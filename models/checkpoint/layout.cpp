// check_same_layout (layout.h): index both sets by name, then collect the differences into one
// message.
//
// Invariant: the message lists differences in the order of `expected` (missing, mis-shaped) and
// of `found` (unexpected), so it reads like the state dicts it compares.
#include "models/checkpoint/layout.h"

#include <cstddef>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/error.h"

namespace grove::checkpoint {
namespace {

constexpr std::size_t kListedAtMost = 20;

// "a, b, c" or "a, b, ... and 7 more".
std::string join_listed(const std::vector<std::string>& items) {
  std::ostringstream out;
  for (std::size_t i = 0; i < items.size() && i < kListedAtMost; ++i) {
    out << (i ? ", " : "") << items[i];
  }
  if (items.size() > kListedAtMost) out << ", ... and " << items.size() - kListedAtMost << " more";
  return out.str();
}

std::string describe(const Tensor& tensor) {
  if (!tensor.defined()) return "an undefined tensor";
  std::ostringstream out;
  out << tensor.sizes() << " " << tensor.dtype();
  return out.str();
}

// Name -> tensor; names seen more than once go to `duplicates` (each once).
std::unordered_map<std::string, const Tensor*> index_by_name(const NamedTensors& tensors,
                                                             std::vector<std::string>& duplicates) {
  std::unordered_map<std::string, const Tensor*> index;
  std::unordered_set<std::string> reported;
  for (const auto& [name, tensor] : tensors) {
    if (!index.emplace(name, &tensor).second && reported.insert(name).second) {
      duplicates.push_back("'" + name + "'");
    }
  }
  return index;
}

}  // namespace

void check_same_layout(const NamedTensors& expected, const NamedTensors& found,
                       std::string_view what) {
  std::vector<std::string> expected_twice;
  std::vector<std::string> found_twice;
  const auto expected_index = index_by_name(expected, expected_twice);
  const auto found_index = index_by_name(found, found_twice);

  std::vector<std::string> missing;
  std::vector<std::string> mis_shaped;
  std::unordered_set<std::string> visited;
  for (const auto& [name, tensor] : expected) {
    if (!visited.insert(name).second) continue;
    const auto match = found_index.find(name);
    if (match == found_index.end()) {
      missing.push_back("'" + name + "'");
      continue;
    }
    const Tensor& other = *match->second;
    const bool same = tensor.defined() && other.defined() && tensor.sizes() == other.sizes() &&
                      tensor.dtype() == other.dtype();
    if (!same) {
      mis_shaped.push_back("'" + name + "' (expected " + describe(tensor) + ", found " +
                           describe(other) + ")");
    }
  }
  std::vector<std::string> unexpected;
  visited.clear();
  for (const auto& [name, tensor] : found) {
    if (visited.insert(name).second && !expected_index.contains(name)) {
      unexpected.push_back("'" + name + "'");
    }
  }

  if (missing.empty() && unexpected.empty() && mis_shaped.empty() && expected_twice.empty() &&
      found_twice.empty()) {
    return;
  }
  std::ostringstream message;
  message << what << ": expected " << expected.size()
          << " tensors with the names, shapes and dtypes given, but the " << found.size()
          << " found differ:";
  if (!missing.empty()) {
    message << "\n  missing (" << missing.size() << "): " << join_listed(missing);
  }
  if (!unexpected.empty()) {
    message << "\n  unexpected (" << unexpected.size() << "): " << join_listed(unexpected);
  }
  if (!mis_shaped.empty()) {
    message << "\n  mis-shaped (" << mis_shaped.size() << "): " << join_listed(mis_shaped);
  }
  if (!expected_twice.empty()) {
    message << "\n  named twice in the expected set: " << join_listed(expected_twice);
  }
  if (!found_twice.empty()) {
    message << "\n  named twice in the found set: " << join_listed(found_twice);
  }
  message << "\nhint: was the file written for another model or configuration (sizes, layers)?";
  GROVE_THROW(Error, message.str());
}

}  // namespace grove::checkpoint
