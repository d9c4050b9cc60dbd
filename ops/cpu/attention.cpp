// CPU kernels of attention (ops/attention.h): each (batch, head) pair by one thread, its rows
// in order, every sum in double in a fixed order (so the results do not depend on the thread
// count). The inputs are read through their strides; the outputs are contiguous.
#include "ops/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ops/attributes.h"

namespace grove::ops::cpu {
namespace {

// One (B, T, H, D) operand: element (b, t, h, d) at data[b sb + t st + h sh + d sd].
template <typename T>
struct Heads {
  const T* data;
  std::int64_t sb, st, sh, sd;

  explicit Heads(const Tensor& x)
      : data(static_cast<const T*>(x.data_ptr())),
        sb(x.strides()[0]),
        st(x.strides()[1]),
        sh(x.strides()[2]),
        sd(x.strides()[3]) {}
  T at(std::int64_t b, std::int64_t t, std::int64_t h, std::int64_t d) const {
    return data[b * sb + t * st + h * sh + d * sd];
  }
};

struct Sizes {
  std::int64_t batch, length, heads, width;  // B, T, H, D
  explicit Sizes(const Tensor& q)
      : batch(q.size(0)), length(q.size(1)), heads(q.size(2)), width(q.size(3)) {}
  // Keys query t attends to: [0, keys(t)).
  std::int64_t keys(std::int64_t t, bool causal) const { return causal ? t + 1 : length; }
};

// scale * q[b, t, h, :] . k[b, u, h, :], summed in double.
template <typename T>
double score(const Heads<T>& q, const Heads<T>& k, std::int64_t b, std::int64_t t,
             std::int64_t u, std::int64_t h, std::int64_t width, double scale) {
  double dot = 0.0;
  for (std::int64_t d = 0; d < width; ++d) {
    dot += static_cast<double>(q.at(b, t, h, d)) * static_cast<double>(k.at(b, u, h, d));
  }
  return scale * dot;
}

template <typename T>
void forward(Heads<T> q, Heads<T> k, Heads<T> v, Sizes n, T* out, T* lse, bool causal,
             double scale) {
  const std::int64_t pairs = n.batch * n.heads;
#pragma omp parallel for schedule(static) if (pairs * n.length * n.length * n.width >= (1 << 16))
  for (std::int64_t pair = 0; pair < pairs; ++pair) {
    const std::int64_t b = pair / n.heads, h = pair % n.heads;
    std::vector<double> scores(static_cast<std::size_t>(n.length));
    std::vector<double> sums(static_cast<std::size_t>(n.width));
    for (std::int64_t t = 0; t < n.length; ++t) {
      const std::int64_t keys = n.keys(t, causal);
      double top = -std::numeric_limits<double>::infinity();
      for (std::int64_t u = 0; u < keys; ++u) {
        scores[u] = score(q, k, b, t, u, h, n.width, scale);
        top = std::max(top, scores[u]);  // a NaN score is skipped here and poisons the sum
      }
      double total = 0.0;
      std::fill(sums.begin(), sums.end(), 0.0);
      if (top != -std::numeric_limits<double>::infinity()) {
        for (std::int64_t u = 0; u < keys; ++u) {
          const double p = std::exp(scores[u] - top);
          total += p;
          for (std::int64_t d = 0; d < n.width; ++d) sums[d] += p * v.at(b, u, h, d);
        }
      }
      T* row = out + ((b * n.length + t) * n.heads + h) * n.width;
      for (std::int64_t d = 0; d < n.width; ++d) row[d] = static_cast<T>(sums[d] / total);
      lse[(b * n.heads + h) * n.length + t] = static_cast<T>(top + std::log(total));
    }
  }
}

template <typename T>
void backward(Heads<T> g, Heads<T> q, Heads<T> k, Heads<T> v, Heads<T> o, Sizes n, const T* lse,
              T* grad_q, T* grad_k, T* grad_v, bool causal, double scale) {
  const std::int64_t pairs = n.batch * n.heads;
#pragma omp parallel for schedule(static) if (pairs * n.length * n.length * n.width >= (1 << 16))
  for (std::int64_t pair = 0; pair < pairs; ++pair) {
    const std::int64_t b = pair / n.heads, h = pair % n.heads;
    const auto cells = static_cast<std::size_t>(n.length * n.width);
    std::vector<double> dq(cells, 0.0), dk(cells, 0.0), dv(cells, 0.0);
    for (std::int64_t t = 0; t < n.length; ++t) {
      double delta = 0.0;  // grad[t] . out[t]
      for (std::int64_t d = 0; d < n.width; ++d) {
        delta += static_cast<double>(g.at(b, t, h, d)) * static_cast<double>(o.at(b, t, h, d));
      }
      const double row_lse = lse[(b * n.heads + h) * n.length + t];
      for (std::int64_t u = 0; u < n.keys(t, causal); ++u) {
        const double p = std::exp(score(q, k, b, t, u, h, n.width, scale) - row_lse);
        double dp = 0.0;  // grad[t] . v[u]
        for (std::int64_t d = 0; d < n.width; ++d) {
          dp += static_cast<double>(g.at(b, t, h, d)) * static_cast<double>(v.at(b, u, h, d));
        }
        const double ds = p * (dp - delta);
        for (std::int64_t d = 0; d < n.width; ++d) {
          dq[t * n.width + d] += ds * k.at(b, u, h, d);
          dk[u * n.width + d] += ds * q.at(b, t, h, d);
          dv[u * n.width + d] += p * g.at(b, t, h, d);
        }
      }
    }
    for (std::int64_t t = 0; t < n.length; ++t) {
      const std::int64_t at = ((b * n.length + t) * n.heads + h) * n.width;
      for (std::int64_t d = 0; d < n.width; ++d) {
        grad_q[at + d] = static_cast<T>(scale * dq[t * n.width + d]);
        grad_k[at + d] = static_cast<T>(scale * dk[t * n.width + d]);
        grad_v[at + d] = static_cast<T>(dv[t * n.width + d]);
      }
    }
  }
}

template <typename T>
T* typed(const Tensor& tensor) {
  return static_cast<T*>(tensor.data_ptr());
}

}  // namespace

void attention(const OpCall& call, const OpOutputs& outputs) {
  const AttentionAttributes attributes = AttentionAttributes::from(call.attributes);
  const Tensor& q = call.input(0);
  dispatch_floating(q.dtype(), "attention", [&]<typename T>() {
    // Raw pointers, strides and sizes only: a kernel recorded on the CPU holds no tensors.
    const Heads<T> qs(q), ks(call.input(1)), vs(call.input(2));
    const Sizes n(q);
    T* out = typed<T>(outputs[0]);
    T* lse = typed<T>(outputs[1]);
    const bool causal = attributes.causal;
    const double scale = attributes.scale;
    launch_cpu(current_stream(q.device()),
               [=] { forward<T>(qs, ks, vs, n, out, lse, causal, scale); });
  });
}

void attention_backward(const OpCall& call, const OpOutputs& outputs) {
  const AttentionAttributes attributes = AttentionAttributes::from(call.attributes);
  const Tensor& q = call.input(1);
  // See Note [Scratch copies before a CPU kernel] in ops/cpu/linalg.h.
  const Tensor lse_rows = call.input(5).contiguous();
  dispatch_floating(q.dtype(), "attention_backward", [&]<typename T>() {
    const Heads<T> gs(call.input(0)), qs(q), ks(call.input(2)), vs(call.input(3));
    const Heads<T> os(call.input(4));
    const Sizes n(q);
    const T* lse = typed<const T>(lse_rows);
    T* grad_q = typed<T>(outputs[0]);
    T* grad_k = typed<T>(outputs[1]);
    T* grad_v = typed<T>(outputs[2]);
    const bool causal = attributes.causal;
    const double scale = attributes.scale;
    launch_cpu(current_stream(q.device()), [=] {
      backward<T>(gs, qs, ks, vs, os, n, lse, grad_q, grad_k, grad_v, causal, scale);
    });
  });
}

}  // namespace grove::ops::cpu
