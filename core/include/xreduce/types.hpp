// Element types, operations and the scalar that carries a result of any of them.
#pragma once

#include <array>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "xreduce/export.hpp"
#include "xreduce/half.hpp"

namespace xr {

// What one reduction by an op gives.
enum class OpKind : std::uint8_t {
  Fold,     // one value, two of which combine into one (OpFn in xreduce/semantics.hpp)
  Located,  // a value and the index of its first occurrence (Located<T>, PairFn)
  Bounds,   // the min and the max (Bounds<T>, PairFn)
};

// The ops, one row each: enumerator, name, kind, the other spellings parse_op accepts ("|"
// between them), whether a reduction of no elements has a value (empty_value in
// xreduce/semantics.hpp; the others throw EmptyInput). The folds first, then the pair ops.

// The folds. What each means (identity, how two values combine, NaN) is its OpFn in
// xreduce/semantics.hpp.
#define XR_OPS(X)                              \
  X(Sum, "sum", Fold, "add|+", true)           \
  X(Prod, "prod", Fold, "product|mul|*", true) \
  X(Min, "min", Fold, "", false)               \
  X(Max, "max", Fold, "", false)

// The pair ops: each returns two things of one read of the data, argmin and argmax the extreme
// value and the index of its first occurrence, minmax the min and the max. What each means is
// its PairFn in xreduce/semantics.hpp.
#define XR_PAIR_OPS(X)                    \
  X(ArgMin, "argmin", Located, "", false) \
  X(ArgMax, "argmax", Located, "", false) \
  X(MinMax, "minmax", Bounds, "", false)

// What a mapped op does to each element before its fold (map_element in xreduce/semantics.hpp).
enum class ElementMap : std::uint8_t {
  None,     // the element as it is: the folds and the pair ops
  Abs,      // |x|: -0 to +0, NaN stays NaN; integers wrap (|lowest| is lowest)
  Square,   // x * x, rounded once (floats) or wrapped (integers) in the accumulator
  SkipNaN,  // a NaN becomes +0 in a sum (as NumPy's nansum), the identity in min and max
  NonZero,  // 1 where x != 0 (NaN counts), else 0
  Convert,  // the element in the accumulator's type, nothing more (mean: integers in f64)
};

// What a mapped op's folded value goes through last (finalize_value in xreduce/semantics.hpp).
// The partial results, chunk cells and MPI ranks combine before it, by the fold alone.
enum class Finalize : std::uint8_t {
  None,           // the folded value as it is
  DivideByCount,  // divided by the count of elements (of the segment), rounded once: mean
  IsPositive,     // 1 where the folded count is above 0, else 0: any
  EqualsCount,    // 1 where the folded count is the count of elements (of the segment), else 0: all
};

// The mapped ops: a map of each element, then a fold of the mapped values (the partial results
// then combine by the fold alone). Columns as XR_OPS, then the fold and the map. sumsq, asum
// and nansum accumulate as sum does (f16 and bf16 in f32, narrow integers in 64 bits),
// count_nonzero in i64; nanmin and nanmax return the input type, and NaN where every element is
// NaN (as NumPy); mean is the sum divided by the count, of floats in the sum's accumulator
// (f16 and bf16 in f32), of integers in f64 (as NumPy's mean), NaN for no elements; any and all
// test count_nonzero's count (any: above 0; all: every element), 1 or 0 in i64 (any of nothing
// 0, all of nothing 1, as NumPy's; NaN is nonzero there too). The last
// column: what the folded value goes through (Finalize). New rows go last: the enumerators'
// values are part of the ABI.
#define XR_MAPPED_OPS(X)                                                                   \
  X(SumSq, "sumsq", Fold, "sum_squares", true, Sum, Square, None)                          \
  X(ASum, "asum", Fold, "sum_abs", true, Sum, Abs, None)                                   \
  X(NanSum, "nansum", Fold, "", true, Sum, SkipNaN, None)                                  \
  X(NanMin, "nanmin", Fold, "", false, Min, SkipNaN, None)                                 \
  X(NanMax, "nanmax", Fold, "", false, Max, SkipNaN, None)                                 \
  X(CountNonzero, "count_nonzero", Fold, "nnz|nonzero", true, Sum, NonZero, None)          \
  X(Mean, "mean", Fold, "average|avg", true, Sum, Convert, DivideByCount)                  \
  X(Any, "any", Fold, "", true, Sum, NonZero, IsPositive)                                  \
  X(All, "all", Fold, "", true, Sum, NonZero, EqualsCount)

// The element types, one row each: enumerator, C++ type, name, .npy descr (little-endian; bf16
// has none). Everything else about a type (size, float or integer, limits, the accumulator of
// its sum) follows from its C++ type: see accumulator_t below. New rows go last: the
// enumerators' values are part of the ABI.
#define XR_ELEMENT_TYPES(X)            \
  X(I32, std::int32_t, "i32", "<i4")   \
  X(I64, std::int64_t, "i64", "<i8")   \
  X(F32, float, "f32", "<f4")          \
  X(F64, double, "f64", "<f8")         \
  X(I8, std::int8_t, "i8", "|i1")      \
  X(U8, std::uint8_t, "u8", "|u1")     \
  X(U32, std::uint32_t, "u32", "<u4")  \
  X(U64, std::uint64_t, "u64", "<u8")  \
  X(F16, xr::f16, "f16", "<f2")        \
  X(BF16, xr::bf16, "bf16", "")

#define XR_ENUMERATOR(e, ...) e,
enum class Op : std::uint8_t { XR_OPS(XR_ENUMERATOR) XR_PAIR_OPS(XR_ENUMERATOR) XR_MAPPED_OPS(XR_ENUMERATOR) };
enum class DType : std::uint8_t { XR_ELEMENT_TYPES(XR_ENUMERATOR) };
#undef XR_ENUMERATOR

#define XR_QUALIFIED(e, ...) Op::e,
inline constexpr std::array all_ops{XR_OPS(XR_QUALIFIED) XR_PAIR_OPS(XR_QUALIFIED) XR_MAPPED_OPS(XR_QUALIFIED)};
// The folds of raw elements: what every rung takes.
inline constexpr std::array fold_ops{XR_OPS(XR_QUALIFIED)};
inline constexpr std::array pair_ops{XR_PAIR_OPS(XR_QUALIFIED)};
inline constexpr std::array mapped_ops{XR_MAPPED_OPS(XR_QUALIFIED)};
// The folds and the pair ops: every op but the mapped ones.
inline constexpr std::array unmapped_ops{XR_OPS(XR_QUALIFIED) XR_PAIR_OPS(XR_QUALIFIED)};
// The folds and the mapped ops: every op whose value is one fold of (mapped) elements.
inline constexpr std::array folding_ops{XR_OPS(XR_QUALIFIED) XR_MAPPED_OPS(XR_QUALIFIED)};
#undef XR_QUALIFIED
#define XR_QUALIFIED(e, ...) DType::e,
inline constexpr std::array all_dtypes{XR_ELEMENT_TYPES(XR_QUALIFIED)};
#undef XR_QUALIFIED
// The element types of the classic rungs (the shared-memory trees of the CUDA and OpenCL
// ladders, CUDA's nested launches): the four those ladders were measured on. What they teach
// does not change with the type, and each type costs each of them a kernel per op to build; the
// modern rungs, auto and the baselines take every type.
inline constexpr std::array classic_dtypes{DType::I32, DType::I64, DType::F32, DType::F64};
inline constexpr std::size_t kOpCount = all_ops.size();
inline constexpr std::size_t kFoldCount = fold_ops.size();
inline constexpr std::size_t kDTypeCount = all_dtypes.size();

// A row of the op table, for code that needs an op's facts at run time.
struct OpInfo {
  Op op;
  std::string_view name;     // "sum"
  OpKind kind;
  std::string_view aliases;  // the other spellings parse_op accepts, "|" between them: "add|+"
  bool empty_has_value;      // a reduction of no elements gives empty_value (else EmptyInput)
  Op fold;                   // what combines the (mapped) elements: the op itself but for mapped ops
  ElementMap map;            // what each element goes through first: None but for mapped ops
  Finalize finalize;         // what the folded value goes through last: None but for mean, any, all
};

#define XR_OP_INFO(e, name, kind, aliases, empty_has_value) \
  OpInfo{Op::e, name, OpKind::kind, aliases, empty_has_value, Op::e, ElementMap::None, Finalize::None},
#define XR_MAPPED_OP_INFO(e, name, kind, aliases, empty_has_value, fold, map, finalize) \
  OpInfo{Op::e, name, OpKind::kind, aliases, empty_has_value, Op::fold, ElementMap::map, Finalize::finalize},
inline constexpr OpInfo op_table[] = {XR_OPS(XR_OP_INFO) XR_PAIR_OPS(XR_OP_INFO) XR_MAPPED_OPS(XR_MAPPED_OP_INFO)};
#undef XR_MAPPED_OP_INFO
#undef XR_OP_INFO
#define XR_FOLD_ROW(e, name, kind, ...) \
  static_assert(OpKind::kind == OpKind::Fold, name ": the rows of XR_OPS are folds");
XR_OPS(XR_FOLD_ROW)
#undef XR_FOLD_ROW
#define XR_PAIR_ROW(e, name, kind, ...) \
  static_assert(OpKind::kind != OpKind::Fold, name ": the rows of XR_PAIR_OPS are pair ops");
XR_PAIR_OPS(XR_PAIR_ROW)
#undef XR_PAIR_ROW
constexpr const OpInfo& op_info(Op op) {
  const auto row = static_cast<std::size_t>(op);
  if (row >= std::size(op_table)) throw std::out_of_range("xr::op_info: not an Op");
  return op_table[row];
}
#define XR_MAPPED_ROW(e, name, kind, aliases, empty, fold, map, finalize)                          \
  static_assert(Op::fold == Op::Sum || Op::fold == Op::Min || Op::fold == Op::Max,                  \
                name ": a mapped op folds by sum, min or max");                                      \
  static_assert(ElementMap::map != ElementMap::None, name ": a mapped op maps its elements");       \
  static_assert(Finalize::finalize == Finalize::None || Op::fold == Op::Sum,                        \
                name ": only a sum is divided by its count or tested");
XR_MAPPED_OPS(XR_MAPPED_ROW)
#undef XR_MAPPED_ROW
constexpr bool is_pair(Op op) { return op_info(op).kind != OpKind::Fold; }
// A mapped op (XR_MAPPED_OPS): its elements go through a map before they fold.
constexpr bool is_mapped(Op op) { return op_info(op).map != ElementMap::None; }
// The fold that combines op's values and partial results: the op itself but for mapped ops.
constexpr Op fold_of(Op op) { return op_info(op).fold; }
constexpr ElementMap map_of(Op op) { return op_info(op).map; }
constexpr Finalize finalize_of(Op op) { return op_info(op).finalize; }
// any and all: a last step that tests count_nonzero's count.
constexpr bool tests_count(Op op) {
  return finalize_of(op) == Finalize::IsPositive || finalize_of(op) == Finalize::EqualsCount;
}
// argmin and argmax: their result carries an index (Result::index).
constexpr bool is_indexed(Op op) { return op_info(op).kind == OpKind::Located; }

// A row of the element-type table, for code that needs a type's facts at run time.
struct TypeInfo {
  DType type;
  std::string_view name;    // "f32"
  std::size_t size;         // bytes
  std::string_view npy;     // .npy descr, "<f4"
  bool is_float;
  bool is_signed;
  bool is_half;  // f16, bf16: stored in 16 bits, computed in f32
};

#define XR_TYPE_INFO(e, T, name, npy) \
  TypeInfo{DType::e, name, sizeof(T), npy, is_float_v<T>, is_float_v<T> || std::is_signed_v<T>, is_half_v<T>},
inline constexpr TypeInfo type_table[] = {XR_ELEMENT_TYPES(XR_TYPE_INFO)};
#undef XR_TYPE_INFO
constexpr const TypeInfo& type_info(DType t) {
  const auto row = static_cast<std::size_t>(t);
  if (row >= std::size(type_table)) throw std::out_of_range("xr::type_info: not a DType");
  return type_table[row];
}

// Which accumulator a sum of integers narrower than 64 bits uses. Wide (the default)
// accumulates in 64 bits, signed or unsigned as the input, so the sum of up to 2^32 i32
// values is exact; Native keeps the input type (the i32 accumulator of the reference kernels)
// and wraps modulo 2^bits. Other (op, type) pairs ignore it.
enum class Accumulator : std::uint8_t { Wide, Native };

XR_API std::string_view to_string(Op op);
XR_API std::string_view to_string(DType type);
XR_API std::string_view to_string(Accumulator acc);
// Case-insensitive. parse_op accepts an op's name and its other spellings (op_table);
// parse_dtype "i32|int32|int", "i64|int64|long", "f32|float32|float", "f64|float64|double",
// "i8|int8", "u8|uint8", "u32|uint32", "u64|uint64", "f16|float16|half", "bf16|bfloat16".
// Each throws InvalidArgument naming the accepted names.
XR_API Op parse_op(std::string_view text);
XR_API DType parse_dtype(std::string_view text);

// "512 B", "64.0 MiB", "1.5 GiB".
XR_API std::string format_bytes(std::uint64_t bytes);
// "4096", "256K", "256M", "1G", "1.5G", "64MiB", "2GB" (K/M/G/T are powers of 1024, with or
// without "iB"/"B"); throws InvalidArgument for anything else, zero or an overflow.
XR_API std::uint64_t parse_bytes(std::string_view text);

constexpr std::size_t size_of(DType t) { return type_info(t).size; }
constexpr bool is_float(DType t) { return type_info(t).is_float; }
// nanmin and nanmax of a float type: the only ops whose result is NaN when the input holds
// elements but none of them counts (all NaN). Their fold's identity, an infinity, is then a
// second answer that one pass cannot tell apart (xr::detail::needs_nan_twin, the MPI combine).
constexpr bool may_be_all_nan(Op op, DType type) {
  return map_of(op) == ElementMap::SkipNaN && fold_of(op) != Op::Sum && is_float(type);
}
constexpr bool is_half(DType t) { return type_info(t).is_half; }
// The type `t` computes in: f32 for f16 and bf16 (compute_t), `t` itself otherwise.
constexpr DType compute_dtype(DType t) { return is_half(t) ? DType::F32 : t; }

// The DType of a C++ element type.
template <class T> struct dtype_of_t;
#define XR_DTYPE_OF(e, T, ...) \
  template <> struct dtype_of_t<T> { static constexpr DType value = DType::e; };
XR_ELEMENT_TYPES(XR_DTYPE_OF)
#undef XR_DTYPE_OF
template <class T> inline constexpr DType dtype_of = dtype_of_t<std::remove_cv_t<T>>::value;
// The C++ element type of a DType.
template <DType D> struct element_of;
#define XR_ELEMENT_OF(e, T, ...) \
  template <> struct element_of<DType::e> { using type = T; };
XR_ELEMENT_TYPES(XR_ELEMENT_OF)
#undef XR_ELEMENT_OF
template <DType D> using element_t = typename element_of<D>::type;

// Calls f(T{}) with T the C++ type of `t`: one switch instead of one per caller.
template <class F> constexpr decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
#define XR_VISIT(e, T, ...) \
  case DType::e: return f(T{});
    XR_ELEMENT_TYPES(XR_VISIT)
#undef XR_VISIT
  }
  return f(double{});  // not reached: every enumerator has its case
}

