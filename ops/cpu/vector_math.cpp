// erf_floats and exp_floats: see vector_math.h.
#include "ops/cpu/vector_math.h"

#include <cmath>

#if defined(GROVE_HAVE_LIBMVEC) && defined(__AVX2__)
#include <immintrin.h>

// libmvec's AVX2 variants, named by the x86-64 vector function ABI ("d": AVX2, "N8": eight
// lanes, no mask, "v": one vector argument).
extern "C" __m256 _ZGVdN8v_erff(__m256 x);
extern "C" __m256 _ZGVdN8v_expf(__m256 x);
#endif

namespace grove::ops::cpu {
namespace {

#if defined(GROVE_HAVE_LIBMVEC) && defined(__AVX2__)
template <__m256 (*kFunction)(__m256)>
void apply_eight_at_a_time(const float* in, float* out, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, kFunction(_mm256_loadu_ps(in + i)));
  if (i == n) return;
  float tail[8] = {};  // the last few through the same function, so no element's value
  for (std::int64_t j = i; j < n; ++j) tail[j - i] = in[j];  // depends on where it sits
  _mm256_storeu_ps(tail, kFunction(_mm256_loadu_ps(tail)));
  for (std::int64_t j = i; j < n; ++j) out[j] = tail[j - i];
}
#endif

}  // namespace

void erf_floats(const float* in, float* out, std::int64_t n) {
#if defined(GROVE_HAVE_LIBMVEC) && defined(__AVX2__)
  apply_eight_at_a_time<_ZGVdN8v_erff>(in, out, n);
#else
  for (std::int64_t i = 0; i < n; ++i) out[i] = std::erf(in[i]);
#endif
}

void exp_floats(const float* in, float* out, std::int64_t n) {
#if defined(GROVE_HAVE_LIBMVEC) && defined(__AVX2__)
  apply_eight_at_a_time<_ZGVdN8v_expf>(in, out, n);
#else
  for (std::int64_t i = 0; i < n; ++i) out[i] = std::exp(in[i]);
#endif
}

}  // namespace grove::ops::cpu
