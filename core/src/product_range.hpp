// Where the partial products of a float product can go, for the host reference.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace xr::detail {

// A product computed in C, rounded after every step, depends on the order of its factors where
// some order overflows on its way and a zero or a factor below 1 can come before or after the
// overflow: inf x 0 = NaN, inf x 1e-300 = inf, 0 x 1e300 = 0 (3e38 x 3e38 x 0 in f32 is NaN in
// that order, 0 in the order 3e38 x 0 x 3e38). A factor of magnitude at most 1 never makes a
// partial product larger (rounding is monotonic and 1 is exact), so every partial product is at
// most the product of the factors above 1, computed in some order: at most 2^big (1 + u)^(m - 1)
// for m such factors whose log2 magnitudes sum to big. One such factor alone never overflows.
template <class C> struct ProductRange {
  double big = 0, small = 0;  // sums of log2|x| over the factors above 1, and below 1
  std::uint64_t above_one = 0;
  bool zero = false;

  void add(C x) {
    const double a = std::fabs(static_cast<double>(x));
    if (a == 0) {
      zero = true;
    } else if (a > 1) {
      big += std::log2(a);
      ++above_one;
    } else if (a < 1) {
      small += std::log2(a);
    }
  }
  bool order_dependent() const {
    if (above_one < 2 || !(zero || small < 0)) return false;
    const double u = std::numeric_limits<C>::epsilon() / 2;
    const double growth = std::log2(1 + static_cast<double>(above_one) * u * 1.01);
    const double slack = 1e-9 * static_cast<double>(above_one);  // the log sums' own rounding
    return big + growth + slack > std::log2(static_cast<double>(std::numeric_limits<C>::max()));
  }
};

}  // namespace xr::detail
