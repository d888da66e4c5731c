// The one definition of what each reduction means: identities, how two values combine,
// integer wrap-around and NaN propagation. Every backend reproduces exactly this.
//
// | op   | identity              | empty input  | notes                                     |
// |------|-----------------------|--------------|-------------------------------------------|
// | sum  | -0.0 (floats), 0      | +0 / 0       | integers wrap (two's complement); a sum   |
// |      |                       |              | whose terms are all -0 is -0; i8, u8,     |
// |      |                       |              | i32, u32 accumulate in i64 / u64 (Wide);  |
// |      |                       |              | f16, bf16 in f32, and return f32          |
// | prod | 1                     | 1            | integers wrap (two's complement); f16,    |
// |      |                       |              | bf16 in f32, and return f32               |
// | min  | +inf / type max       | EmptyInput   | any NaN in the input makes the result NaN |
// | max  | -inf / type lowest    | EmptyInput   | any NaN in the input makes the result NaN |
// | argmin, | min / max, index of  | EmptyInput   | ties go to the smallest index; the first  |
// | argmax  | its first occurrence |              | NaN wins, with its index (as NumPy)       |
// | minmax  | min and max          | EmptyInput   | NaN rules as for min and max              |
// | sumsq, asum, nansum | as sum | +0 / 0 | the sum of x*x, |x|, or x with NaN as +0     |
// | nanmin, nanmax | as min, max   | EmptyInput   | NaNs skipped; NaN where all are NaN       |
// | count_nonzero | 0              | 0            | i64 count of x != 0 (NaN counts)          |
// | mean          | as sum         | NaN          | the sum over the count, rounded once more |
// | any, all      | 0              | 0, 1         | 1 or 0 (i64): some, every element nonzero |
//
// Min, max and the pair ops return the input type, f16 and bf16 included (compared in f32,
// exactly). An index is an int64 position in the whole input.
//
// Float sums and products round after every step, so their result depends on the order of
// the steps; Reducer results carry `rounding_depth` so tests can bound that difference.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "xreduce/export.hpp"
#include "xreduce/types.hpp"

namespace xr {

// One op's semantics: identity<T>() and apply(a, b), each constexpr so that the CUDA kernels
// and the OpenMP loops use these very functions. Integer sums and products wrap modulo 2^bits
// (computed in the unsigned type, so no undefined behaviour); min and max return NaN when
// either side is NaN. A new op is one specialisation here, one row of XR_OPS, and its functor
// in kernels_cl/reduce.cl.
template <Op O> struct OpFn;

// Two's complement wrap-around for integer sums and products.
template <class T, class F> constexpr T wrapping(T a, T b, F f) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(f(static_cast<U>(a), static_cast<U>(b))));
  } else {
    return static_cast<T>(f(a, b));  // f16 and bf16 compute in float, rounded back here
  }
}

template <> struct OpFn<Op::Sum> {
  static constexpr Op op = Op::Sum;
  // The float sum starts from -0.0, not +0.0: -0 + x == x for every x, so a sum of terms that
  // are all -0 stays -0 (as the exact sum says), while +0 + -0 would give +0.
  template <class T> static constexpr T identity() {
    if constexpr (is_float_v<T>) return T(-0.0f);
    else return T(0);
  }
  template <class T> static constexpr T apply(T a, T b) {
    return wrapping(a, b, [](auto x, auto y) { return x + y; });
  }
};

template <> struct OpFn<Op::Prod> {
  static constexpr Op op = Op::Prod;
  template <class T> static constexpr T identity() { return T(1); }
  template <class T> static constexpr T apply(T a, T b) {
    return wrapping(a, b, [](auto x, auto y) { return x * y; });
  }
};

// One select, so loops over it vectorise: a NaN b is taken (b != b), and a NaN a is kept
// because every comparison with it is false.
template <> struct OpFn<Op::Min> {
  static constexpr Op op = Op::Min;
  template <class T> static constexpr T identity() {
    if constexpr (is_float_v<T>) return std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::max();
  }
  template <class T> static constexpr T apply(T a, T b) { return (b < a || b != b) ? b : a; }
};

template <> struct OpFn<Op::Max> {
  static constexpr Op op = Op::Max;
  template <class T> static constexpr T identity() {
    if constexpr (is_float_v<T>) return T(-static_cast<float>(std::numeric_limits<T>::infinity()));
    else return std::numeric_limits<T>::lowest();
  }
  template <class T> static constexpr T apply(T a, T b) { return (a < b || b != b) ? b : a; }
};