// Calls f(T{}) for every element type, in table order.
template <class F> constexpr void for_each_dtype(F&& f) {
#define XR_EACH(e, T, ...) f(T{});
  XR_ELEMENT_TYPES(XR_EACH)
#undef XR_EACH
}

// The accumulator of a sum of T with the Wide accumulator: integers narrower than 64 bits
// accumulate in 64 bits, so up to 2^32 terms of 32 bits are exact; f16 and bf16 in f32; every
// other type in itself.
template <class T>
using wide_sum_t = std::conditional_t<
    is_half_v<T>, float,
    std::conditional_t<std::is_integral_v<T> && (sizeof(T) < 8),
                       std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>, T>>;
// The accumulator, and so the result type, of op O over T. Native keeps the input type (the
// reference kernels' i32 accumulator, which wraps modulo 2^32). Sums and products of f16 and
// bf16 accumulate in f32 and return it (Native has no meaning for them: check_accumulator);
// min and max return the input type.
// A mapped op accumulates as its fold, count_nonzero in i64, mean of integers in f64.
template <Op O, class T, Accumulator A>
using accumulator_t = std::conditional_t<
    map_of(O) == ElementMap::NonZero, std::int64_t,
    std::conditional_t<
    map_of(O) == ElementMap::Convert && std::is_integral_v<T>, double,
    std::conditional_t<is_half_v<T>,
                       std::conditional_t<fold_of(O) == Op::Sum || fold_of(O) == Op::Prod, float, T>,
                       std::conditional_t<fold_of(O) == Op::Sum && A == Accumulator::Wide, wide_sum_t<T>, T>>>>;

