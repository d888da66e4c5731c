// Exact summation: a carry-save fixed-point superaccumulator (docs/exact.md).
#include "xreduce/exact.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace xr {
namespace {

using Limbs = std::array<std::int64_t, ExactSum::kLimbs>;
constexpr int kTop = ExactSum::kLimbs - 1;
constexpr std::uint64_t kMask32 = 0xffffffffu;

static_assert(ExactSum::kDigitBits == 32, "the digit split below assumes 32-bit digits");
// Highest limb a double's digits reach: bit position of the lowest mantissa bit of the
// largest binade is 2045 (= 971 + 1074); 2045 / 32 = 63, plus two more digits.
static_assert(2045 / 32 + 2 < ExactSum::kLimbs - 1, "the top limb only takes carries");

// Carry propagation: afterwards limb[i] is in [0, 2^32) for i < kTop and the top limb holds
// the rest, signed (two's complement over the whole array). Valid while every limb is below
// 2^63 - 2^33 in magnitude.
void normalise_limbs(Limbs& l) {
  std::int64_t carry = 0;
  for (int i = 0; i < kTop; ++i) {
    const std::int64_t v = l[i] + carry;
    carry = v >> 32;  // arithmetic shift (C++20)
    l[i] = v & static_cast<std::int64_t>(kMask32);
  }
  l[kTop] += carry;
}

// Flags for a special (exponent all ones) value.
inline std::uint32_t special_flags(bool is_nan, bool negative) {
  if (is_nan) return ExactSum::kFlagNaN;
  return negative ? ExactSum::kFlagNegInf : ExactSum::kFlagPosInf;
}

// One double into limbs: three 32-bit digits of m << s, signed, at limbs i, i+1, i+2.
// Returns false for inf/NaN (not added).
inline bool add_one(std::int64_t* __restrict l, std::uint64_t b) {
  constexpr std::uint64_t kFrac = (std::uint64_t{1} << 52) - 1;
  const std::uint32_t ex = static_cast<std::uint32_t>(b >> 52) & 0x7ffu;
  if (ex == 0x7ffu) [[unlikely]] return false;
  const std::uint32_t normal = ex != 0;
  const std::uint64_t m = (b & kFrac) | (std::uint64_t{normal} << 52);
  const std::uint32_t p = ex - normal;  // bit position of m's lowest bit above 2^-1074
  const std::uint32_t s = p & 31u, i = p >> 5;
  const std::int64_t sg = -static_cast<std::int64_t>(b >> 63);  // 0 or -1
  const std::uint64_t t = m >> (32u - s);                       // (m << s) >> 32, < 2^53
  const std::int64_t d0 = static_cast<std::int64_t>((m << s) & kMask32);
  const std::int64_t d1 = static_cast<std::int64_t>(t & kMask32);
  const std::int64_t d2 = static_cast<std::int64_t>(t >> 32);
  l[i] += (d0 ^ sg) - sg;
  l[i + 1] += (d1 ^ sg) - sg;
  l[i + 2] += (d2 ^ sg) - sg;
  return true;
}

// One float: two 32-bit digits of m << s (< 2^55).
inline bool add_one(std::int64_t* __restrict l, std::uint32_t b) {
  constexpr std::uint32_t kFrac = (std::uint32_t{1} << 23) - 1;
  const std::uint32_t ex = (b >> 23) & 0xffu;
  if (ex == 0xffu) [[unlikely]] return false;
  const std::uint32_t normal = ex != 0;
  const std::uint64_t m = (b & kFrac) | (normal << 23);
  // float x = m * 2^(max(ex,1) - 150): bit position above 2^-1074 is max(ex,1) + 924.
  const std::uint32_t p = ex + (1u - normal) + 924u;
  const std::uint32_t s = p & 31u, i = p >> 5;
  const std::int64_t sg = -static_cast<std::int64_t>(b >> 31);
  const std::uint64_t v = m << s;
  const std::int64_t d0 = static_cast<std::int64_t>(v & kMask32);
  const std::int64_t d1 = static_cast<std::int64_t>(v >> 32);
  l[i] += (d0 ^ sg) - sg;
  l[i + 1] += (d1 ^ sg) - sg;
  return true;
}

template <class U>
std::uint32_t special_flags(U b) {
  constexpr int kBits = 8 * sizeof(U);
  constexpr int kFracBits = kBits == 64 ? 52 : 23;
  const bool is_nan = (b & ((U{1} << kFracBits) - 1)) != 0;
  return special_flags(is_nan, (b >> (kBits - 1)) != 0);
}

// Adds n values (bit patterns of type U) into limbs l (no normalisation: the caller bounds
// n). Returns the flags seen. (Two interleaved accumulators measured no faster.)
template <class T, class U>
std::uint32_t add_values(std::int64_t* __restrict l, const T* __restrict x, std::size_t n) {
  constexpr U kSign = U{1} << (8 * sizeof(U) - 1);
  std::uint32_t flags = 0;
  U not_negzero = 0;
  for (std::size_t k = 0; k < n; ++k) {
    U b;
    std::memcpy(&b, x + k, sizeof b);
    not_negzero |= b ^ kSign;
    if (!add_one(l, b)) flags |= special_flags(b);
  }
  if (n != 0) flags |= ExactSum::kFlagAny;
  if (not_negzero != 0) flags |= ExactSum::kFlagNotNegZero;
  return flags;
}

std::uint32_t add_doubles(std::int64_t* l, const double* x, std::size_t n) {
  return add_values<double, std::uint64_t>(l, x, n);
}
std::uint32_t add_floats(std::int64_t* l, const float* x, std::size_t n) {
  return add_values<float, std::uint32_t>(l, x, n);
}

int bit_length(unsigned __int128 v) {
  const auto hi = static_cast<std::uint64_t>(v >> 64);
  if (hi != 0) return 128 - std::countl_zero(hi);
  return 64 - std::countl_zero(static_cast<std::uint64_t>(v));
}

// A nonnegative magnitude as base-2^32 digits, least significant first: the limbs of a
// normalised state, the top limb (below 2^63) split into two digits.
constexpr int kDigits = ExactSum::kLimbs + 1;
using Digits = std::array<std::uint32_t, kDigits>;

Digits magnitude_digits(const Limbs& l) {
  Digits d;
  for (int i = 0; i < kTop; ++i) d[i] = static_cast<std::uint32_t>(l[i]);
  const auto top = static_cast<std::uint64_t>(l[kTop]);
  d[kTop] = static_cast<std::uint32_t>(top & kMask32);
  d[kTop + 1] = static_cast<std::uint32_t>(top >> 32);
  return d;
}

// Digits a quotient keeps below 2^-1074: its base, 2^-1138, meets round_magnitude's condition
// for a sticky bit (base <= Emin - Prec) for double and float.
constexpr int kFracDigits = 2;

// Correct rounding (to nearest, ties to even) to a binary format with Prec significand bits,
// normal exponents [Emin, Emax], of the nonzero magnitude
//   D + t,  D = sum_{j<len} d[j] * 2^(32j + base),  0 <= t < 2^base, t > 0 iff sticky.
// Nonnegative result; beyond the range: +inf. With sticky set, base <= Emin - Prec is
// required (2^base at most half the smallest subnormal): every rounding boundary (a multiple
// of half an ulp) is then a multiple of 2^base, so D + t lies on the same side of each as
// D + 0.5 * 2^base would, also when the window below reaches under d[0].
template <int Prec, int Emin, int Emax, class T>
T round_magnitude(const std::uint32_t* d, int len, int base, bool sticky) {
  constexpr T kInf = std::numeric_limits<T>::infinity();
  constexpr int kBits = ExactSum::kDigitBits;
  int k = len - 1;
  while (k >= 0 && d[k] == 0) --k;
  if (k < 0) return T(0);  // only t: below 2^base, at most half the smallest subnormal
  // magnitude >= 2^(32k + base): beyond the range whenever that exceeds Emax.
  if (kBits * k + base > Emax) return kInf;

  // Window: the top three digits, M * 2^b, plus a sticky bit for everything below.
  auto digit_at = [&](int j) -> std::uint64_t { return j >= 0 ? d[j] : 0; };
  const unsigned __int128 M = (static_cast<unsigned __int128>(digit_at(k)) << 64) |
                              (static_cast<unsigned __int128>(digit_at(k - 1)) << 32) | digit_at(k - 2);
  for (int j = 0; j < k - 2; ++j) sticky |= d[j] != 0;
  const int b = kBits * (k - 2) + base;
  const int E = bit_length(M) - 1 + b;  // exponent of the leading bit
  if (E > Emax) return kInf;
  const int q = std::max(E - Prec + 1, Emin - Prec + 1);  // exponent of the target ulp
  const int sh = q - b;                                    // > 0 always (see docs/exact.md)
  std::uint64_t kept;
  if (sh >= 128) {
    kept = 0;  // D < 2^(b+96) <= 2^(q-32), so D + t < 2^(q-1): below half an ulp
  } else if (sh <= 0) {
    kept = static_cast<std::uint64_t>(M << -sh);  // unreachable: b < q; kept exact
  } else {
    kept = static_cast<std::uint64_t>(M >> sh);
    const unsigned __int128 one = 1;
    const unsigned __int128 rem = M & ((one << sh) - 1);
    const unsigned __int128 half = one << (sh - 1);
    if (rem > half || (rem == half && (sticky || (kept & 1) != 0))) ++kept;
  }
  if (kept == 0) return T(0);
  // kept <= 2^Prec: the result kept * 2^q overflows only when its leading bit passes Emax.
  if (q + (64 - std::countl_zero(kept)) - 1 > Emax) return kInf;
  return std::ldexp(static_cast<T>(kept), q);  // exact: representable
}

}  // namespace

