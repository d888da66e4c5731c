#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "mapped_reference.hpp"
#include "pipeline.hpp"
#include "product_range.hpp"
#include "regions.hpp"
#include "xreduce/exact.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/semantics.hpp"
#include "xreduce/source.hpp"

namespace xr {
namespace {

// x[0, n) added to an exact sum: f16 and bf16 through float, which holds each exactly.
template <class T> void add_exact(ExactSum& sum, const T* x, std::uint64_t n) {
  if constexpr (is_half_v<T>)
    for (std::uint64_t i = 0; i < n; ++i) sum.add(static_cast<float>(x[i]));
  else
    sum.add(x, n);
}

// The reference's running state over one or more pieces of the input, in order.
template <class T> class ReferenceState {
  using Wide = wide_sum_t<T>;  // the Wide accumulator of a sum of T

 public:
  ReferenceState(Op op, Accumulator acc) : op_(op), acc_(acc), value_{} {
    if (is_pair(op))
      visit_pair(op, [&](auto fn) { record<decltype(fn)>() = decltype(fn)::template identity<T>(); });
    else
      value_ = identity<T>(op);
  }

  void add(const T* x, std::uint64_t n) {
    const auto first = static_cast<std::int64_t>(n_);
    n_ += n;
    const auto count = static_cast<std::int64_t>(n);
    if (is_pair(op_)) {
      visit_pair(op_, [&](auto fn) {
        using F = decltype(fn);
        auto& r = record<F>();
        for (std::int64_t i = 0; i < count; ++i) r = F::apply(r, element(r, x[i], first + i));
      });
      return;
    }
    if constexpr (is_float_v<T>) {
      if (op_ == Op::Sum) {
        double magnitude = 0;
#ifdef _OPENMP
        const int threads = omp_get_max_threads();
        std::vector<ExactSum> parts(static_cast<std::size_t>(threads));
        detail::RegionErrors errors;
#pragma omp parallel num_threads(threads) reduction(+ : magnitude)
        errors.run(detail::Region::CoreReferenceSum, [&] {
          const int t = omp_get_thread_num(), nt = omp_get_num_threads();
          const std::uint64_t lo = n * t / nt, hi = n * (t + 1) / nt;
          add_exact(parts[t], x + lo, hi - lo);
          for (std::uint64_t i = lo; i < hi; ++i) magnitude += std::fabs(static_cast<double>(x[i]));
        });
        errors.rethrow();
        for (const auto& p : parts) sum_.merge(p);
#else
        add_exact(sum_, x, n);
        for (std::uint64_t i = 0; i < n; ++i) magnitude += std::fabs(static_cast<double>(x[i]));
#endif
        magnitude_ += magnitude;
        return;
      }
      if (op_ == Op::Prod) {
        for (std::uint64_t i = 0; i < n; ++i) {
          product_ *= static_cast<long double>(static_cast<Wide>(x[i]));
          range_.add(static_cast<Wide>(x[i]));
        }
        return;
      }
    }
    if constexpr (std::is_integral_v<T> && !std::is_same_v<Wide, T>) {
      if (op_ == Op::Sum && acc_ == Accumulator::Wide) {
        std::uint64_t s = 0;  // wraps as the accumulator does
        detail::RegionErrors errors;
#pragma omp parallel
        {
          errors.enter(detail::Region::CoreReferenceWide);
#pragma omp for reduction(+ : s)
          for (std::int64_t i = 0; i < count; ++i) s += static_cast<std::uint64_t>(static_cast<Wide>(x[i]));
        }
        errors.rethrow();
        wide_ = static_cast<Wide>(static_cast<std::uint64_t>(wide_) + s);
        return;
      }
    }
    visit_fold(op_, [&](auto fn) {
      using F = decltype(fn);
      for (std::uint64_t i = 0; i < n; ++i) value_ = F::apply(value_, x[i]);
    });
  }

  Reference finish() const {
    Reference ref;
    ref.n = n_;
    ref.op = op_;
    ref.type = dtype_of<T>;
    ref.value = Scalar::of<T>(value_);
    if (is_pair(op_)) {
      visit_pair(op_, [&](auto fn) { report(ref, record<decltype(fn)>()); });
      return ref;
    }
    if constexpr (is_float_v<T>) {
      if (op_ == Op::Sum) {
        ref.value = detail::round_exact(sum_.raw(), dtype_of<T>);
        ref.exact_state = sum_.raw();
        ref.magnitude = magnitude_;
      } else if (op_ == Op::Prod) {
        ref.value = Scalar::of<Wide>(static_cast<Wide>(product_));
        ref.magnitude = std::fabs(static_cast<double>(product_));
        ref.order_dependent = range_.order_dependent();
      }
    }
    if constexpr (std::is_integral_v<T> && !std::is_same_v<Wide, T>)
      if (op_ == Op::Sum && acc_ == Accumulator::Wide) ref.value = Scalar::of<Wide>(wide_);
    return ref;
  }

 private:
  // The record of pair op F.
  template <class F> pair_record_t<F::op, T>& record() { return std::get<pair_record_t<F::op, T>>(records_); }
  template <class F> const pair_record_t<F::op, T>& record() const {
    return std::get<pair_record_t<F::op, T>>(records_);
  }
  // Element x at position i as a record like r.
  static Located<T> element(const Located<T>&, T x, std::int64_t i) { return {x, i}; }
  static Bounds<T> element(const Bounds<T>&, T x, std::int64_t) { return {x, x}; }
  // A record into the reference.
  static void report(Reference& ref, const Located<T>& r) {
    ref.value = Scalar::of<T>(r.value);
    ref.index = r.index == kNoIndex ? -1 : r.index;
  }
  static void report(Reference& ref, const Bounds<T>& r) {
    ref.value = Scalar::of<T>(r.min);
    ref.maximum = Scalar::of<T>(r.max);
  }

  Op op_;
  Accumulator acc_;
  std::uint64_t n_ = 0;
  T value_;                                    // integers, min, max
  std::tuple<Located<T>, Bounds<T>> records_;  // the pair ops: argmin and argmax, minmax
  ExactSum sum_;                               // float sums
  double magnitude_ = 0;                       // float sums: sum |x|
  long double product_ = 1;                    // float products
  detail::ProductRange<Wide> range_;           // float products: their partial products' range
  Wide wide_ = 0;                              // sums of narrow integers in 64 bits (wrapping)
};

// A reference state of (op, T) run over pieces of the input in order: the mapped or the plain one.
template <class T, class Feed> Reference run_reference(Op op, Accumulator acc, Feed&& feed) {
  if (is_mapped(op)) {
    detail::MappedReference<T> state(op, acc);
    feed(state);
    return state.finish();
  }
  ReferenceState<T> state(op, acc);
  feed(state);
  return state.finish();
}

// (1 + u)^k - 1: the relative error after k roundings of unit roundoff u.
double growth(double k, double u) { return std::expm1(k * std::log1p(u)); }

}  // namespace

Reference reference_reduce(HostArray in, Op op, Accumulator acc) {
  require_value_exists(op, in.n);
  return visit_dtype(in.type, [&](auto zero) {
    using T = decltype(zero);
    return run_reference<T>(op, acc, [&](auto& state) { state.add(static_cast<const T*>(in.data), in.n); });
  });
}

Reference reference_reduce(ChunkSource& source, Op op, Accumulator acc, std::uint64_t chunk_bytes) {
  const std::uint64_t n = source.size();
  require_value_exists(op, n);
  if (const void* memory = source.memory()) return reference_reduce(HostArray{memory, n, source.type()}, op, acc);
  return visit_dtype(source.type(), [&](auto zero) {
    using T = decltype(zero);
    const std::uint64_t chunk = std::max<std::uint64_t>(1, std::min<std::uint64_t>(n, chunk_bytes / sizeof(T)));
    std::vector<T> buffer(chunk);
    return run_reference<T>(op, acc, [&](auto& state) {
      for (std::uint64_t first = 0; first < n; first += chunk) {
        const std::uint64_t len = std::min(chunk, n - first);
        source.read(first, len, buffer.data());
        state.add(buffer.data(), len);
      }
    });
  });
}

std::uint64_t ulp_distance(const Scalar& a, const Scalar& b) {
  // Maps the bits to integers ordered like the values: negative values below -0 below +0.
  const auto ordered = [](const Scalar& s) -> std::int64_t {
    if (s.type == DType::F32) {
      const float f = static_cast<float>(s.f);
      std::int32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      return bits < 0 ? -static_cast<std::int64_t>(bits & 0x7fffffff) - 1 : bits;
    }
    std::int64_t bits;
    std::memcpy(&bits, &s.f, sizeof bits);
    return bits < 0 ? -(bits & 0x7fffffffffffffffLL) - 1 : bits;
  };
  const std::int64_t x = ordered(a), y = ordered(b);
  return x > y ? static_cast<std::uint64_t>(x - y) : static_cast<std::uint64_t>(y - x);
}

Agreement check_result(const Result& result, const Reference& ref, bool exact) {
  Agreement a;
  const Scalar& got = result.value;
  const Scalar& want = ref.value;
  const auto describe = [&](const char* verdict) {
    a.detail = std::string(verdict) + ": got " + got.to_string() + ", reference " + want.to_string();
    if (a.bound > 0) a.detail += ", |error| " + std::to_string(a.error) + " vs bound " + std::to_string(a.bound);
  };
  if (got.type != want.type) {
    a.detail = "result type " + std::string(to_string(got.type)) + " differs from reference type " +
               std::string(to_string(want.type));
    return a;
  }
  if (is_pair(ref.op)) {  // no rounding anywhere: the value, and the index or the max, exactly
    const auto same = [](const Scalar& x, const Scalar& y) {
      return is_float(x.type) ? (x.f == y.f || (std::isnan(x.f) && std::isnan(y.f))) : x.i == y.i;
    };
    const OpKind kind = op_info(ref.op).kind;
    bool second_same = true;  // the index, or the max
    switch (kind) {
      case OpKind::Fold: break;
      case OpKind::Located: second_same = result.index == ref.index; break;
      case OpKind::Bounds: second_same = same(result.maximum, ref.maximum); break;
    }
    a.ok = same(got, want) && second_same;
    const auto both = [&](const Scalar& v, std::int64_t index, const Scalar& maximum) {
      std::string text = v.to_string();
      switch (kind) {
        case OpKind::Fold: break;
        case OpKind::Located: text += " at " + std::to_string(index); break;
        case OpKind::Bounds: text += ".." + maximum.to_string(); break;
      }
      return text;
    };
    a.detail = std::string(a.ok ? "exact" : "differs") + ": got " + both(got, result.index, result.maximum) +
               ", reference " + both(want, ref.index, ref.maximum);
    return a;
  }
  const Op fold = fold_of(ref.op);
  if (exact && is_float(want.type) && fold == Op::Sum) {
    a.ok = got.same_bits(want);
    if (a.ok) a.detail = "bit-identical: " + got.to_string();
    else if (std::isnan(got.f) || std::isnan(want.f)) describe("differs");
    else a.detail = "differs by " + std::to_string(ulp_distance(got, want)) + " ulp: got " + got.to_string() +
                    ", exact " + want.to_string();
    return a;
  }
  const bool rounded = is_float(want.type) && (fold == Op::Sum || fold == Op::Prod);
  if (!rounded) {
    a.ok = is_float(want.type) ? (got.f == want.f || (std::isnan(got.f) && std::isnan(want.f))) : got.i == want.i;
    describe(a.ok ? "exact" : "differs");
    return a;
  }
  if (fold == Op::Sum && std::isfinite(want.f) && !std::isfinite(got.f)) {
    a.overflow = true;
    a.error = a.bound = std::numeric_limits<double>::infinity();
    a.detail = "overflow: the plain " + std::string(to_string(want.type)) + " sum overflowed to " + got.to_string() +
               " where the exact sum " + want.to_string() + " is finite (exact mode, --exact, gives it)";
    return a;
  }
  if (ref.op == Op::Prod && ref.order_dependent && (!std::isfinite(got.f) || got.f == 0)) {
    a.ok = true;
    a.detail = "order-dependent: partial products overflow " + std::string(to_string(want.type)) +
               " in some orders, where " + got.to_string() + " is the product; reference " + want.to_string();
    return a;
  }
  if (std::isnan(want.f) || std::isinf(want.f) || std::isnan(got.f) || std::isinf(got.f)) {
    a.ok = got.f == want.f || (std::isnan(got.f) && std::isnan(want.f));
    describe(a.ok ? "same special value" : "differs");
    return a;
  }
  // A zero sum's sign is part of its value: -0 only when every term was -0, in any order.
  if (fold == Op::Sum && got.f == 0 && want.f == 0 && std::signbit(got.f) != std::signbit(want.f)) {
    describe("sign of zero differs");
    return a;
  }
  const double u = want.type == DType::F32 ? 0x1.0p-24 : 0x1.0p-53;
  const double tiny = want.type == DType::F32 ? std::numeric_limits<float>::denorm_min()
                                              : std::numeric_limits<double>::denorm_min();
  const double depth = static_cast<double>(result.rounding_depth ? result.rounding_depth : ref.n) + 1.0;
  a.error = std::fabs(got.f - want.f);
  if (fold == Op::Sum) a.bound = growth(depth, u) * ref.magnitude + u * std::fabs(want.f) + depth * tiny;
  else a.bound = growth(depth, u) * ref.magnitude + depth * tiny;
  a.ok = a.error <= a.bound;
  describe(a.ok ? "within bound" : "outside bound");
  return a;
}

}  // namespace xr
