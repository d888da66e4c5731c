#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "regions.hpp"
#include "xreduce/buffer.hpp"
#include "xreduce/error.hpp"

namespace xr {

HostBuffer::HostBuffer(DType type, std::uint64_t n) : type_(type), n_(n) {
  if (n > std::numeric_limits<std::uint64_t>::max() / 16)
    throw InvalidArgument("host buffer of " + std::to_string(n) + " elements is too large");
  const std::uint64_t bytes = (n * size_of(type) + 63) / 64 * 64;
  if (bytes == 0) return;
  void* p = std::aligned_alloc(64, bytes);
  if (!p)
    throw Error("host allocation of " + std::to_string(bytes) + " bytes (" + std::to_string(n) + " " +
                std::string(to_string(type)) + ") failed");
  data_.reset(p);
}

std::uint64_t host_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return std::uint64_t{1} << 35;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
}

void HostBuffer::Free::operator()(void* p) const { std::free(p); }

namespace {

// SplitMix64: a counter-based generator, so element i needs no state from element i - 1.
constexpr std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

struct ElementRandom {
  std::uint64_t seed;            // mixed
  std::uint64_t special_family;  // Dist::Special: which special values (the raw seed % kSpecialFamilies)
  std::uint64_t bits(std::uint64_t i, std::uint64_t stream) const {
    return mix(seed ^ mix(i * 4 + stream));
  }
  double unit(std::uint64_t i, std::uint64_t stream) const {  // [0, 1), 53 random bits
    return static_cast<double>(bits(i, stream) >> 11) * 0x1.0p-53;
  }
};

// Dist::Special for floats: the kinds of special values each family (seed % 5) mixes in. Each
// is chosen so that every op has one result whatever the order of evaluation: a NaN, or an
// infinity of one sign with a zero (every order sums to that infinity, and multiplies to NaN),
// or a single value of the largest magnitude among factors at most 1 with a zero (no partial sum
// or product overflows; every product is 0), or tiny values alone (every product of two is 0).
enum class Special : std::uint8_t { Nan, Infinity, Largest, Tiny, NegativeZero };
constexpr std::uint64_t kSpecialFamilies = 5;

// A double in the float type T (f16 and bf16 through float).
template <class T> T from_double(double v) {
  if constexpr (is_half_v<T>) return T(static_cast<float>(v));
  else return static_cast<T>(v);
}

// Computed in C (float for f16 and bf16, T itself otherwise), from T's own limits.
template <class T> T special_float(const ElementRandom& rng, std::uint64_t i, std::uint64_t n, T ordinary) {
  using C = compute_t<T>;
  using L = std::numeric_limits<T>;
  const C inf = C(L::infinity()), max = C(L::max()), min = C(L::min()), denorm = C(L::denorm_min());
  // One draw per element: bits 0-1 special or not, 2-7 which kind, 8 the sign, 9 and up a
  // subnormal's significand. Elements `first` and `second` are always the family's own values.
  const std::uint64_t b = rng.bits(i, 2);
  const C sign = (b >> 8) & 1 ? C(-1) : C(1);
  const C family_sign = rng.bits(2, 3) & 1 ? C(-1) : C(1);
  const std::uint64_t first = rng.bits(0, 3) % n;
  const bool second = n > 1 && i == (first + 1 + rng.bits(1, 3) % (n - 1)) % n;
  const C subnormal = sign * static_cast<C>(1 + (b >> 9) % ((std::uint64_t{1} << (L::digits - 1)) - 1)) * denorm;
  const C zero = sign * C(0);
  const bool special = (b & 3) == 0;
  const std::uint64_t kind = b >> 2 & 63;
  const auto value = [&]() -> C {
    switch (static_cast<Special>(rng.special_family)) {
      case Special::Nan: {
        if (i == first) return C(L::quiet_NaN());
        if (!special) return C(ordinary);
        const C any[] = {C(L::quiet_NaN()), inf, -inf, zero, subnormal, sign * max, sign * min};
        return any[kind % std::size(any)];
      }
      case Special::Infinity:
        if (i == first) return family_sign * inf;
        if (second) return zero;
        if (!special) return C(ordinary);
        return kind % 3 == 0 ? family_sign * inf : kind % 3 == 1 ? zero : subnormal;
      case Special::Largest:
        if (i == first) return family_sign * max;
        if (second) return zero;
        if (!special) return C(ordinary);
        return kind % 2 ? zero : subnormal;
      case Special::Tiny: return kind % 3 == 0 ? zero : kind % 3 == 1 ? subnormal : sign * min;
      case Special::NegativeZero: break;
    }
    return -C(0);
  };
  return T(value());
}

// Dist::Special for integers: the type's limits, 0 and +-1 among uniform values (integer
// reductions wrap, so any order gives one result).
template <class T> T special_integer(const ElementRandom& rng, std::uint64_t i, T ordinary) {
  using L = std::numeric_limits<T>;
  const std::uint64_t b = rng.bits(i, 2);
  if ((b & 3) != 0) return ordinary;
  const T kinds[] = {L::lowest(), L::max(), T(0), T(-1), T(1), static_cast<T>(L::lowest() + 1), static_cast<T>(L::max() - 1)};
  return kinds[(b >> 2) % std::size(kinds)];
}

constexpr double kCancelMagnitude = 1048576.0, kCancelMagnitudeF16 = 1024.0;  // 2^20, 2^10
// Dist::Wide: binary exponents in [-top, top]; 2^996 is about 1e300; f32 and bf16 stop at 2^96
// (about 8e28), so that a sum of 2^31 of them stays finite; f16 at 2^14, below its largest
// finite value (65504).
constexpr int kWideTop64 = 996, kWideTop32 = 96, kWideTopF16 = 14;
// Dist::Spread: the same with [-top, top] of 2^100 (about 1e30) for f64, 2^48 for f32 and bf16,
// 2^7 for f16.
constexpr int kSpreadTop64 = 100, kSpreadTop32 = 48, kSpreadTopF16 = 7;
// Dist::Cancel: pairs of +-kCancelMagnitude (f16: +-kCancelMagnitudeF16) cancel exactly.
// Few enough factors of 2 and 1/2 that no partial product over- or underflows a float in any
// order; integer products wrap, which is order-independent anyway.
constexpr std::uint64_t kProductTwos = 40, kProductHalves = 30;
constexpr std::uint64_t kIntProductTwos = 20, kIntProductThrees = 10;

template <class T> T element(Dist dist, const ElementRandom& rng, std::uint64_t i, std::uint64_t n) {
  constexpr bool is_fp = is_float_v<T>;
  const auto uniform = [&](std::uint64_t stream) -> T {
    if constexpr (is_fp) {
      if constexpr (sizeof(T) <= 4) return from_double<T>((rng.bits(i, stream) >> 40) * 0x1.0p-23 - 1.0);
      else return static_cast<T>(rng.unit(i, stream) * 2.0 - 1.0);
    } else {
      // [-1000, 1000] for signed types, [0, 2000] for unsigned ones, narrowed to the type.
      constexpr std::uint64_t limit = std::numeric_limits<T>::max(), most = std::is_signed_v<T> ? 1000 : 2000;
      constexpr auto top = static_cast<std::int64_t>(std::min(limit, most));
      constexpr std::int64_t bottom = std::is_signed_v<T> ? -top : 0;
      return static_cast<T>(bottom + static_cast<std::int64_t>(rng.bits(i, stream) % static_cast<std::uint64_t>(top - bottom + 1)));
    }
  };
  // An integer in T: clamped to its range, |v| for unsigned types.
  const auto integer = [](std::int64_t v) -> T {
    if constexpr (std::is_unsigned_v<T>) v = v < 0 ? -v : v;
    if constexpr (std::is_integral_v<T> && sizeof(T) < 8)
      v = std::clamp<std::int64_t>(v, std::numeric_limits<T>::lowest(), std::numeric_limits<T>::max());
    return static_cast<T>(v);
  };
  switch (dist) {
    case Dist::Uniform: return uniform(0);
    case Dist::Normal: {
      const double u1 = 1.0 - rng.unit(i, 0), u2 = rng.unit(i, 1);
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
      if constexpr (is_fp) return from_double<T>(z);
      else return integer(std::llround(z * 100.0));
    }
    case Dist::Ones: return T(1);
    case Dist::Cancel: {
      // Elements 2k and 2k+1 carry +-2^20 with opposite signs: they cancel exactly.
      const double sign = (rng.bits(i / 2, 2) & 1) ? 1.0 : -1.0;
      const double big = (i % 2 == 0 ? sign : -sign) * (std::is_same_v<T, f16> ? kCancelMagnitudeF16 : kCancelMagnitude);
      if constexpr (is_fp) return from_double<T>(big + static_cast<double>(uniform(3)));
      else return static_cast<T>(static_cast<std::int64_t>(big) + uniform(3));  // wraps in narrow types
    }
    case Dist::Special:
      if constexpr (is_fp) return special_float<T>(rng, i, n, uniform(0));
      else return special_integer<T>(rng, i, uniform(0));
    case Dist::Wide:
    case Dist::Spread: {
      const bool wide = dist == Dist::Wide;
      const double sign = (rng.bits(i, 2) & 1) ? 1.0 : -1.0;
      if constexpr (is_fp) {
        const int top = std::is_same_v<T, f16> ? (wide ? kWideTopF16 : kSpreadTopF16)
                        : sizeof(T) <= 4      ? (wide ? kWideTop32 : kSpreadTop32)
                                              : (wide ? kWideTop64 : kSpreadTop64);
        const int e = static_cast<int>(rng.bits(i, 0) % static_cast<std::uint64_t>(2 * top + 1)) - top;
        return from_double<T>(sign * std::ldexp(1.0 + rng.unit(i, 1), e));
      } else {
        const std::uint64_t bits = wide ? 8 * sizeof(T) - 1 : 4 * sizeof(T);
        const auto k = static_cast<int>(rng.bits(i, 0) % bits);
        return static_cast<T>(static_cast<std::int64_t>(sign) * (std::int64_t{1} << k));
      }
    }
    case Dist::ExactProduct: break;
  }
  const std::uint64_t stride = n / 64 > 2 ? n / 64 : 3;
  if (i % stride == 1 && i / stride < (is_fp ? kProductTwos : kIntProductTwos)) return T(2);
  if (i % stride == 2 && i / stride < (is_fp ? kProductHalves : kIntProductThrees)) {
    if constexpr (is_fp) return T(0.5f);
    else return T(3);
  }
  return (rng.bits(i, 1) & 1) ? T(1) : T(-1);
}

}  // namespace