void ExactSum::normalise() {
  normalise_limbs(limb_);
  pending_ = 0;
}

void ExactSum::add(double x) {
  flags_ |= add_doubles(limb_.data(), &x, 1);
  if (++pending_ >= kAddsPerNormalise) normalise();
}

void ExactSum::add(float x) {
  flags_ |= add_floats(limb_.data(), &x, 1);
  if (++pending_ >= kAddsPerNormalise) normalise();
}

void ExactSum::add(const double* x, std::size_t n) {
  while (n != 0) {
    const std::size_t chunk =
        static_cast<std::size_t>(std::min<std::uint64_t>(n, kAddsPerNormalise - pending_));
    flags_ |= add_doubles(limb_.data(), x, chunk);
    x += chunk;
    n -= chunk;
    pending_ += chunk;
    if (pending_ >= kAddsPerNormalise) normalise();
  }
}

void ExactSum::add(const float* x, std::size_t n) {
  while (n != 0) {
    const std::size_t chunk =
        static_cast<std::size_t>(std::min<std::uint64_t>(n, kAddsPerNormalise - pending_));
    flags_ |= add_floats(limb_.data(), x, chunk);
    x += chunk;
    n -= chunk;
    pending_ += chunk;
    if (pending_ >= kAddsPerNormalise) normalise();
  }
}

