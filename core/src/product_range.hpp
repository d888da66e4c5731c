// Where the partial products of a float product can go, for the host reference.
#pragma once

#include <cmath>
#include <limits>

namespace xr::detail {

// Every partial product of the elements, in any order, lies between 2^small and 2^big (small:
// the sum of log2|x| over the factors below 1, big: over those above 1). A product computed in
// C, rounded after every step, then depends on the order where some order overflows on its way
// and a zero or a factor below 1 is left to come before or after the overflow: inf x 0 = NaN,
// inf x 1e-300 = inf, and 0 x 1e300 = 0 (3e38 x 3e38 x 0 in f32 is NaN in that order, 0 in the
// order 3e38 x 0 x 3e38). Where every factor is at least 1 the product only grows, and any
// overflow is the whole product's, in every order.
template <class C> struct ProductRange {
  double big = 0, small = 0;
  bool zero = false;

  void add(C x) {
    const double a = std::fabs(static_cast<double>(x));
    if (a == 0) zero = true;
    else if (a > 1) big += std::log2(a);
    else if (a < 1) small += std::log2(a);
  }
  // One binade of margin for the roundings on the way.
  bool order_dependent() const {
    return big >= std::numeric_limits<C>::max_exponent - 1 && (zero || small < 0);
  }
};

}  // namespace xr::detail
