// Exact f32/f64 sums for the OpenMP backend: per-thread fast front ends (exact floating-point
// window sums, docs/exact.md "OpenMP") feeding xr::ExactSum, merged in thread order.
#pragma once

#include <cstdint>

#include "xreduce/exact.hpp"

namespace xr::omp::detail {

// The exact sum of x[0..n) on `threads` OpenMP threads, as the state xr::ExactSum would hold
// after adding the same values (normalised limbs and identical flags). Identical for every
// thread count and code path (AVX2 or portable).
template <class T> ExactSum::Raw exact_sum_state(const T* x, std::uint64_t n, int threads);

extern template ExactSum::Raw exact_sum_state<float>(const float*, std::uint64_t, int);
extern template ExactSum::Raw exact_sum_state<double>(const double*, std::uint64_t, int);

// Which front end runs on this machine: "avx2" or "portable" ("portable" also when the
// environment variable XREDUCE_OMP_EXACT_PORTABLE is set, for tests). Threads whose floating-
// point environment is not the default (flush-to-zero, denormals-are-zero or a directed
// rounding mode) fall back to ExactSum::add, which uses integer arithmetic only.
const char* exact_front_end();

}  // namespace xr::omp::detail