// Calls f(OpFn<op>{}) for a run-time fold: the one switch over the folds that callers share.
// A pair op has no OpFn: callers branch on is_pair() first. Nor has a mapped op: its values
// combine by OpFn<fold_of(op)>, its elements go through map_element first (callers branch on
// is_mapped(), then visit_mapped).
template <class F> constexpr decltype(auto) visit_fold(Op op, F&& f) {
  switch (op) {
#define XR_VISIT(e, ...) \
  case Op::e: return f(OpFn<Op::e>{});
    XR_OPS(XR_VISIT)
#undef XR_VISIT
#define XR_NO_FOLD(e, ...) case Op::e:
    XR_PAIR_OPS(XR_NO_FOLD)
    XR_MAPPED_OPS(XR_NO_FOLD)
#undef XR_NO_FOLD
    break;
  }
  throw std::invalid_argument("xr::visit_fold: " + std::string(to_string(op)) + " is not a fold");
}

// Calls f(OpFn<O>{}) for every op, in table order.
template <class F> constexpr void for_each_fold(F&& f) {
#define XR_EACH(e, ...) f(OpFn<Op::e>{});
  XR_OPS(XR_EACH)
#undef XR_EACH
}

// ---- the pair ops ----------------------------------------------------------------------------

// argmin, argmax: a value and its index. kNoIndex (after every real index) marks the identity,
// so that any element, even one equal to the identity's value, replaces it; results report it
// as -1 (an empty segment).
inline constexpr std::int64_t kNoIndex = INT64_MAX;
template <class T> struct Located {
  using element_type = T;
  T value;
  std::int64_t index;
};
// minmax: both extremes.
template <class T> struct Bounds {
  using element_type = T;
  T min;
  T max;
};

// Whether `later`, found after `kept` in the input, takes its place in an arg op of fold F
// (Min or Max): strictly beyond it, or the first NaN. f16 and bf16 compare in f32.
template <Op F, class T> constexpr bool replaces(T kept, T later) {
  const compute_t<T> k = static_cast<compute_t<T>>(kept), l = static_cast<compute_t<T>>(later);
  const bool beyond = F == Op::Min ? l < k : k < l;
  return beyond || (l != l && k == k);
}

// One pair op's semantics: identity<T>() and apply(a, b) over its record, in either order
// (argmin and argmax compare indices, so a tree or an atomic may combine in any order).
template <Op O> struct PairFn;

template <Op F> struct ArgFn {
  static constexpr Op fold = F;
  template <class T> using record = Located<T>;
  template <class T> static constexpr Located<T> identity() { return {OpFn<F>::template identity<T>(), kNoIndex}; }
  template <class T> static constexpr Located<T> apply(Located<T> a, Located<T> b) {
    const bool a_first = a.index <= b.index;
    const Located<T>& first = a_first ? a : b;
    const Located<T>& second = a_first ? b : a;
    return replaces<F>(first.value, second.value) ? second : first;
  }
};
template <> struct PairFn<Op::ArgMin> : ArgFn<Op::Min> {
  static constexpr Op op = Op::ArgMin;
};
template <> struct PairFn<Op::ArgMax> : ArgFn<Op::Max> {
  static constexpr Op op = Op::ArgMax;
};
template <> struct PairFn<Op::MinMax> {
  static constexpr Op op = Op::MinMax;
  template <class T> using record = Bounds<T>;
  template <class T> static constexpr Bounds<T> identity() {
    return {OpFn<Op::Min>::identity<T>(), OpFn<Op::Max>::identity<T>()};
  }
  template <class T> static constexpr Bounds<T> apply(Bounds<T> a, Bounds<T> b) {
    return {OpFn<Op::Min>::apply(a.min, b.min), OpFn<Op::Max>::apply(a.max, b.max)};
  }
};

// The record a pair op reduces over T: Located<T> or Bounds<T>, as its kind in the op table says.
template <Op O, class T> using pair_record_t = typename PairFn<O>::template record<T>;
#define XR_RECORD_OF_KIND(e, name, kind, ...)                              \
  static_assert(std::is_same_v<pair_record_t<Op::e, int>, kind<int>>, name \
                ": its PairFn's record is the record of its kind in XR_PAIR_OPS");
XR_PAIR_OPS(XR_RECORD_OF_KIND)
#undef XR_RECORD_OF_KIND

