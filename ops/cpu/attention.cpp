// CPU kernels of attention (ops/attention.h): one (batch, head) pair at a time per thread (an
// OpenMP loop over the pairs, so each pair's results do not depend on the thread count), the
// pair's rows gathered into contiguous matrices and multiplied with Eigen, in the inputs'
// precision, as matmul does on the CPU:
//   forward:  S = scale Q K^T (masked: -inf above the diagonal when causal), row maxima m and
//             sums l of exp(S - m), out = exp(S - m) V / l, lse = m + log(l);
//   backward: P = exp(S - lse), dP = G V^T, delta = rowsum(G o out), dS = P o (dP - delta),
//             dQ = scale dS K, dK = scale dS^T Q, dV = P^T G.
// The CUDA kernels (ops/cuda/attention.cu) sum in double instead, in another order; both are
// within the parity tests' float32 tolerance of each other and of the double reference.
#include "ops/cpu/attention.h"

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ops/attributes.h"

namespace grove::ops::cpu {
namespace {

template <typename T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// One (B, T, H, D) operand: element (b, t, h, d) at data[b sb + t st + h sh + d sd]. Raw
// pointer and strides only: a kernel recorded on the CPU holds no tensors.
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

  // Rows (b, 0..T, h) as a T x D matrix.
  void gather(Matrix<T>& rows, std::int64_t b, std::int64_t h) const {
    for (std::int64_t t = 0; t < rows.rows(); ++t) {
      const T* row = data + b * sb + t * st + h * sh;
      for (std::int64_t d = 0; d < rows.cols(); ++d) rows(t, d) = row[d * sd];
    }
  }
};

struct Sizes {
  std::int64_t batch, length, heads, width;  // B, T, H, D
  explicit Sizes(const Tensor& q)
      : batch(q.size(0)), length(q.size(1)), heads(q.size(2)), width(q.size(3)) {}
  std::int64_t pairs() const { return batch * heads; }
  // Enough work per call to share the pairs among threads (Note [Threads in CPU GEMM]).
  bool parallel() const { return pairs() * length * length * width >= (std::int64_t{1} << 21); }
};

// Writes rows (b, 0..T, h) of a contiguous (B, T, H, D) output from a T x D matrix, times factor.
template <typename T>
void scatter(T* out, const Matrix<T>& rows, const Sizes& n, std::int64_t b, std::int64_t h,
             T factor) {
  for (std::int64_t t = 0; t < n.length; ++t) {
    T* row = out + ((b * n.length + t) * n.heads + h) * n.width;
    for (std::int64_t d = 0; d < n.width; ++d) row[d] = factor * rows(t, d);
  }
}

// S = scale Q K^T with -inf above the diagonal when causal.
template <typename T>
void scores(Matrix<T>& s, const Matrix<T>& q, const Matrix<T>& k, bool causal, T scale) {
  s.noalias() = q * k.transpose();
  s *= scale;
  if (!causal) return;
  for (std::int64_t t = 0; t < s.rows(); ++t) {
    for (std::int64_t u = t + 1; u < s.cols(); ++u) s(t, u) = -std::numeric_limits<T>::infinity();
  }
}

template <typename T>
void forward(Heads<T> qh, Heads<T> kh, Heads<T> vh, Sizes n, T* out, T* lse, bool causal, T scale) {
#pragma omp parallel for schedule(static) if (n.parallel())
  for (std::int64_t pair = 0; pair < n.pairs(); ++pair) {
    const std::int64_t b = pair / n.heads, h = pair % n.heads;
    Matrix<T> q(n.length, n.width), k(n.length, n.width), v(n.length, n.width);
    qh.gather(q, b, h);
    kh.gather(k, b, h);
    vh.gather(v, b, h);
    Matrix<T> s(n.length, n.length);
    scores(s, q, k, causal, scale);
    Matrix<T> weighted(n.length, n.width);
    for (std::int64_t t = 0; t < n.length; ++t) {
      // The row maximum skips NaN (which then poisons the sum); all -inf leaves m = -inf.
      T m = -std::numeric_limits<T>::infinity();
      for (std::int64_t u = 0; u < n.length; ++u) m = s(t, u) > m ? s(t, u) : m;
      T total = 0;
      for (std::int64_t u = 0; u < n.length; ++u) {
        const T p = m == -std::numeric_limits<T>::infinity() ? T(0) : std::exp(s(t, u) - m);
        s(t, u) = p;
        total += p;
      }
      lse[(b * n.heads + h) * n.length + t] = m + std::log(total);
      s.row(t) /= total;  // 0 / 0: NaN, as softmax of an all -inf row
    }
    weighted.noalias() = s * v;
    scatter(out, weighted, n, b, h, T(1));
  }
}

template <typename T>
void backward(Heads<T> gh, Heads<T> qh, Heads<T> kh, Heads<T> vh, Heads<T> oh, Sizes n,
              const T* lse, T* grad_q, T* grad_k, T* grad_v, bool causal, T scale) {
#pragma omp parallel for schedule(static) if (n.parallel())
  for (std::int64_t pair = 0; pair < n.pairs(); ++pair) {
    const std::int64_t b = pair / n.heads, h = pair % n.heads;
    Matrix<T> g(n.length, n.width), q(n.length, n.width), k(n.length, n.width);
    Matrix<T> v(n.length, n.width), o(n.length, n.width);
    gh.gather(g, b, h);
    qh.gather(q, b, h);
    kh.gather(k, b, h);
    vh.gather(v, b, h);
    oh.gather(o, b, h);
    Matrix<T> p(n.length, n.length);
    scores(p, q, k, causal, scale);
    Matrix<T> ds(n.length, n.length);
    ds.noalias() = g * v.transpose();  // dP
    for (std::int64_t t = 0; t < n.length; ++t) {
      const T row_lse = lse[(b * n.heads + h) * n.length + t];
      const T delta = g.row(t).dot(o.row(t));
      for (std::int64_t u = 0; u < n.length; ++u) {
        p(t, u) = std::exp(p(t, u) - row_lse);  // 0 where masked
        ds(t, u) = p(t, u) * (ds(t, u) - delta);
      }
    }
    Matrix<T> result(n.length, n.width);
    result.noalias() = ds * k;
    scatter(grad_q, result, n, b, h, scale);
    result.noalias() = ds.transpose() * q;
    scatter(grad_k, result, n, b, h, scale);
    result.noalias() = p.transpose() * g;
    scatter(grad_v, result, n, b, h, T(1));
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
    const Heads<T> qs(q), ks(call.input(1)), vs(call.input(2));
    const Sizes n(q);
    T* out = typed<T>(outputs[0]);
    T* lse = typed<T>(outputs[1]);
    const bool causal = attributes.causal;
    const auto scale = static_cast<T>(attributes.scale);
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
    const auto scale = static_cast<T>(attributes.scale);
    launch_cpu(current_stream(q.device()), [=] {
      backward<T>(gs, qs, ks, vs, os, n, lse, grad_q, grad_k, grad_v, causal, scale);
    });
  });
}

}  // namespace grove::ops::cpu