std::string_view to_string(Dist d) {
#define XR_DIST_NAME(e, name) name,
  static constexpr std::string_view names[] = {XR_DISTS(XR_DIST_NAME)};
#undef XR_DIST_NAME
  return names[static_cast<std::size_t>(d)];
}

Dist parse_dist(std::string_view text) {
  std::string known;
  for (Dist d : all_dists) {
    if (text == to_string(d)) return d;
    known += (known.empty() ? "" : ", ") + std::string(to_string(d));
  }
  throw InvalidArgument("unknown distribution '" + printable(text) + "' (expected " + known + ")");
}

HostBuffer generate(DType type, std::uint64_t n, Dist dist, std::uint64_t seed) {
  return generate_slice(type, n, 0, n, dist, seed);
}

HostBuffer generate_slice(DType type, std::uint64_t total, std::uint64_t first, std::uint64_t count, Dist dist,
                          std::uint64_t seed) {
  if (first > total || count > total - first)
    throw InvalidArgument("generate: elements [" + std::to_string(first) + ", " + std::to_string(first) + " + " +
                          std::to_string(count) + ") lie beyond the " + std::to_string(total) + " of the sequence");
  HostBuffer buf(type, count);
  const ElementRandom rng{mix(seed), seed % kSpecialFamilies};
  visit_dtype(type, [&](auto zero) {
    using T = decltype(zero);
    T* out = buf.as<T>();
    const auto len = static_cast<std::int64_t>(count);
    detail::RegionErrors errors;
#pragma omp parallel
    {
      errors.enter(detail::Region::CoreGenerate);
#pragma omp for schedule(static)
      for (std::int64_t i = 0; i < len; ++i)
        out[i] = element<T>(dist, rng, first + static_cast<std::uint64_t>(i), total);
    }
    errors.rethrow();
  });
  return buf;
}

}  // namespace xr
