// The host reference of a mapped op (XR_MAPPED_OPS), shared by whole arrays (reference.cpp) and
// segments (segment_reference.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "pipeline.hpp"
#include "xreduce/exact.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/semantics.hpp"

namespace xr::detail {

// The reference of a mapped op (XR_MAPPED_OPS): every element mapped, then folded. Float sums
// of mapped values are exact: a square goes to the exact sum as its two exact parts (x * x and
// its FMA remainder), an absolute value or a number as it is; their rounding to the result type
// happens once; a mean's exact sum is divided by the count, rounded once. Integer sums wrap in the accumulator as the semantics say; min and max keep the
// input type, and NaN where no element is a number.
template <class T> class MappedReference {
 public:
  MappedReference(Op op, Accumulator acc) : op_(op), acc_(acc), extreme_(identity<T>(op)) {}

  void add(const T* x, std::uint64_t n) {
    n_ += n;
    visit_mapped(op_, [&](auto fn) {
      using F = decltype(fn);
      constexpr Op O = F::op;
      if constexpr (F::fold != Op::Sum) {
        for (std::uint64_t i = 0; i < n; ++i) {
          numbers_ += !is_nan(x[i]);
          extreme_ = OpFn<F::fold>::apply(extreme_, map_element<O, T>(x[i]));
        }
      } else if constexpr (is_float_v<accumulator_t<O, T, Accumulator::Wide>>) {
        for (std::uint64_t i = 0; i < n; ++i) add_exact_term<O>(x[i]);
      } else if (acc_ == Accumulator::Native) {
        for (std::uint64_t i = 0; i < n; ++i) wrap_add(map_element<O, accumulator_t<O, T, Accumulator::Native>>(x[i]));
      } else {
        for (std::uint64_t i = 0; i < n; ++i) wrap_add(map_element<O, accumulator_t<O, T, Accumulator::Wide>>(x[i]));
      }
    });
  }

  Reference finish() const {
    Reference ref;
    ref.n = n_;
    ref.op = op_;
    ref.type = dtype_of<T>;
    const DType out = result_dtype(op_, dtype_of<T>, acc_);
    if (fold_of(op_) != Op::Sum) {
      ref.value = Scalar::of<T>(extreme_);
      if (is_float_v<T> && n_ > 0 && numbers_ == 0) ref.value.f = std::numeric_limits<double>::quiet_NaN();
    } else if (finalize_of(op_) == Finalize::DivideByCount) {  // the exact mean, rounded once
      ref.value = out == DType::F32 ? Scalar::of(sum_.quotient_to_float(n_)) : Scalar::of(sum_.quotient_to_double(n_));
      ref.magnitude = n_ ? magnitude_ / static_cast<double>(n_) : 0.0;
      ref.exact_state = sum_.raw();  // parts' states merge, then divide (xr::mpi::reference_reduce)
    } else if (is_float(out)) {
      ref.value = n_ == 0 ? empty_scalar(op_, out) : detail::round_exact(sum_.raw(), out);
      ref.magnitude = magnitude_;
    } else {
      ref.value = visit_dtype(out, [&](auto t) {
        using A = decltype(t);
        return Scalar::of(finalize_value(op_, static_cast<A>(bits_), n_));  // any and all test the count
      });
    }
    return ref;
  }

 private:
  static bool is_nan(T x) {
    if constexpr (is_float_v<T>) return std::isnan(static_cast<double>(static_cast<compute_t<T>>(x)));
    else return false;
  }
  template <Op O> void add_exact_term(T x) {
    const double v = static_cast<double>(static_cast<compute_t<T>>(x));
    if (std::isnan(v) && map_of(O) == ElementMap::SkipNaN) {
      sum_.add(0.0);  // +0, as map_element makes it
      return;
    }
    if constexpr (map_of(O) == ElementMap::Square) {
      const double hi = v * v;
      sum_.add(hi);
      if (std::isfinite(hi)) sum_.add(std::fma(v, v, -hi));
      magnitude_ += hi;
    } else {
      const double term = map_of(O) == ElementMap::Abs ? std::fabs(v) : v;
      sum_.add(term);
      magnitude_ += std::fabs(term);
    }
  }
  template <class A> void wrap_add(A term) {
    bits_ += static_cast<std::uint64_t>(term);
    if constexpr (sizeof(A) < 8) bits_ = static_cast<std::uint64_t>(static_cast<A>(bits_));
  }

  Op op_;
  Accumulator acc_;
  std::uint64_t n_ = 0;
  std::uint64_t numbers_ = 0;  // min, max: elements that are not NaN
  T extreme_;                  // min, max
  ExactSum sum_;               // float sums: the exact sum of the mapped values
  double magnitude_ = 0;       // float sums: sum |mapped value|
  std::uint64_t bits_ = 0;     // integer sums: the accumulator's bits, wrapped as it wraps
};

}  // namespace xr::detail