// The type a reduction produces: the accumulator_t of (op, type, accumulator); the input type
// for the pair ops (their value, and minmax's max).
constexpr DType result_dtype(Op op, DType in, Accumulator acc = Accumulator::Wide) {
  if (is_pair(op)) return in;
  if (map_of(op) == ElementMap::NonZero) return DType::I64;
  const bool converts = map_of(op) == ElementMap::Convert;
  op = fold_of(op);
  return visit_dtype(in, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_integral_v<T>)
      if (converts) return DType::F64;
    if constexpr (is_half_v<T>)
      if (op == Op::Sum || op == Op::Prod) return DType::F32;
    return op == Op::Sum && acc == Accumulator::Wide ? dtype_of<wide_sum_t<T>> : dtype_of<T>;
  });
}

// The op whose kernels compute `op` over `in`: a mean of floats runs the sum's (its map changes
// nothing there), and so shares their programs, instantiations and exact mode; any and all run
// count_nonzero's. Their last step follows in core (finalize_value). Every other op runs as itself.
constexpr Op kernel_op(Op op, DType in) {
  if (map_of(op) == ElementMap::NonZero) return Op::CountNonzero;
  return map_of(op) == ElementMap::Convert && is_float(in) ? fold_of(op) : op;
}

// Whether the accumulator changes what (op, type) computes: sums of integers narrower than 64 bits.
constexpr bool accumulator_matters(Op op, DType in) {
  return result_dtype(op, in, Accumulator::Wide) != result_dtype(op, in, Accumulator::Native);
}

