// The instruction sets beyond the portable build's (x86-64: SSE2) that the OpenMP kernels take
// where the CPU has them, found once at run time. XREDUCE_OMP_PORTABLE (set to anything) turns
// them all off, so that tests reach the portable code on any machine; XREDUCE_OMP_NO_AVX512
// turns AVX-512 off alone.
#pragma once

namespace xr::omp::detail {

// x86-64 built with GCC or Clang: kernels compiled for AVX2 with target attributes exist.
#if defined(__x86_64__) && defined(__GNUC__)
#define XR_OMP_X86 1
#else
#define XR_OMP_X86 0
#endif

// AVX and F16C, with the AVX state enabled by the OS: vcvtph2ps (widen.cpp).
bool have_f16c();
// AVX2, and F16C with it: the lane loops compiled for AVX2 (ladder.cpp).
bool have_avx2();
// AVX-512 F, BW, VL and DQ, with AVX2: the lane loops compiled for AVX-512 (ladder.cpp).
bool have_avx512();

}  // namespace xr::omp::detail
