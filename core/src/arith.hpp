// Integer arithmetic that the backends' plans share: counts of blocks, chunks and rounds. Core
// and every backend include it (core/src is on their include path); applications never see it.
// constexpr, so that CUDA device code may call it too (--expt-relaxed-constexpr).
#pragma once

#include <cstdint>

namespace xr::detail {

// a / b rounded up, for b > 0; no overflow for any a.
constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0); }

// The least r with 2^r >= x: 0 for x <= 1, 64 for x > 2^63.
constexpr unsigned ceil_log2(std::uint64_t x) {
  unsigned r = 0;
  while (r < 64 && (std::uint64_t{1} << r) < x) ++r;
  return r;
}

}  // namespace xr::detail