ExactSum::Raw ExactSum::raw() const {
  Raw r;
  r.limb = limb_;
  normalise_limbs(r.limb);
  r.flags = flags_;
  return r;
}

void ExactSum::merge_raw(const std::int64_t* limbs, std::uint32_t flags) {
  normalise();  // own limbs in [0, 2^32) below the top
  for (int i = 0; i < kLimbs; ++i) limb_[i] += limbs[i];
  normalise();  // valid for |limbs[i]| <= 2^62
  flags_ |= flags;
}

void ExactSum::merge_raw(const Raw& r) { merge_raw(r.limb.data(), r.flags); }

void ExactSum::merge(const ExactSum& other) {
  if (&other == this) {
    const Raw r = other.raw();
    merge_raw(r);
    return;
  }
  Limbs o = other.limb_;
  normalise_limbs(o);
  merge_raw(o.data(), other.flags_);
}

// The exact sum divided by n, rounded once by round_magnitude; special values and zeros as
// the class comment says, n = 0 gives NaN.
template <int Prec, int Emin, int Emax, class T>
T ExactSum::round_to(std::uint64_t n) const {
  constexpr T kInf = std::numeric_limits<T>::infinity();
  if (n == 0 || (flags_ & kFlagNaN) != 0 ||
      (flags_ & (kFlagPosInf | kFlagNegInf)) == (kFlagPosInf | kFlagNegInf))
    return std::numeric_limits<T>::quiet_NaN();
  if ((flags_ & kFlagPosInf) != 0) return kInf;
  if ((flags_ & kFlagNegInf) != 0) return -kInf;

  Limbs l = limb_;
  normalise_limbs(l);
  const bool neg = l[kTop] < 0;
  if (neg) {
    for (auto& v : l) v = -v;
    normalise_limbs(l);
  }
  const Digits d = magnitude_digits(l);
  int top = kDigits - 1;
  while (top >= 0 && d[top] == 0) --top;
  if (top < 0) {  // exact zero
    const bool negzero = (flags_ & kFlagAny) != 0 && (flags_ & kFlagNotNegZero) == 0;
    return negzero ? -T(0) : T(0);
  }
  T r;
  if (n == 1) {
    r = round_magnitude<Prec, Emin, Emax, T>(d.data(), kDigits, kBaseExponent, false);
  } else {
    // Long division from the top digit down, on through kFracDigits digits below 2^-1074:
    // quotient digit j has weight 2^(32(j - kFracDigits) - 1074); what is left (rem < n)
    // is the sticky bit.
    std::array<std::uint32_t, kDigits + kFracDigits> qd{};
    std::uint64_t rem = 0;
    for (int j = top; j >= -kFracDigits; --j) {
      const unsigned __int128 cur =
          (static_cast<unsigned __int128>(rem) << 32) | (j >= 0 ? d[j] : std::uint32_t{0});
      qd[j + kFracDigits] = static_cast<std::uint32_t>(cur / n);  // < 2^32: rem < n
      rem = static_cast<std::uint64_t>(cur % n);
    }
    r = round_magnitude<Prec, Emin, Emax, T>(qd.data(), kDigits + kFracDigits,
                                             kBaseExponent - kDigitBits * kFracDigits, rem != 0);
  }
  return neg ? -r : r;
}

double ExactSum::to_double() const { return round_to<53, -1022, 1023, double>(1); }

float ExactSum::to_float() const { return round_to<24, -126, 127, float>(1); }

double ExactSum::quotient_to_double(std::uint64_t n) const {
  return round_to<53, -1022, 1023, double>(n);
}

float ExactSum::quotient_to_float(std::uint64_t n) const {
  return round_to<24, -126, 127, float>(n);
}

}  // namespace xr
