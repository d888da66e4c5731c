#include "widen.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define XR_OMP_F16C 1
#else
#define XR_OMP_F16C 0
#endif

namespace xr::omp::detail {
namespace {

template <class T> void widen_portable(const T* x, float* out, std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i) out[i] = static_cast<float>(x[i]);
}

#if XR_OMP_F16C
// Eight f16 a step through vcvtph2ps (exact, as the portable conversion; a signalling NaN comes
// out quiet, which every reduction of it gives anyway).
__attribute__((target("avx,f16c"))) void widen_f16c(const f16* x, float* out, std::uint64_t n) {
  std::uint64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  widen_portable(x + i, out + i, n - i);
}

// AVX enabled by the OS, and F16C (CPUID leaf 1, ECX bit 29: clang's __builtin_cpu_supports
// does not know "f16c").
bool have_f16c() {
  static const bool yes = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
  }();
  return yes;
}
#endif

}  // namespace

void widen(const f16* x, float* out, std::uint64_t n) {
#if XR_OMP_F16C
  if (have_f16c()) return widen_f16c(x, out, n);
#endif
  widen_portable(x, out, n);
}

void widen(const bf16* x, float* out, std::uint64_t n) { widen_portable(x, out, n); }

}  // namespace xr::omp::detail