// Calls f(PairFn<op>{}) for a run-time pair op.
template <class F> constexpr decltype(auto) visit_pair(Op op, F&& f) {
  switch (op) {
#define XR_VISIT(e, ...) \
  case Op::e: return f(PairFn<Op::e>{});
    XR_PAIR_OPS(XR_VISIT)
#undef XR_VISIT
#define XR_NO_PAIR(e, ...) case Op::e:
    XR_OPS(XR_NO_PAIR)
    XR_MAPPED_OPS(XR_NO_PAIR)
#undef XR_NO_PAIR
    break;
  }
  throw std::invalid_argument("xr::visit_pair: " + std::string(to_string(op)) + " is not a pair op");
}

// Calls f(PairFn<O>{}) for every pair op, in table order.
template <class F> constexpr void for_each_pair(F&& f) {
#define XR_EACH(e, ...) f(PairFn<Op::e>{});
  XR_PAIR_OPS(XR_EACH)
#undef XR_EACH
}

// ---- the mapped ops -------------------------------------------------------------------------

// Element x of T as mapped op O gives it to its fold, in the fold's accumulator A (f16 and bf16
// compute in float first). Constexpr, so the CUDA kernels, the OpenMP lanes and the host
// reference share it; kernels_cl/reduce.cl repeats it in OpenCL C (XR_MAP).
template <Op O, class A, class T> constexpr A map_element(T x) {
  // Both constants: a run-time read of core's op table from device code would read host memory.
  constexpr ElementMap M = map_of(O);
  constexpr Op F = fold_of(O);
  using C = compute_t<T>;
  const C v = static_cast<C>(x);
  if constexpr (M == ElementMap::NonZero) {
    return v != C(0) ? A(1) : A(0);
  } else if constexpr (M == ElementMap::Convert) {
    return static_cast<A>(v);
  } else if constexpr (M == ElementMap::SkipNaN) {
    if constexpr (is_float_v<T>)  // a sum's NaN becomes +0, as NumPy's nansum makes it
      if (v != v) return F == Op::Sum ? A(0) : OpFn<F>::template identity<A>();
    return static_cast<A>(x);
  } else if constexpr (M == ElementMap::Abs) {
    // -0 to +0, NaN kept; integers wrap (|lowest| is lowest). On the host, fabs and the sign
    // mask: the selects the GPUs take did not vectorise there (f64 asum at half of sum's rate on
    // the 2-core development VM).
    const A a = static_cast<A>(x);
#if defined(__CUDA_ARCH__)
    if constexpr (is_float_v<A>) return a < A(0) ? A(-a) : a == A(0) ? A(0) : a;
    else if constexpr (std::is_signed_v<A>) return a < A(0) ? wrapping(A(0), a, [](auto p, auto q) { return p - q; }) : a;
    else return a;
#else
    if constexpr (is_float_v<A>) {
      if (std::is_constant_evaluated()) return a < A(0) ? A(-a) : a == A(0) ? A(0) : a;
      return std::fabs(a);
    } else if constexpr (std::is_signed_v<A>) {
      using U = std::make_unsigned_t<A>;
      const U u = static_cast<U>(a), sign = static_cast<U>(U(0) - (u >> (8 * sizeof(A) - 1)));
      return static_cast<A>(static_cast<U>((u ^ sign) - sign));
    } else {
      return a;
    }
#endif
  } else {
    static_assert(M == ElementMap::Square, "map_element: a map with no case");
    const A a = static_cast<A>(x);
    return wrapping(a, a, [](auto p, auto q) { return p * q; });
  }
}

// An element of T that reads as mapped op O maps it: a kernel written for a fold of T's
// elements, given Mapped<T, O> in their place (the same bytes), folds the mapped values, and the
// passes after its first, over partial results of A, fold them as they are. The transform
// iterator of CUB's TransformReduce, as an element type.
template <class T, Op O> struct Mapped {
  static_assert(map_of(O) != ElementMap::None, "Mapped: O is a mapped op");
  using raw_type = T;
  static constexpr Op op = O;
  T raw;
  template <class A> constexpr explicit operator A() const { return map_element<O, A>(raw); }
};
template <class T> inline constexpr bool is_mapped_v = false;
template <class T, Op O> inline constexpr bool is_mapped_v<Mapped<T, O>> = true;

