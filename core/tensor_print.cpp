// Printing tensors: nested brackets like PyTorch, summarised with "..." when large.
#include <cmath>
#include <cstdio>
#include <string>

#include "core/tensor.h"

namespace grove {

std::ostream& operator<<(std::ostream& out, IntArrayRef values) {
  out << '[';
  for (std::size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  return out << ']';
}

namespace {

constexpr std::int64_t kSummariseAbove = 1000;  // elements
constexpr std::int64_t kEdgeItems = 3;          // shown at each end of a summarised dim

// The elements in row-major order. Integer and bool tensors are read as int64 (not double), so
// that values beyond 2^53 print exactly; floating-point tensors as double.
struct Values {
  std::vector<double> floating;
  std::vector<std::int64_t> integral;
};

std::string format_value(const Values& values, std::size_t index, DType dtype) {
  char text[40];
  switch (dtype) {
    case DType::Bool:
      return values.integral[index] != 0 ? "True" : "False";
    case DType::Int64:
    case DType::Int32:
      std::snprintf(text, sizeof(text), "%lld", static_cast<long long>(values.integral[index]));
      return text;
    default: {
      const double value = values.floating[index];
      if (std::isnan(value)) return "nan";
      if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
      std::snprintf(text, sizeof(text), "%.4f", value);
      return text;
    }
  }
}

struct Printer {
  const Values& values;
  IntArrayRef sizes;
  DType dtype;
  bool summarise;
  std::ostream& out;

  // Prints the sub-tensor at `dim` starting at flat index `base`; `indent` columns deep.
  void print(std::size_t dim, std::int64_t base, int indent) {
    if (dim == sizes.size()) {
      out << format_value(values, static_cast<std::size_t>(base), dtype);
      return;
    }
    std::int64_t inner = 1;
    for (std::size_t d = dim + 1; d < sizes.size(); ++d) inner *= sizes[d];
    const std::int64_t size = sizes[dim];
    out << '[';
    for (std::int64_t i = 0; i < size; ++i) {
      if (summarise && size > 2 * kEdgeItems && i == kEdgeItems) {
        out << "...";
        i = size - kEdgeItems;
        separator(dim, indent);
      }
      print(dim + 1, base + i * inner, indent + 1);
      if (i + 1 < size) separator(dim, indent);
    }
    out << ']';
  }

  void separator(std::size_t dim, int indent) {
    if (dim + 1 == sizes.size()) {
      out << ", ";
    } else {
      out << ',' << std::string(sizes.size() - dim - 1, '\n') << std::string(indent + 1, ' ');
    }
  }
};

}  // namespace

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) {
  if (!tensor.defined()) return out << "tensor(undefined)";
  Values values;  // host reads, checked
  if (is_floating_point(tensor.dtype())) {
    values.floating = tensor.to_vector<double>();
  } else {
    values.integral = tensor.to_vector<std::int64_t>();
  }
  const bool summarise = tensor.numel() > kSummariseAbove;
  constexpr int kPrefix = 7;  // "tensor("
  out << "tensor(";
  Printer{values, tensor.sizes(), tensor.dtype(), summarise, out}.print(0, 0, kPrefix);
  if (tensor.dim() > 0 && tensor.numel() == 0) out << ", size=" << tensor.sizes();
  out << ", dtype=" << tensor.dtype() << ", device=" << tensor.device();
  if (tensor.requires_grad()) out << ", requires_grad=true";
  return out << ')';
}

}  // namespace grove
