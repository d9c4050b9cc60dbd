// erf and exp of float arrays for the CPU kernels (GELU and its gradient): eight at a time
// through glibc's vector math library (libmvec; AVX2 variants) where the build found it, one
// at a time through std::erf and std::exp elsewhere.
//
// libmvec is part of glibc (libc6-dev on Debian); its float erf and exp are within a few ulp of
// the scalar functions (1 ulp for erf over [-5, 5] on the machine these were measured on) and
// 20x faster per element: scalar erff was 6% of the GPT's CPU training step. Each element's
// result depends on its value alone (a short tail goes through the same vector function in a
// padded buffer), so splitting an array over threads changes no value.
#pragma once

#include <cstdint>

namespace grove::ops::cpu {

// out[i] = erf(in[i]) for i in [0, n); in and out may be the same array.
void erf_floats(const float* in, float* out, std::int64_t n);
// out[i] = exp(in[i]) for i in [0, n); in and out may be the same array.
void exp_floats(const float* in, float* out, std::int64_t n);

}  // namespace grove::ops::cpu
