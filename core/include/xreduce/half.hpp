// The 16-bit float element types: f16 (IEEE 754 binary16) and bf16 (bfloat16, the upper half
// of a binary32). Each is its bits, converts exactly to float, and from float with rounding to
// nearest, ties to even (NaN stays NaN, with its sign and the top of its payload). Comparisons
// and arithmetic go through float: reductions of them compute in f32 (xreduce/types.hpp).
// Usable in CUDA device code: there the conversions are the hardware's.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "xreduce/export.hpp"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

#if defined(__CUDACC__)
#define XR_HOST_DEVICE __host__ __device__
#else
#define XR_HOST_DEVICE
#endif

namespace xr {

namespace half_detail {

XR_HOST_DEVICE constexpr std::uint32_t bits_of(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return std::bit_cast<std::uint32_t>(f);
#endif
}
XR_HOST_DEVICE constexpr float float_of(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  return std::bit_cast<float>(u);
#endif
}

// binary16 bits -> float, exactly. Every case is computed and one kept by masks, without a
// branch or a conditional float operation, so that loops over it vectorise (g++ 12 leaves the
// branching form scalar: half the rate on one core of an EPYC).
XR_HOST_DEVICE constexpr float f16_to_float(std::uint16_t h) {
  constexpr std::uint32_t kExp = 0x7c00u << 13;
  const std::uint32_t o = (std::uint32_t(h) & 0x7fffu) << 13;  // exponent and significand, in place
  const std::uint32_t exp = o & kExp;
  const std::uint32_t normal = o + ((127u - 15u) << 23);           // rebias
  const std::uint32_t top = normal + ((128u - 16u) << 23);         // inf, NaN: the top exponent, payload kept
  const std::uint32_t small = bits_of(float_of(o + (113u << 23)) - float_of(113u << 23));  // zero, subnormal: m * 2^-24
  const std::uint32_t is_top = 0u - std::uint32_t(exp == kExp), is_small = 0u - std::uint32_t(exp == 0);
  const std::uint32_t r = (((top & is_top) | (normal & ~is_top)) & ~is_small) | (small & is_small);
  return float_of(r | (std::uint32_t(h) & 0x8000u) << 16);
}

// float -> binary16 bits, rounded to nearest, ties to even.
XR_HOST_DEVICE constexpr std::uint16_t f16_from_float(float f) {
  const std::uint32_t u = bits_of(f), a = u & 0x7fffffffu;
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  if (a > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // quiet NaN
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  if (a >= 0x38800000u) {                                                     // normal (>= 2^-14)
    std::uint32_t h = (a - 0x38000000u) >> 13;
    const std::uint32_t rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  if (a <= 0x33000000u) return sign;  // <= 2^-25: rounds to zero (2^-25 is the tie, even is 0)
  // Subnormal result: the value in units of 2^-24, the 24-bit significand shifted right.
  const std::uint32_t m = (a & 0x7fffffu) | 0x800000u, shift = 126u - (a >> 23);
  std::uint32_t h = m >> shift;
  const std::uint32_t rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

XR_HOST_DEVICE constexpr float bf16_to_float(std::uint16_t b) { return float_of(std::uint32_t(b) << 16); }

XR_HOST_DEVICE constexpr std::uint16_t bf16_from_float(float f) {
  const std::uint32_t u = bits_of(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace half_detail

// A 16-bit float: its bits, and Tag's conversions to_float and from_float.
// Trivial (no member initialiser), so that CUDA shared memory can hold it. Exported (XR_API),
// with its tags: the library's templates instantiated for it (xr::cuda::reduce<f16>) would
// otherwise take its hidden visibility.
template <class Tag> struct XR_API half_float {
  std::uint16_t bits;

  half_float() = default;
  XR_HOST_DEVICE constexpr explicit half_float(float v) : bits(Tag::from_float(v)) {}
  XR_HOST_DEVICE constexpr operator float() const { return Tag::to_float(bits); }
  XR_HOST_DEVICE constexpr half_float operator-() const { return from_bits(static_cast<std::uint16_t>(bits ^ 0x8000u)); }
  XR_HOST_DEVICE static constexpr half_float from_bits(std::uint16_t b) {
    half_float h;
    h.bits = b;
    return h;
  }
};

struct XR_API f16_tag {
  XR_HOST_DEVICE static constexpr float to_float(std::uint16_t b) {
#if defined(__CUDA_ARCH__)
    return __half2float(__ushort_as_half(b));
#else
    return half_detail::f16_to_float(b);
#endif
  }
  XR_HOST_DEVICE static constexpr std::uint16_t from_float(float f) {
#if defined(__CUDA_ARCH__)
    return __half_as_ushort(__float2half_rn(f));
#else
    return half_detail::f16_from_float(f);
#endif
  }
};
struct XR_API bf16_tag {
  XR_HOST_DEVICE static constexpr float to_float(std::uint16_t b) { return half_detail::bf16_to_float(b); }
  XR_HOST_DEVICE static constexpr std::uint16_t from_float(float f) { return half_detail::bf16_from_float(f); }
};

using f16 = half_float<f16_tag>;
using bf16 = half_float<bf16_tag>;

template <class T> inline constexpr bool is_half_v = false;
template <> inline constexpr bool is_half_v<f16> = true;
template <> inline constexpr bool is_half_v<bf16> = true;

// Float element types: the built-in ones and the 16-bit ones.
template <class T> inline constexpr bool is_float_v = std::is_floating_point_v<T> || is_half_v<T>;

// The type host code computes T in: float for f16 and bf16, T itself otherwise.
template <class T> using compute_t = std::conditional_t<is_half_v<T>, float, T>;

}  // namespace xr

// numeric_limits of the 16-bit floats, so that generic code finds their infinity, limits and NaN.
template <class Tag> class std::numeric_limits<xr::half_float<Tag>> {
  using H = xr::half_float<Tag>;
  static constexpr bool is_f16 = std::is_same_v<Tag, xr::f16_tag>;

 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr bool is_iec559 = is_f16;
  static constexpr int digits = is_f16 ? 11 : 8;
  static constexpr int radix = 2;
  static constexpr int min_exponent = is_f16 ? -13 : -125;
  static constexpr int max_exponent = is_f16 ? 16 : 128;
  XR_HOST_DEVICE static constexpr H infinity() { return H::from_bits(is_f16 ? 0x7c00 : 0x7f80); }
  XR_HOST_DEVICE static constexpr H quiet_NaN() { return H::from_bits(is_f16 ? 0x7e00 : 0x7fc0); }
  XR_HOST_DEVICE static constexpr H max() { return H::from_bits(is_f16 ? 0x7bff : 0x7f7f); }
  XR_HOST_DEVICE static constexpr H lowest() { return H::from_bits(is_f16 ? 0xfbff : 0xff7f); }
  XR_HOST_DEVICE static constexpr H min() { return H::from_bits(is_f16 ? 0x0400 : 0x0080); }
  XR_HOST_DEVICE static constexpr H denorm_min() { return H::from_bits(0x0001); }
  XR_HOST_DEVICE static constexpr H epsilon() { return H::from_bits(is_f16 ? 0x1400 : 0x3c00); }
};
