// Exact summation of floats: the sum of all inputs in infinite precision, rounded once.
// Method, limits and the state layout (for device partials): docs/exact.md.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "xreduce/export.hpp"

namespace xr {

// A fixed-point superaccumulator wide enough for every double from the smallest subnormal to
// the largest finite value, with headroom for more than 2^64 additions (see max_terms()).
// States merge in any order with the same result. Special values: any NaN gives NaN; +inf and
// -inf together give NaN; otherwise an infinity wins; an exact sum beyond the target type's
// range rounds to +-inf; the empty sum is +0; an exact zero is -0 only when every input
// was -0 (and there was at least one).
//
// State layout (the contract for partial states produced elsewhere, e.g. by GPU blocks):
//   value = sum_{i=0}^{kLimbs-1} limb[i] * 2^(kDigitBits*i + kBaseExponent)
// with limb[i] signed 64-bit integers in carry-save form (any values; a normalised state has
// limb[i] in [0, 2^32) for i < kLimbs-1 and the sign in the top limb), plus OR-combinable
// flag bits (kFlag*). A double x = m * 2^e (m < 2^53 integer, e >= -1074) is added by
// splitting m << ((e+1074) % 32) into three 32-bit digits added to limbs (e+1074)/32 + {0,1,2};
// a float into two. Since |digit| < 2^32, a limb may take 2^30 additions between
// normalisations.
class XR_API ExactSum {
 public:
  static constexpr int kLimbs = 68;            // 68 * 32 = 2176 bits >= 2098 + 64 headroom
  static constexpr int kDigitBits = 32;        // digit bits per limb (weight step)
  static constexpr int kBaseExponent = -1074;  // weight of bit 0 of limb 0: 2^-1074
  // Additions into one state (or one raw partial) between carry propagations; a device
  // partial must not add more than this many digits into any one limb before export.
  static constexpr std::uint64_t kAddsPerNormalise = std::uint64_t{1} << 30;

  // Flag bits, merged by OR.
  static constexpr std::uint32_t kFlagNaN = 1u;          // a NaN was added
  static constexpr std::uint32_t kFlagPosInf = 2u;       // +inf was added
  static constexpr std::uint32_t kFlagNegInf = 4u;       // -inf was added
  static constexpr std::uint32_t kFlagAny = 8u;          // at least one term was added
  static constexpr std::uint32_t kFlagNotNegZero = 16u;  // a term other than -0 was added

  // The largest number of terms (in total over all merged states) this accumulator takes
  // without overflow: every count that fits in 64 bits (the real bound is 2^109 terms of
  // magnitude below 2^1024; docs/exact.md).
  static constexpr std::uint64_t max_terms() { return ~std::uint64_t{0}; }

  // Raw state, for export to and import from other producers (device partials).
  struct Raw {
    std::array<std::int64_t, kLimbs> limb{};
    std::uint32_t flags = 0;
  };

  void add(double x);
  void add(float x);
  void add(const double* x, std::size_t n);
  void add(const float* x, std::size_t n);
  void merge(const ExactSum& other);
  double to_double() const;  // round to nearest, ties to even
  float to_float() const;    // round to nearest, ties to even, directly from the exact value
  // The exact sum divided by n (n >= 1), rounded once to nearest, ties to even: the correctly
  // rounded mean of the terms when n is their count. Special values as to_double/to_float
  // (NaN; inf/n = inf; an exact zero keeps its sign). n = 0 gives NaN (the mean of nothing).
  double quotient_to_double(std::uint64_t n) const;
  float quotient_to_float(std::uint64_t n) const;

  // The state, normalised (limb[i] in [0, 2^32) below the top limb, which carries the sign).
  Raw raw() const;
  // Merges a raw partial state: limbs in carry-save form with |limb[i]| <= 2^62, flags as above.
  void merge_raw(const Raw& r);
  void merge_raw(const std::int64_t* limbs, std::uint32_t flags);
  // Back to the empty sum.
  void clear() { *this = ExactSum{}; }

 private:
  std::array<std::int64_t, kLimbs> limb_{};
  std::uint64_t pending_ = 0;  // additions since the last carry propagation
  std::uint32_t flags_ = 0;
  void normalise();
  // The exact sum divided by n, rounded once (n = 1: the sum itself).
  template <int Prec, int Emin, int Emax, class T>
  T round_to(std::uint64_t n) const;
};

}  // namespace xr
