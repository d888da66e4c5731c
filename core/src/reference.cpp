#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "xreduce/exact.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/semantics.hpp"

namespace xr {
namespace {

template <class T> Reference reference_of(const T* x, std::uint64_t n, Op op, Accumulator acc) {
  Reference ref;
  ref.n = n;
  ref.op = op;
  ref.type = dtype_of<T>;
  const auto count = static_cast<std::int64_t>(n);
  if constexpr (std::is_floating_point_v<T>) {
    if (op == Op::Sum) {
      double magnitude = 0;
#ifdef _OPENMP
      std::vector<ExactSum> parts(static_cast<std::size_t>(omp_get_max_threads()));
#pragma omp parallel reduction(+ : magnitude)
      {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        const std::uint64_t lo = n * t / nt, hi = n * (t + 1) / nt;
        parts[t].add(x + lo, hi - lo);
        for (std::uint64_t i = lo; i < hi; ++i) magnitude += std::fabs(static_cast<double>(x[i]));
      }
      ExactSum sum;
      for (const auto& p : parts) sum.merge(p);
#else
      ExactSum sum;
      sum.add(x, n);
      for (std::uint64_t i = 0; i < n; ++i) magnitude += std::fabs(static_cast<double>(x[i]));
#endif
      ref.value = Scalar::of<T>(sizeof(T) == 4 ? static_cast<T>(sum.to_float()) : static_cast<T>(sum.to_double()));
      ref.magnitude = magnitude;
      return ref;
    }
    if (op == Op::Prod) {
      long double p = 1;
      for (std::uint64_t i = 0; i < n; ++i) p *= x[i];
      ref.value = Scalar::of<T>(static_cast<T>(p));
      ref.magnitude = std::fabs(static_cast<double>(p));
      return ref;
    }
  }
  if constexpr (std::is_same_v<T, std::int32_t>) {
    if (op == Op::Sum && acc == Accumulator::Wide) {
      std::int64_t s = 0;
#pragma omp parallel for reduction(+ : s)
      for (std::int64_t i = 0; i < count; ++i) s += x[i];
      ref.value = Scalar::of<std::int64_t>(s);
      return ref;
    }
  }
  ref.value = visit_op(op, [&](auto fn) {
    using F = decltype(fn);
    T r = identity<T>(op);
    for (std::uint64_t i = 0; i < n; ++i) r = F::apply(r, x[i]);
    return Scalar::of<T>(r);
  });
  return ref;
}

// (1 + u)^k - 1: the relative error after k roundings of unit roundoff u.
double growth(double k, double u) { return std::expm1(k * std::log1p(u)); }

}  // namespace

Reference reference_reduce(HostArray in, Op op, Accumulator acc) {
  require_value_exists(op, in.n);
  return visit_dtype(in.type, [&](auto zero) {
    using T = decltype(zero);
    return reference_of<T>(static_cast<const T*>(in.data), in.n, op, acc);
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
  if (exact && is_float(want.type) && ref.op == Op::Sum) {
    a.ok = got.same_bits(want);
    if (a.ok) a.detail = "bit-identical: " + got.to_string();
    else if (std::isnan(got.f) || std::isnan(want.f)) describe("differs");
    else a.detail = "differs by " + std::to_string(ulp_distance(got, want)) + " ulp: got " + got.to_string() +
                    ", exact " + want.to_string();
    return a;
  }
  const bool rounded = is_float(want.type) && (ref.op == Op::Sum || ref.op == Op::Prod);
  if (!rounded) {
    a.ok = is_float(want.type) ? (got.f == want.f || (std::isnan(got.f) && std::isnan(want.f))) : got.i == want.i;
    describe(a.ok ? "exact" : "differs");
    return a;
  }
  if (std::isnan(want.f) || std::isinf(want.f) || std::isnan(got.f) || std::isinf(got.f)) {
    a.ok = got.f == want.f || (std::isnan(got.f) && std::isnan(want.f));
    describe(a.ok ? "same special value" : "differs");
    return a;
  }
  const double u = want.type == DType::F32 ? 0x1.0p-24 : 0x1.0p-53;
  const double tiny = want.type == DType::F32 ? std::numeric_limits<float>::denorm_min()
                                              : std::numeric_limits<double>::denorm_min();
  const double depth = static_cast<double>(result.rounding_depth ? result.rounding_depth : ref.n) + 1.0;
  a.error = std::fabs(got.f - want.f);
  if (ref.op == Op::Sum) a.bound = growth(depth, u) * ref.magnitude + u * std::fabs(want.f) + depth * tiny;
  else a.bound = growth(depth, u) * ref.magnitude + depth * tiny;
  a.ok = a.error <= a.bound;
  describe(a.ok ? "within bound" : "outside bound");
  return a;
}

}  // namespace xr
