// The exact sum of a few floats in one 128-bit integer, rounded once: the exact sums of short
// segments (rows or columns of at most kShortExactTerms terms), such as the ranks' values of each
// element in an all-reduce. One thread sums a segment; host and device code run this very code
// (XR_HOST_DEVICE), and the rounding is ExactSum's: the same bits as the pieces path.
//
// A finite term is m * 2^(e - bias) with m < 2^p (p = 24 for f32, 53 for f64) and e = max(its
// exponent field, 1). The sum keeps acc * 2^(base - bias), base the smallest e of the nonzero
// terms so far: a term with a smaller e shifts acc up first. It is exact while every term fits,
// that is while (largest e - base) + p + log2(kShortExactTerms) <= 126, so |acc| < 2^126: a span
// of 96 binades for f32 terms, 67 for f64. A segment that spans more is left to the pieces path
// (fits() is false). Infinities and NaN set ExactSum's flags, as does a term that is not -0.
#pragma once

#include <climits>
#include <cstdint>
#include <type_traits>

#include "xreduce/exact.hpp"
#include "xreduce/half.hpp"

// Device code reads several terms before it adds the first, so that loads overlap.
#ifdef __CUDA_ARCH__
#define XR_SHORT_EXACT_UNROLL _Pragma("unroll 8")
#else
#define XR_SHORT_EXACT_UNROLL
#endif

namespace xr::detail {

inline constexpr int kShortExactTerms = 64;

template <class T> class ShortExactSum {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "terms are f32 or f64");
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  static constexpr int kFrac = sizeof(T) == 4 ? 23 : 52;
  static constexpr int kPrecision = kFrac + 1;
  static constexpr unsigned kExpField = sizeof(T) == 4 ? 0xffu : 0x7ffu;
  static constexpr int kBias = sizeof(T) == 4 ? 150 : 1075;  // x = m * 2^(e - kBias)
  static constexpr int kEmin = sizeof(T) == 4 ? -126 : -1022;
  static constexpr int kSpan = 126 - 6 - kPrecision;  // 6: log2(kShortExactTerms)
  static_assert(kShortExactTerms <= 64, "kSpan leaves 6 bits for the count of terms");
  static constexpr Bits kSign = Bits{1} << (8 * sizeof(T) - 1);

 public:
  XR_HOST_DEVICE void add(T x) {
    Bits b;
    __builtin_memcpy(&b, &x, sizeof b);
    flags_ |= ExactSum::kFlagAny | (b != kSign ? ExactSum::kFlagNotNegZero : 0u);
    const unsigned field = static_cast<unsigned>(b >> kFrac) & kExpField;
    const Bits fraction = b & ((Bits{1} << kFrac) - 1);
    if (field == kExpField) {
      flags_ |= fraction ? ExactSum::kFlagNaN : (b & kSign) ? ExactSum::kFlagNegInf : ExactSum::kFlagPosInf;
      return;
    }
    if ((b & ~kSign) == 0 || !fits_) return;
    const int e = field ? static_cast<int>(field) : 1;
    const int base = e < base_ ? e : base_, top = e > top_ ? e : top_;
    if (top - base > kSpan) {
      fits_ = false;
      return;
    }
    if (base < base_ && acc_ != 0) acc_ = static_cast<__int128>(static_cast<unsigned __int128>(acc_) << (base_ - base));
    base_ = base;
    top_ = top;
    const __int128 m = static_cast<__int128>(static_cast<unsigned __int128>(fraction | (Bits{field != 0} << kFrac)) << (e - base));
    acc_ += (b & kSign) ? -m : m;
  }

  // Whether every finite term went into the integer (else the sum needs the pieces path).
  XR_HOST_DEVICE bool fits() const { return fits_; }