// A value of any DType. Integers live in `i` (a u64 as its bits: read it with as<std::uint64_t>()),
// floats in `f` (an f32 widens to f64 exactly).
struct XR_API Scalar {
  DType type = DType::I64;
  std::int64_t i = 0;
  double f = 0.0;

  template <class T> static Scalar of(T v) {
    Scalar s;
    s.type = dtype_of<T>;
    if constexpr (is_half_v<T>) s.f = static_cast<float>(v);
    else if constexpr (std::is_floating_point_v<T>) s.f = static_cast<double>(v);
    else s.i = static_cast<std::int64_t>(v);
    return s;
  }
  template <class T> T as() const {
    if constexpr (is_half_v<T>) return T(static_cast<float>(to_double()));
    else if constexpr (std::is_floating_point_v<T>) return static_cast<T>(to_double());
    else return static_cast<T>(is_float(type) ? static_cast<std::int64_t>(f) : i);
  }
  double to_double() const {
    if (is_float(type)) return f;
    return type == DType::U64 ? static_cast<double>(static_cast<std::uint64_t>(i)) : static_cast<double>(i);
  }
  // Shortest text that reads back to the same value (integers exactly, floats round-trip).
  std::string to_string() const;
  // Same type and same bits (NaNs of any payload count as equal; -0 and +0 differ).
  bool same_bits(const Scalar& other) const;
};

}  // namespace xr
