// Element types, operations and the scalar that carries a result of any of them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "xreduce/export.hpp"

namespace xr {

enum class Op : std::uint8_t { Sum, Prod, Min, Max };
enum class DType : std::uint8_t { I32, I64, F32, F64 };

inline constexpr std::array<Op, 4> all_ops{Op::Sum, Op::Prod, Op::Min, Op::Max};
inline constexpr std::array<DType, 4> all_dtypes{DType::I32, DType::I64, DType::F32, DType::F64};

// Which accumulator an i32 sum uses. Wide (the default) accumulates in i64, so the sum of
// up to 2^32 i32 values is exact; Native keeps the i32 accumulator of the reference kernels
// and wraps modulo 2^32. Other (op, type) pairs ignore it.
enum class Accumulator : std::uint8_t { Wide, Native };

XR_API std::string_view to_string(Op op);
XR_API std::string_view to_string(DType type);
XR_API std::string_view to_string(Accumulator acc);
// Case-insensitive; accepts "sum|add|+", "prod|product|mul|*", "min", "max" and
// "i32|int32|int", "i64|int64|long", "f32|float32|float", "f64|float64|double".
// Throws InvalidArgument naming the accepted spellings.
XR_API Op parse_op(std::string_view text);
XR_API DType parse_dtype(std::string_view text);

// "512 B", "64.0 MiB", "1.5 GiB".
XR_API std::string format_bytes(std::uint64_t bytes);
// "4096", "256K", "256M", "1G", "1.5G", "64MiB", "2GB" (K/M/G/T are powers of 1024, with or
// without "iB"/"B"); throws InvalidArgument for anything else, zero or an overflow.
XR_API std::uint64_t parse_bytes(std::string_view text);

constexpr std::size_t size_of(DType t) {
  return (t == DType::I32 || t == DType::F32) ? 4 : 8;
}
constexpr bool is_float(DType t) { return t == DType::F32 || t == DType::F64; }

template <class T> struct dtype_of_t;
template <> struct dtype_of_t<std::int32_t> { static constexpr DType value = DType::I32; };
template <> struct dtype_of_t<std::int64_t> { static constexpr DType value = DType::I64; };
template <> struct dtype_of_t<float> { static constexpr DType value = DType::F32; };
template <> struct dtype_of_t<double> { static constexpr DType value = DType::F64; };
template <class T> inline constexpr DType dtype_of = dtype_of_t<std::remove_cv_t<T>>::value;

// The type a reduction produces: i32 sums give i64 with the Wide accumulator; every other
// (op, type) pair gives the input type.
constexpr DType result_dtype(Op op, DType in, Accumulator acc = Accumulator::Wide) {
  return (op == Op::Sum && in == DType::I32 && acc == Accumulator::Wide) ? DType::I64 : in;
}

// Calls f(T{}) with T the C++ type of `t`: one switch instead of one per caller.
template <class F> decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::I32: return f(std::int32_t{});
    case DType::I64: return f(std::int64_t{});
    case DType::F32: return f(float{});
    case DType::F64: break;
  }
  return f(double{});
}

// A value of any DType. Integers live in `i`, floats in `f` (an f32 widens to f64 exactly).
struct XR_API Scalar {
  DType type = DType::I64;
  std::int64_t i = 0;
  double f = 0.0;

  template <class T> static Scalar of(T v) {
    Scalar s;
    s.type = dtype_of<T>;
    if constexpr (std::is_floating_point_v<T>) s.f = static_cast<double>(v);
    else s.i = static_cast<std::int64_t>(v);
    return s;
  }
  template <class T> T as() const {
    if constexpr (std::is_floating_point_v<T>) return static_cast<T>(is_float(type) ? f : static_cast<double>(i));
    else return static_cast<T>(is_float(type) ? static_cast<std::int64_t>(f) : i);
  }
  double to_double() const { return is_float(type) ? f : static_cast<double>(i); }
  // Shortest text that reads back to the same value (integers exactly, floats round-trip).
  std::string to_string() const;
  // Same type and same bits (NaNs of any payload count as equal; -0 and +0 differ).
  bool same_bits(const Scalar& other) const;
};

}  // namespace xr
