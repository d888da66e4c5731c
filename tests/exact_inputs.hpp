// Inputs and bit helpers shared by the exact-mode tests (tests/test_exact_device.cpp,
// tests/opencl/test_opencl_exact.cpp): adversarial float data for the exact front ends.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

namespace xr::test_inputs {

template <class T> auto bits(T x) {
  std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t> b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

template <class T> T from_bits(decltype(bits(T{})) b) {
  T x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// Same bits, NaNs of any payload equal (ExactSum returns the default quiet NaN anyway).
template <class T> bool same_bits(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return bits(a) == bits(b);
}

// Random finite values of any exponent (random bit patterns, inf/NaN redrawn).
template <class T> std::vector<T> random_bits(std::size_t n, std::mt19937_64& g) {
  std::vector<T> v(n);
  for (auto& x : v) {
    do {
      x = from_bits<T>(static_cast<decltype(bits(T{}))>(g()));
    } while (!std::isfinite(x));
  }
  return v;
}

// Values whose exponents lie within `span` binades below 2^top, full random significands and
// signs: exercises the window edges of the fast front ends.
template <class T> std::vector<T> exponent_band(std::size_t n, int top, int span, std::mt19937_64& g) {
  std::vector<T> v(n);
  std::uniform_int_distribution<int> e(top - span, top);
  std::uniform_real_distribution<T> m(T(1), T(2));
  for (auto& x : v) x = std::ldexp(m(g), e(g) - 1) * ((g() & 1) ? T(1) : T(-1));
  return v;
}

// Random subnormals of either sign.
template <class T> std::vector<T> subnormals(std::size_t n, std::mt19937_64& g) {
  const int mant = sizeof(T) == 4 ? 23 : 52;
  std::vector<T> v(n);
  for (auto& x : v) {
    const auto m = static_cast<decltype(bits(T{}))>(g() & ((decltype(bits(T{})){1} << mant) - 1));
    x = from_bits<T>(m) * ((g() & 1) ? T(1) : T(-1));
  }
  return v;
}

// The special-value cases of exact mode: signed zeros, infinities, NaN, overflow and
// cancellation at the top of the range.
template <class T> std::vector<std::vector<T>> special_value_cases() {
  constexpr T inf = std::numeric_limits<T>::infinity();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T big = std::numeric_limits<T>::max();
  return {
      {},         {T(0)},       {T(-0.0)},   {T(-0.0), T(-0.0)}, {T(-0.0), T(0)},  {T(1), T(-1)},
      {nan},      {inf},        {-inf},      {inf, -inf},        {inf, T(1), nan}, {-inf, big, big},
      {big, big}, {-big, -big}, {big, big, -big},
  };
}

}  // namespace xr::test_inputs
