// The host reference of segmented reductions, and the check of a result against it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "pipeline.hpp"
#include "product_range.hpp"
#include "regions.hpp"
#include "segment_device.hpp"
#include "xreduce/error.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/semantics.hpp"

namespace xr {

namespace {

// Element k of segment i of the layout over x.
template <class T> T segment_element(const T* x, const SegmentLayout& l, std::uint64_t i, std::uint64_t k) {
  if (l.kind == SegmentKind::Columns) return x[i + k * l.stride];
  return x[detail::segment_range(l, i).begin + k];
}

std::uint64_t segment_length(const SegmentLayout& l, std::uint64_t i) {
  if (l.kind == SegmentKind::Columns) return l.length;
  const detail::Range r = detail::segment_range(l, i);
  return r.end - r.begin;
}

// A pair op's reference: each segment's record by PairFn, element k at index k.
void reference_pairs(const void* data, const SegmentLayout& layout, SegmentReference& ref) {
  visit_pair(ref.op, [&](auto fn) {
    using F = decltype(fn);
    visit_dtype(ref.type, [&](auto zero) {
      using T = decltype(zero);
      const T* x = static_cast<const T*>(data);
      if constexpr (F::op == Op::MinMax) ref.maxima = HostBuffer(ref.type, layout.count);
      else ref.indices.resize(layout.count);
      detail::RegionErrors errors;
#pragma omp parallel
      {
        errors.enter(detail::Region::CoreSegmentPairs);
#pragma omp for schedule(dynamic, 1024)
        for (std::int64_t signed_i = 0; signed_i < static_cast<std::int64_t>(layout.count); ++signed_i) {
          const auto i = static_cast<std::uint64_t>(signed_i);
          const std::uint64_t len = segment_length(layout, i);
          ref.length[i] = len;
          auto r = F::template identity<T>();
          for (std::uint64_t k = 0; k < len; ++k) {
            const T v = segment_element(x, layout, i, k);
            if constexpr (F::op == Op::MinMax) r = F::apply(r, {v, v});
            else r = F::apply(r, {v, static_cast<std::int64_t>(k)});
          }
          if constexpr (F::op == Op::MinMax) {
            ref.values.as<T>()[i] = r.min;
            ref.maxima.as<T>()[i] = r.max;
          } else {
            ref.values.as<T>()[i] = r.value;
            ref.indices[i] = r.index == kNoIndex ? -1 : r.index;
          }
        }
      }
      errors.rethrow();
    });
  });
}

}  // namespace

SegmentReference reference_segments(HostArray data, const SegmentLayout& layout, Op op, Accumulator acc) {
  if (layout.span() > data.n)
    throw InvalidArgument("reference_segments: the layout reaches element " + std::to_string(layout.span()) +
                          " of an input of " + std::to_string(data.n));
  SegmentReference ref;
  ref.op = op;
  ref.type = data.type;
  ref.values = HostBuffer(result_dtype(op, data.type, acc), layout.count);
  ref.length.resize(layout.count);
  if (is_pair(op)) {
    reference_pairs(data.data, layout, ref);
    return ref;
  }
  const bool float_sum = op == Op::Sum && is_float(data.type);
  if (is_float(data.type) && (op == Op::Sum || op == Op::Prod)) ref.magnitude.resize(layout.count);
  if (is_float(data.type) && op == Op::Prod) ref.order_dependent.resize(layout.count);
  visit_dtype(data.type, [&](auto zero) {
    using T = decltype(zero);
    const T* x = static_cast<const T*>(data.data);
    // Segment i's value into ref; it may throw (std::bad_alloc gathering a column).
    const auto reduce_segment = [&](std::uint64_t i) {
      std::vector<T> gathered;
      const T* seg = nullptr;
      std::uint64_t len = 0;
      if (layout.kind == SegmentKind::Columns) {
        gathered.resize(layout.length);
        for (std::uint64_t r = 0; r < layout.length; ++r) gathered[r] = x[i + r * layout.stride];
        seg = gathered.data();
        len = layout.length;
      } else {
        const detail::Range rg = detail::segment_range(layout, i);
        seg = x + rg.begin;
        len = rg.end - rg.begin;
      }
      ref.length[i] = len;
      Scalar v = empty_segment_value(op, data.type, acc);
      if constexpr (is_float_v<T>) {
        using C = compute_t<T>;  // f16 and bf16: f32, which holds each exactly and is their sum's type
        if (len && len <= 2 && float_sum) {  // one rounding of one addition is the exact sum rounded once
          v = Scalar::of<C>(len == 1 ? static_cast<C>(seg[0]) : static_cast<C>(seg[0]) + static_cast<C>(seg[1]));
          ref.magnitude[i] = std::fabs(static_cast<double>(seg[0])) + (len == 2 ? std::fabs(static_cast<double>(seg[1])) : 0);
        } else if (len && float_sum) {
          ExactSum sum;
          double magnitude = 0;
          for (std::uint64_t k = 0; k < len; ++k) magnitude += std::fabs(static_cast<double>(seg[k]));
          if constexpr (is_half_v<T>)
            for (std::uint64_t k = 0; k < len; ++k) sum.add(static_cast<float>(seg[k]));
          else
            sum.add(seg, len);
          v = detail::round_exact(sum.raw(), data.type);
          ref.magnitude[i] = magnitude;
        } else if (len && op == Op::Prod) {
          long double product = 1;
          detail::ProductRange<C> range;
          for (std::uint64_t k = 0; k < len; ++k) {
            product *= static_cast<C>(seg[k]);
            range.add(static_cast<C>(seg[k]));
          }
          v = Scalar::of<C>(static_cast<C>(product));
          ref.magnitude[i] = std::fabs(static_cast<double>(product));
          ref.order_dependent[i] = range.order_dependent();
        }
      }
      if (len && !(is_float(data.type) && (op == Op::Sum || op == Op::Prod))) {
        visit_dtype(ref.values.type(), [&](auto r) {
          using R = decltype(r);  // the accumulator: T, or the 64-bit integer of a wide sum
          R value = identity<R>(op);
          for (std::uint64_t k = 0; k < len; ++k) value = combine<R>(op, value, static_cast<R>(seg[k]));
          v = Scalar::of<R>(value);
        });
      }
      visit_dtype(ref.values.type(), [&](auto r) {
        using R = decltype(r);
        ref.values.as<R>()[i] = v.as<R>();
      });
    };
    // Segments are independent: in parallel, a column gathered by each thread into its own buffer.
    // Each segment is guarded, and once one has failed the rest are skipped.
    detail::RegionErrors errors;
#pragma omp parallel
    {
      errors.enter(detail::Region::CoreSegmentFolds);
#pragma omp for schedule(dynamic, 1024)
      for (std::int64_t signed_i = 0; signed_i < static_cast<std::int64_t>(layout.count); ++signed_i) {
        if (errors.failed()) continue;
        errors.guard([&] { reduce_segment(static_cast<std::uint64_t>(signed_i)); });
      }
    }
    errors.rethrow();
  });
  return ref;
}

SegmentAgreement check_segments(const SegmentedResult& result, const SegmentReference& ref, bool exact) {
  SegmentAgreement a;
  a.count = ref.values.size();
  if (result.values.size() != ref.values.size() || result.values.type() != ref.values.type()) {
    a.detail = std::to_string(result.values.size()) + " values of " + std::string(to_string(result.values.type())) +
               " where the reference has " + std::to_string(ref.values.size()) + " of " +
               std::string(to_string(ref.values.type()));
    a.first_bad = 0;
    return a;
  }
  if (result.indices.size() != ref.indices.size() || result.maxima.size() != ref.maxima.size()) {
    a.detail = std::to_string(result.indices.size()) + " indices and " + std::to_string(result.maxima.size()) +
               " maxima where the reference has " + std::to_string(ref.indices.size()) + " and " +
               std::to_string(ref.maxima.size()) + " (" + std::string(to_string(ref.op)) + ")";
    a.first_bad = 0;
    return a;
  }
  const std::size_t size = size_of(ref.values.type());
  const auto* got = static_cast<const unsigned char*>(result.values.data());
  const auto* want = static_cast<const unsigned char*>(ref.values.data());
  const std::size_t max_size = ref.maxima.size() ? size_of(ref.maxima.type()) : 0;
  const auto* got_max = static_cast<const unsigned char*>(result.maxima.data());
  const auto* want_max = static_cast<const unsigned char*>(ref.maxima.data());
  // The same bits of the value, and of the index or the max where the op has one.
  const auto same_bits = [&](std::uint64_t i) {
    if (std::memcmp(got + i * size, want + i * size, size) != 0) return false;
    if (!ref.indices.empty() && result.indices.as<std::int64_t>()[i] != ref.indices[i]) return false;
    return max_size == 0 || std::memcmp(got_max + i * max_size, want_max + i * max_size, max_size) == 0;
  };
  // check_result's verdict on value i.
  const auto judge = [&](std::uint64_t i) {
    Result r;
    r.value = result.value(i);
    r.index = result.index(i);
    r.maximum = result.maximum(i);
    r.rounding_depth = result.rounding_depth ? std::min<std::uint64_t>(result.rounding_depth, ref.length[i]) : ref.length[i];
    Reference expected;
    expected.value = detail::scalar_from_bytes(ref.values.type(), want + i * size);
    expected.n = ref.length[i];
    expected.op = ref.op;
    expected.type = ref.type;
    if (!ref.indices.empty()) expected.index = ref.indices[i];
    if (max_size) expected.maximum = detail::scalar_from_bytes(ref.maxima.type(), want_max + i * max_size);
    if (!ref.magnitude.empty()) expected.magnitude = ref.magnitude[i];
    if (!ref.order_dependent.empty()) expected.order_dependent = ref.order_dependent[i] != 0;
    return check_result(r, expected, exact);
  };
  std::uint64_t agree = 0, first_bad = a.count;
  // judge() may throw (std::bad_alloc building its text): each value is guarded.
  detail::RegionErrors errors;
#pragma omp parallel
  {
    errors.enter(detail::Region::CoreCheckSegments);
#pragma omp for schedule(dynamic, 4096) reduction(+ : agree) reduction(min : first_bad)
    for (std::int64_t signed_i = 0; signed_i < static_cast<std::int64_t>(a.count); ++signed_i) {
      if (errors.failed()) continue;
      const auto i = static_cast<std::uint64_t>(signed_i);
      // The same bits agree under every rule; anything else goes to check_result.
      errors.guard([&] {
        if (same_bits(i) || judge(i).ok) ++agree;
        else first_bad = std::min(first_bad, i);
      });
    }
  }
  errors.rethrow();
  a.agree = agree;
  if (first_bad < a.count) {
    a.first_bad = first_bad;
    a.detail = "value " + std::to_string(first_bad) + ": " + judge(first_bad).detail;
  }
  if (a.ok()) a.detail = "all " + std::to_string(a.count) + " values agree";
  return a;
}

}  // namespace xr
