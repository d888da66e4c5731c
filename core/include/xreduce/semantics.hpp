// The one definition of what each reduction means: identities, how two values combine,
// integer wrap-around and NaN propagation. Every backend reproduces exactly this.
//
// | op   | identity              | empty input  | notes                                     |
// |------|-----------------------|--------------|-------------------------------------------|
// | sum  | 0                     | 0            | integers wrap (two's complement)          |
// | prod | 1                     | 1            | integers wrap (two's complement)          |
// | min  | +inf / type max       | EmptyInput   | any NaN in the input makes the result NaN |
// | max  | -inf / type lowest    | EmptyInput   | any NaN in the input makes the result NaN |
//
// Float sums and products round after every step, so their result depends on the order of
// the steps; Reducer results carry `rounding_depth` so tests can bound that difference.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "xreduce/export.hpp"
#include "xreduce/types.hpp"

namespace xr {

template <class T> constexpr T identity(Op op) {
  switch (op) {
    case Op::Sum: return T(0);
    case Op::Prod: return T(1);
    case Op::Min:
      if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
      else return std::numeric_limits<T>::max();
    case Op::Max: break;
  }
  if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
  else return std::numeric_limits<T>::lowest();
}

// One step of the reduction, compile-time op. Integer sum and product wrap modulo 2^bits
// (computed in the unsigned type, so no undefined behaviour). min/max return NaN when either
// side is NaN.
template <Op O> struct OpFn {
  static constexpr Op op = O;
  template <class T> static constexpr T apply(T a, T b) {
    if constexpr (O == Op::Sum || O == Op::Prod) {
      if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        return static_cast<T>(O == Op::Sum ? static_cast<U>(static_cast<U>(a) + static_cast<U>(b))
                                           : static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      } else {
        return O == Op::Sum ? a + b : a * b;
      }
    } else {
      // One select, so loops over it vectorise: a NaN b is taken (b != b), and a NaN a is kept
      // because every comparison with it is false.
      if constexpr (O == Op::Min) return (b < a || b != b) ? b : a;
      else return (a < b || b != b) ? b : a;
    }
  }
};

// Calls f(OpFn<op>{}) for a run-time op: the one switch over Op that callers share.
template <class F> decltype(auto) visit_op(Op op, F&& f) {
  switch (op) {
    case Op::Sum: return f(OpFn<Op::Sum>{});
    case Op::Prod: return f(OpFn<Op::Prod>{});
    case Op::Min: return f(OpFn<Op::Min>{});
    case Op::Max: break;
  }
  return f(OpFn<Op::Max>{});
}

template <class T> T combine(Op op, T a, T b) {
  return visit_op(op, [&](auto fn) { return decltype(fn)::apply(a, b); });
}

// Throws EmptyInput for min/max of zero elements. Every entry point calls it.
XR_API void require_value_exists(Op op, std::uint64_t n);

}  // namespace xr
