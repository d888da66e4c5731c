#include "widen.hpp"

#include "cpu.hpp"

#if XR_OMP_X86
#include <immintrin.h>
#endif

namespace xr::omp::detail {
namespace {

template <class T> void widen_portable(const T* x, float* out, std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i) out[i] = static_cast<float>(x[i]);
}

#if XR_OMP_X86
// Eight f16 a step through vcvtph2ps (exact, as the portable conversion; a signalling NaN comes
// out quiet, which every reduction of it gives anyway).
__attribute__((target("avx,f16c"))) void widen_f16c(const f16* x, float* out, std::uint64_t n) {
  std::uint64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  widen_portable(x + i, out + i, n - i);
}
#endif

}  // namespace

void widen(const f16* x, float* out, std::uint64_t n) {
#if XR_OMP_X86
  if (have_f16c()) return widen_f16c(x, out, n);
#endif
  widen_portable(x, out, n);
}

void widen(const bf16* x, float* out, std::uint64_t n) { widen_portable(x, out, n); }

}  // namespace xr::omp::detail
