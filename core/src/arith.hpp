// Integer helpers shared by core and the backends' host code. Backends include this header;
// applications never see it.
#pragma once

#include <bit>
#include <cstdint>

namespace xr::detail {

// a / b rounded up (b > 0).
constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0); }

// The smallest k with 2^k >= x (0 for x <= 1).
constexpr unsigned ceil_log2(std::uint64_t x) {
  return x <= 1 ? 0u : static_cast<unsigned>(std::bit_width(x - 1));
}

}  // namespace xr::detail