// The mapped op whose kernels read O's elements of T: kernel_op's where that is a mapped op (any
// and all read as count_nonzero), so that an op running another's kernels instantiates none.
template <Op O, class T>
inline constexpr Op kernel_mapped_op = is_mapped(kernel_op(O, dtype_of<T>)) ? kernel_op(O, dtype_of<T>) : O;

// The static facts of mapped op O, for visit_mapped.
template <Op O> struct MappedFn {
  static constexpr Op op = O;
  static constexpr Op fold = fold_of(O);
  template <class T> using element = Mapped<T, kernel_mapped_op<O, T>>;
};

// Calls f(MappedFn<op>{}) for a run-time mapped op.
template <class F> constexpr decltype(auto) visit_mapped(Op op, F&& f) {
  switch (op) {
#define XR_VISIT(e, ...) \
  case Op::e: return f(MappedFn<Op::e>{});
    XR_MAPPED_OPS(XR_VISIT)
#undef XR_VISIT
#define XR_NOT_MAPPED(e, ...) case Op::e:
    XR_OPS(XR_NOT_MAPPED)
    XR_PAIR_OPS(XR_NOT_MAPPED)
#undef XR_NOT_MAPPED
    break;
  }
  throw std::invalid_argument("xr::visit_mapped: " + std::string(to_string(op)) + " is not a mapped op");
}

// Calls f(MappedFn<O>{}) for every mapped op, in table order.
template <class F> constexpr void for_each_mapped(F&& f) {
#define XR_EACH(e, ...) f(MappedFn<Op::e>{});
  XR_MAPPED_OPS(XR_EACH)
#undef XR_EACH
}

// The identity of op's fold (a mapped op's included).
template <class T> constexpr T identity(Op op) {
  return visit_fold(fold_of(op), [](auto fn) { return decltype(fn)::template identity<T>(); });
}

// The value of a reduction of no elements (sum and product only: min and max of nothing are
// EmptyInput). The identity, except that the empty float sum is +0, as in IEEE 754 and NumPy.
template <class T> constexpr T empty_value(Op op) {
  if constexpr (is_float_v<T>)
    if (fold_of(op) == Op::Sum) return T(0.0f);
  return identity<T>(op);
}

// empty_value of the run-time (op, type): the value of every reduction of no elements.
Scalar empty_scalar(Op op, DType type);

template <class T> T combine(Op op, T a, T b) {
  return visit_fold(fold_of(op), [&](auto fn) { return decltype(fn)::apply(a, b); });
}

// Last step F (Finalize in xreduce/types.hpp) on a fold's value `folded` over `count` elements.
// Constexpr, so the CUDA kernels use it too (kernels_cl/segments_finalize.cl repeats it). A mean
// divides by the count in f64, then rounds to A (so an f32 quotient rounds twice, within 0.5 +
// 2^-29 ulp of f32); 0 / 0 is NaN, the mean of nothing. any and all test the nonzero count.
template <Finalize F, class A> constexpr A finalize_folded(A folded, std::uint64_t count) {
  if constexpr (F == Finalize::DivideByCount) {
    if constexpr (is_float_v<A>) {
      if (count == 0) return std::numeric_limits<A>::quiet_NaN();  // +NaN, as NumPy's; 0.0 / 0 is -NaN on x86
      return static_cast<A>(static_cast<double>(folded) / static_cast<double>(count));
    }
  } else if constexpr (F == Finalize::IsPositive) {
    return folded > A(0) ? A(1) : A(0);
  } else if constexpr (F == Finalize::EqualsCount) {
    return static_cast<std::uint64_t>(folded) == count ? A(1) : A(0);
  }
  return folded;
}

// What mapped op `op` returns of its fold's value `folded` over `count` elements: its last step
// (finalize_folded), nothing for ops without one.
template <class A> A finalize_value(Op op, A folded, std::uint64_t count) {
  switch (finalize_of(op)) {
    case Finalize::None: return folded;
    case Finalize::DivideByCount: return finalize_folded<Finalize::DivideByCount>(folded, count);
    case Finalize::IsPositive: return finalize_folded<Finalize::IsPositive>(folded, count);
    case Finalize::EqualsCount: return finalize_folded<Finalize::EqualsCount>(folded, count);
  }
  return folded;
}

// Throws EmptyInput for min, max and the pair ops of zero elements. Every entry point calls it.
XR_API void require_value_exists(Op op, std::uint64_t n);

}  // namespace xr