  // The exact sum rounded to nearest, ties to even: any NaN, or +inf with -inf, gives NaN; else an
  // infinity wins; beyond T's range, +-inf; an exact zero is -0 only when every term was -0.
  XR_HOST_DEVICE T rounded() const {
    if ((flags_ & ExactSum::kFlagNaN) ||
        ((flags_ & ExactSum::kFlagPosInf) && (flags_ & ExactSum::kFlagNegInf)))
      return from_bits((Bits{kExpField} << kFrac) | (Bits{1} << (kFrac - 1)));
    if (flags_ & (ExactSum::kFlagPosInf | ExactSum::kFlagNegInf))
      return from_bits((Bits{kExpField} << kFrac) | ((flags_ & ExactSum::kFlagNegInf) ? kSign : 0));
    if (acc_ == 0)
      return from_bits((flags_ & ExactSum::kFlagAny) && !(flags_ & ExactSum::kFlagNotNegZero) ? kSign : 0);
    const bool negative = acc_ < 0;
    const unsigned __int128 mag = negative ? -static_cast<unsigned __int128>(acc_) : static_cast<unsigned __int128>(acc_);
    // Bit i of mag weighs 2^(i + unit); the value's leading bit weighs 2^lead_exp.
    const int unit = base_ - kBias;
    const int lead_exp = leading_bit(mag) + unit;
    // The weight of the last bit kept: p bits from the leading one, or the subnormal step.
    const int last = (lead_exp >= kEmin ? lead_exp : kEmin) - (kPrecision - 1);
    const int below = last - unit;  // bits of mag below the last kept bit
    std::uint64_t kept;
    if (below <= 0) {
      kept = static_cast<std::uint64_t>(mag << -below);  // exact: fewer than p + 1 bits
    } else {
      kept = static_cast<std::uint64_t>(mag >> below);
      const unsigned __int128 rest = mag & ((static_cast<unsigned __int128>(1) << below) - 1);
      const unsigned __int128 half = static_cast<unsigned __int128>(1) << (below - 1);
      if (rest > half || (rest == half && (kept & 1))) ++kept;  // may reach 2^p: still exact below
    }
    // kept <= 2^p converts exactly; scaling by a power of two then rounds nothing, and gives
    // +-inf where the rounded sum passes T's largest value.
    const T v = scale(static_cast<T>(kept), last);
    return negative ? -v : v;
  }

 private:
  __int128 acc_ = 0;
  int base_ = INT_MAX;
  int top_ = INT_MIN;
  std::uint32_t flags_ = 0;
  bool fits_ = true;

  XR_HOST_DEVICE static T from_bits(Bits b) {
    T x;
    __builtin_memcpy(&x, &b, sizeof x);
    return x;
  }
  XR_HOST_DEVICE static int leading_bit(unsigned __int128 v) {
    const auto hi = static_cast<std::uint64_t>(v >> 64), lo = static_cast<std::uint64_t>(v);
#ifdef __CUDA_ARCH__
    return hi ? 127 - __clzll(static_cast<long long>(hi)) : 63 - __clzll(static_cast<long long>(lo));
#else
    return hi ? 127 - __builtin_clzll(hi) : 63 - __builtin_clzll(lo);
#endif
  }
  // v * 2^e for an integer v < 2^(p + 1), without the library's ldexp (host and device alike):
  // at most three exact multiplications by powers of two, the last of which alone may round (to
  // +-inf, or a subnormal that v and e make exact).
  XR_HOST_DEVICE static T scale(T v, int e) {
    constexpr int kStep = sizeof(T) == 4 ? 100 : 1000;
    while (e > kStep) {
      v *= power(kStep);
      e -= kStep;
    }
    while (e < -kStep) {
      v *= power(-kStep);
      e += kStep;
    }
    return v * power(e);
  }
  XR_HOST_DEVICE static T power(int e) {  // 2^e, |e| <= kStep: a normal T
    return from_bits(static_cast<Bits>(static_cast<Bits>(e + (sizeof(T) == 4 ? 127 : 1023)) << kFrac));
  }
};

// The exact sum of the `rows` terms load(0), ..., load(rows - 1) (rows <= kShortExactTerms) of
// type C (f32 or f64) rounded once, into out; false where they span too many binades
// (ShortExactSum::fits), out untouched. f32 terms first go into a double, which holds their sum
// exactly where they span at most 23 binades (every term a multiple of the smallest's unit, the
// sum below 2^6 times the largest term's binade: 23 + 24 + 6 <= 53 bits), the common case; only
// the others take the 128-bit integer, in a second pass over the terms.
template <class C, class Load> XR_HOST_DEVICE bool short_exact_sum(Load load, std::uint64_t rows, C& out) {
  if constexpr (sizeof(C) == 4) {
    double sum = 0.0;
    unsigned low = 0xffu, high = 0u;  // the smallest and largest max(exponent field, 1) of finite nonzero terms
    XR_SHORT_EXACT_UNROLL
    for (std::uint64_t r = 0; r < rows; ++r) {
      const C x = load(r);
      std::uint32_t b;
      __builtin_memcpy(&b, &x, sizeof b);
      const unsigned field = (b >> 23) & 0xffu;
      if ((b & 0x7fffffffu) != 0 && field != 0xffu) {
        const unsigned e = field ? field : 1u;
        low = e < low ? e : low;
        high = e > high ? e : high;
      }
      sum = r ? sum + static_cast<double>(x) : static_cast<double>(x);  // the first term as it is: -0 stays -0
    }
    if (high < low || high - low <= 23u) {  // no finite nonzero term, or few binades: exact
      out = rows ? static_cast<C>(sum) : C(0);
      return true;
    }
  }
  ShortExactSum<C> sum;
  XR_SHORT_EXACT_UNROLL
  for (std::uint64_t r = 0; r < rows; ++r) sum.add(load(r));
  if (!sum.fits()) return false;
  out = sum.rounded();
  return true;
}

}  // namespace xr::detail
