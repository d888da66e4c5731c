#include "cpu.hpp"

#include <cstdlib>

#if XR_OMP_X86
#include <cpuid.h>
#endif

namespace xr::omp::detail {
namespace {

bool portable_only() {
  static const bool yes = std::getenv("XREDUCE_OMP_PORTABLE") != nullptr;
  return yes;
}

bool avx512_off() {
  static const bool yes = std::getenv("XREDUCE_OMP_NO_AVX512") != nullptr;
  return yes;
}

#if XR_OMP_X86
// CPUID leaf 1, ECX bit 29 (clang's __builtin_cpu_supports does not know "f16c"); "avx" there
// also checks that the OS saves the AVX state.
bool cpu_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
}
#endif

}  // namespace

bool have_f16c() {
#if XR_OMP_X86
  static const bool yes = !portable_only() && cpu_f16c();
  return yes;
#else
  return false;
#endif
}

bool have_avx2() {
#if XR_OMP_X86
  static const bool yes = have_f16c() && __builtin_cpu_supports("avx2");
  return yes;
#else
  return false;
#endif
}

bool have_avx512() {
#if XR_OMP_X86
  static const bool yes = have_avx2() && !avx512_off() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return yes;
#else
  return false;
#endif
}

}  // namespace xr::omp::detail
