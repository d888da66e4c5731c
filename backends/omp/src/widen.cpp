// The OpenMP backend's code that names instructions beyond SSE2 (F16C, AVX, AVX2), each function
// compiled for its own target and called only where cpu.hpp finds the CPU has it.
#include "widen.hpp"

#include <stdexcept>

#include "cpu.hpp"
#include "policy.hpp"

#include "xreduce/semantics.hpp"

#if XR_OMP_X86
#include <immintrin.h>
// AVX for the 256-bit float operations, F16C for vcvtph2ps; AVX2 for 256-bit integers.
#define XR_F16C_TARGET __attribute__((target("avx,f16c"))) inline
#define XR_AVX2_TARGET __attribute__((target("avx2"))) inline
#endif

namespace xr::omp::detail {
namespace {

template <class T> void widen_portable(const T* x, float* out, std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i) out[i] = static_cast<float>(x[i]);
}

#if XR_OMP_X86
// Eight f16 a step through vcvtph2ps (exact, as the portable conversion; a signalling NaN comes
// out quiet, which every reduction of it gives anyway).
XR_F16C_TARGET void widen_f16c(const f16* x, float* out, std::uint64_t n) {
  std::uint64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  widen_portable(x + i, out + i, n - i);
}

XR_F16C_TARGET __m256 f16x8(const f16* x) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
}

template <Op O> XR_F16C_TARGET __m256 fold8(__m256 a, __m256 b) {
  if constexpr (O == Op::Sum) {
    return _mm256_add_ps(a, b);
  } else {
    static_assert(O == Op::Prod, "fold8: sums and products");
    return _mm256_mul_ps(a, b);
  }
}

template <Op O> XR_F16C_TARGET void fold_f16c(float* lane, const f16* x, std::uint64_t n) {
  __m256 a[4];
  for (int k = 0; k < 4; ++k) a[k] = _mm256_loadu_ps(lane + 8 * k);
  std::uint64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    prefetch_ahead<32 * sizeof(f16)>(x + i);
    for (int k = 0; k < 4; ++k) a[k] = fold8<O>(a[k], f16x8(x + i + 8 * k));
  }
  for (int k = 0; k < 4; ++k) _mm256_storeu_ps(lane + 8 * k, a[k]);
  for (std::uint64_t j = 0; i < n; ++i, ++j) lane[j] = OpFn<O>::apply(lane[j], static_cast<float>(x[i]));
}

// Extremes::take on 8 lanes: m = w < v ? w : v (MINPS), lo = m < lo ? m : lo; the max alike;
// the NaN flag from an unordered compare.
XR_F16C_TARGET void extremes_f16c(bool lo_on, bool hi_on, float* lo, float* hi, std::int32_t* nan, const f16* x,
                                  std::uint64_t n) {
  __m256 l[4], h[4], f[4];
  for (int k = 0; k < 4; ++k) {
    l[k] = _mm256_loadu_ps(lo + 8 * k);
    h[k] = _mm256_loadu_ps(hi + 8 * k);
    f[k] = _mm256_loadu_ps(reinterpret_cast<const float*>(nan) + 8 * k);
  }
  std::uint64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    prefetch_ahead<64 * sizeof(f16)>(x + i);
    for (int k = 0; k < 4; ++k) {
      const __m256 v = f16x8(x + i + 8 * k), w = f16x8(x + i + 32 + 8 * k);
      if (lo_on) l[k] = _mm256_min_ps(_mm256_min_ps(w, v), l[k]);
      if (hi_on) h[k] = _mm256_max_ps(_mm256_max_ps(w, v), h[k]);
      f[k] = _mm256_or_ps(f[k], _mm256_cmp_ps(v, w, _CMP_UNORD_Q));
    }
  }
  for (int k = 0; k < 4; ++k) {
    _mm256_storeu_ps(lo + 8 * k, l[k]);
    _mm256_storeu_ps(hi + 8 * k, h[k]);
    _mm256_storeu_ps(reinterpret_cast<float*>(nan) + 8 * k, f[k]);
  }
  for (; i < n; ++i) {
    const float v = static_cast<float>(x[i]);
    const std::uint64_t j = i % 32;
    if (lo_on) lo[j] = v < lo[j] ? v : lo[j];
    if (hi_on) hi[j] = hi[j] < v ? v : hi[j];
    nan[j] |= -static_cast<std::int32_t>(v != v);
  }
}

XR_AVX2_TARGET std::uint64_t sum_bytes_vpsadbw(const std::uint8_t* x, std::uint64_t n, std::uint8_t bias) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(bias)), zero = _mm256_setzero_si256();
  __m256i s[4] = {zero, zero, zero, zero};
  for (std::uint64_t i = 0; i < n; i += 128)
    for (int k = 0; k < 4; ++k) {
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 32 * k));
      s[k] = _mm256_add_epi64(s[k], _mm256_sad_epu8(_mm256_xor_si256(b, flip), zero));
    }
  alignas(32) std::uint64_t q[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(q), _mm256_add_epi64(_mm256_add_epi64(s[0], s[1]), _mm256_add_epi64(s[2], s[3])));
  return q[0] + q[1] + q[2] + q[3];
}

#endif

}  // namespace

std::uint64_t sum_bytes_avx2(const std::uint8_t* x, std::uint64_t n, std::uint8_t bias) {
#if XR_OMP_X86
  return sum_bytes_vpsadbw(x, n, bias);
#endif
  throw std::logic_error("sum_bytes_avx2: on a CPU with AVX2 only");
}

template <Op O>
  requires(O == Op::Sum || O == Op::Prod)
void fold_f16(float* lane, const f16* x, std::uint64_t n) {
#if XR_OMP_X86
  return fold_f16c<O>(lane, x, n);
#endif
  throw std::logic_error("fold_f16: on a CPU with F16C only");
}
template void fold_f16<Op::Sum>(float*, const f16*, std::uint64_t);
template void fold_f16<Op::Prod>(float*, const f16*, std::uint64_t);

void extremes_f16(bool lo_on, bool hi_on, float* lo, float* hi, std::int32_t* nan, const f16* x, std::uint64_t n) {
#if XR_OMP_X86
  return extremes_f16c(lo_on, hi_on, lo, hi, nan, x, n);
#endif
  throw std::logic_error("extremes_f16: on a CPU with F16C only");
}

void widen(const f16* x, float* out, std::uint64_t n) {
#if XR_OMP_X86
  if (have_f16c()) return widen_f16c(x, out, n);
#endif
  widen_portable(x, out, n);
}

void widen(const bf16* x, float* out, std::uint64_t n) { widen_portable(x, out, n); }

}  // namespace xr::omp::detail
