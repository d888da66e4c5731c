// The host reference of segmented reductions, and the check of a result against it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <optional>
#include <tuple>
#include <vector>

#include "mapped_reference.hpp"
#include "pipeline.hpp"
#include "product_range.hpp"
#include "regions.hpp"
#include "segment_device.hpp"
#include "xreduce/error.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/semantics.hpp"
#include "xreduce/source.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace xr {

namespace {

using detail::segment_length;

// Element k of segment i of the layout over x.
template <class T> T segment_element(const T* x, const SegmentLayout& l, std::uint64_t i, std::uint64_t k) {
  if (l.kind == SegmentKind::Columns) return x[i + k * l.stride];
  return x[detail::segment_range(l, i).begin + k];
}

// f(i) for every segment i < count, in parallel; each guarded, and once one has failed the rest
// are skipped.
template <class F> void each_segment(std::uint64_t count, const F& f) {
  detail::RegionErrors errors;
#pragma omp parallel
  {
    errors.enter(detail::Region::CoreSegmentFolds);
#pragma omp for schedule(dynamic, 1024)
    for (std::int64_t signed_i = 0; signed_i < static_cast<std::int64_t>(count); ++signed_i) {
      if (errors.failed()) continue;
      errors.guard([&] { f(static_cast<std::uint64_t>(signed_i)); });
    }
  }
  errors.rethrow();
}

// Whether the reference carries each value's magnitude: float sums (sum |x|, of mapped values
// for a mapped op) and float products (|product|).
bool has_magnitude(Op op, DType type, Accumulator acc) {
  return is_float(result_dtype(op, type, acc)) && (fold_of(op) == Op::Sum || op == Op::Prod);
}

// A mapped op's reference: each segment through MappedReference, in parallel (below).
void reference_mapped_segments(const void* data, const SegmentLayout& layout, Accumulator acc, SegmentReference& ref);

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
  if (has_magnitude(op, data.type, acc)) ref.magnitude.resize(layout.count);
  if (is_mapped(op)) {
    reference_mapped_segments(data.data, layout, acc, ref);
    return ref;
  }
  const bool float_sum = op == Op::Sum && is_float(data.type);
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
    each_segment(layout.count, reduce_segment);
  });
  return ref;
}

namespace {

// One segment's reference over its elements in order, fed in one or more parts: the computation of
// the in-memory reference_segments above, element by element, so that the values are the same.
template <class T> class SegmentState {
  using C = compute_t<T>;     // f16 and bf16: f32
  using W = wide_sum_t<T>;    // sums of narrow integers in 64 bits

 public:
  SegmentState(Op op, DType type, Accumulator acc)
      : op_(op), acc_(acc), float_sum_(op == Op::Sum && is_float(type)),
        float_prod_(op == Op::Prod && is_float(type)), wide_(result_dtype(op, type, acc) != type) {
    reset();
  }

  void reset() {
    len_ = 0;
    if (is_mapped(op_)) {
      mapped_.emplace(op_, acc_);
      return;
    }
    sum_.clear();
    magnitude_ = 0;
    product_ = 1;
    range_ = {};
    if (is_pair(op_)) {
      visit_pair(op_, [&](auto fn) { record<decltype(fn)>() = decltype(fn)::template identity<T>(); });
    } else if (!float_sum_ && !float_prod_) {
      value_ = identity<T>(op_);
      wide_value_ = identity<W>(op_);
    }
  }

  // Elements x[0], x[step], ..., x[(n - 1) * step], next in the segment.
  void add(const T* x, std::uint64_t n, std::uint64_t step) {
    if (n == 0) return;
    const std::uint64_t first = len_;
    len_ += n;
    if (mapped_) {
      if (step == 1) mapped_->add(x, n);
      else
        for (std::uint64_t k = 0; k < n; ++k) mapped_->add(x + k * step, 1);
      return;
    }
    if (is_pair(op_)) {
      visit_pair(op_, [&](auto fn) {
        using F = decltype(fn);
        auto& r = record<F>();
        for (std::uint64_t k = 0; k < n; ++k) {
          const T v = x[k * step];
          if constexpr (F::op == Op::MinMax) r = F::apply(r, {v, v});
          else r = F::apply(r, {v, static_cast<std::int64_t>(first + k)});
        }
      });
      return;
    }
    if constexpr (is_float_v<T>) {
      if (float_sum_) {
        for (std::uint64_t k = 0; k < n && first + k < 2; ++k) head_[first + k] = x[k * step];
        add_sum(x, n, step);
        return;
      }
      if (float_prod_) {
        for (std::uint64_t k = 0; k < n; ++k) {
          const C v = static_cast<C>(x[k * step]);
          product_ *= v;
          range_.add(v);
        }
        return;
      }
    }
    if (wide_) {
      for (std::uint64_t k = 0; k < n; ++k) wide_value_ = combine<W>(op_, wide_value_, static_cast<W>(x[k * step]));
    } else {
      for (std::uint64_t k = 0; k < n; ++k) value_ = combine<T>(op_, value_, x[k * step]);
    }
  }

  // Segment i of `ref`: its value, index or max, magnitude and length.
  void store(SegmentReference& ref, std::uint64_t i, Accumulator acc) const {
    ref.length[i] = len_;
    if (mapped_) {
      const Reference whole = mapped_->finish();
      if (!ref.magnitude.empty()) ref.magnitude[i] = whole.magnitude;
      store_value(ref, i, len_ ? whole.value : empty_segment_value(op_, dtype_of<T>, acc));
      return;
    }
    if (is_pair(op_)) {
      visit_pair(op_, [&](auto fn) {
        const auto& r = record<decltype(fn)>();
        if constexpr (decltype(fn)::op == Op::MinMax) {
          ref.values.as<T>()[i] = r.min;
          ref.maxima.as<T>()[i] = r.max;
        } else {
          ref.values.as<T>()[i] = r.value;
          ref.indices[i] = r.index == kNoIndex ? -1 : r.index;
        }
      });
      return;
    }
    Scalar v = empty_segment_value(op_, dtype_of<T>, acc);
    if constexpr (is_float_v<T>) {
      if (float_sum_ && len_ && len_ <= 2) {  // as the in-memory form: one addition, rounded once
        v = Scalar::of<C>(len_ == 1 ? static_cast<C>(head_[0]) : static_cast<C>(head_[0]) + static_cast<C>(head_[1]));
        ref.magnitude[i] = std::fabs(static_cast<double>(head_[0])) + (len_ == 2 ? std::fabs(static_cast<double>(head_[1])) : 0);
      } else if (float_sum_ && len_) {
        v = detail::round_exact(sum_.raw(), dtype_of<T>);
        ref.magnitude[i] = magnitude_;
      } else if (float_prod_ && len_) {
        v = Scalar::of<C>(static_cast<C>(product_));
        ref.magnitude[i] = std::fabs(static_cast<double>(product_));
        ref.order_dependent[i] = range_.order_dependent();
      }
    }
    if (len_ && !float_sum_ && !float_prod_) v = wide_ ? Scalar::of<W>(wide_value_) : Scalar::of<T>(value_);
    store_value(ref, i, v);
  }

 private:
  static void store_value(SegmentReference& ref, std::uint64_t i, const Scalar& v) {
    visit_dtype(ref.values.type(), [&](auto r) {
      using R = decltype(r);
      ref.values.as<R>()[i] = v.as<R>();
    });
  }

  template <class F> pair_record_t<F::op, T>& record() { return std::get<pair_record_t<F::op, T>>(records_); }
  template <class F> const pair_record_t<F::op, T>& record() const {
    return std::get<pair_record_t<F::op, T>>(records_);
  }

  // A float sum's exact sum and sum |x|; a long contiguous part with every thread, each into an
  // exact sum of its own, merged (exactly; only the magnitude's rounding, a bound, may differ).
  void add_sum(const T* x, std::uint64_t n, std::uint64_t step) {
    const auto add_part = [](ExactSum& sum, double& magnitude, const T* y, std::uint64_t m, std::uint64_t s) {
      if constexpr (!is_half_v<T>) {
        if (s == 1) {
          sum.add(y, m);
          for (std::uint64_t k = 0; k < m; ++k) magnitude += std::fabs(static_cast<double>(y[k]));
          return;
        }
      }
      for (std::uint64_t k = 0; k < m; ++k) {
        sum.add(static_cast<C>(y[k * s]));
        magnitude += std::fabs(static_cast<double>(y[k * s]));
      }
    };
#ifdef _OPENMP
    if (step == 1 && n >= (std::uint64_t{1} << 20) && !omp_in_parallel()) {
      std::vector<ExactSum> parts(static_cast<std::size_t>(omp_get_max_threads()));
      std::vector<double> magnitudes(parts.size());
#pragma omp parallel
      {
        const auto t = static_cast<std::uint64_t>(omp_get_thread_num()), nt = static_cast<std::uint64_t>(omp_get_num_threads());
        const std::uint64_t lo = n * t / nt, hi = n * (t + 1) / nt;
        add_part(parts[t], magnitudes[t], x + lo, hi - lo, 1);
      }
      for (std::size_t t = 0; t < parts.size(); ++t) {
        sum_.merge(parts[t]);
        magnitude_ += magnitudes[t];
      }
      return;
    }
#endif
    add_part(sum_, magnitude_, x, n, step);
  }

  Op op_;
  Accumulator acc_;
  bool float_sum_, float_prod_, wide_;
  std::uint64_t len_ = 0;
  T head_[2]{};                                // float sums: the first two terms
  ExactSum sum_;                               // float sums
  double magnitude_ = 0;                       // float sums: sum |x|
  long double product_ = 1;                    // float products
  detail::ProductRange<C> range_;              // float products
  T value_{};                                  // the other folds, of the input type
  W wide_value_{};                             // sums of narrow integers (Accumulator::Wide)
  std::tuple<Located<T>, Bounds<T>> records_;  // the pair ops
  std::optional<detail::MappedReference<T>> mapped_;  // the mapped ops
};

void reference_mapped_segments(const void* data, const SegmentLayout& layout, Accumulator acc, SegmentReference& ref) {
  visit_dtype(ref.type, [&](auto zero) {
    using T = decltype(zero);
    const T* x = static_cast<const T*>(data);
    const bool columns = layout.kind == SegmentKind::Columns;
    each_segment(layout.count, [&](std::uint64_t i) {
      SegmentState<T> s(ref.op, ref.type, acc);
      if (columns) s.add(x + i, layout.length, layout.stride);
      else s.add(x + detail::segment_range(layout, i).begin, segment_length(layout, i), 1);
      s.store(ref, i, acc);
    });
  });
}

// Segments at least this long, in a run read whole, are added with every thread (SegmentState::add_sum)
// after the shorter ones, each of which takes one thread.
constexpr std::uint64_t kLongSegment = std::uint64_t{1} << 20;

template <class T>
void stream_runs(ChunkSource& source, const SegmentLayout& l, Op op, Accumulator acc, std::uint64_t chunk,
                 SegmentReference& ref) {
  // One buffer of a chunk, or of the elements the layout reaches where they are fewer.
  std::vector<T> buffer(std::min(chunk, l.span()));
  std::vector<std::uint64_t> long_ones;
  std::uint64_t i = 0;
  while (i < l.count) {
    const detail::Range first = detail::segment_range(l, i);
    if (first.end - first.begin > chunk) {  // one segment longer than a chunk, in parts, in order
      SegmentState<T> s(op, dtype_of<T>, acc);
      for (std::uint64_t b = first.begin; b < first.end; b += chunk) {
        const std::uint64_t len = std::min(chunk, first.end - b);
        source.read(b, len, buffer.data());
        s.add(buffer.data(), len, 1);
      }
      s.store(ref, i++, acc);
      continue;
    }
    std::uint64_t j = i + 1;  // segments [i, j) lie within a chunk from first.begin
    while (j < l.count && detail::segment_range(l, j).end - first.begin <= chunk) ++j;
    // Empty rows may start past the last element (rows of no columns, whatever their stride).
    const std::uint64_t end = std::min(std::max(first.end, detail::segment_range(l, j - 1).end), l.span());
    if (end > first.begin) source.read(first.begin, end - first.begin, buffer.data());
    const T* x = buffer.data();
    long_ones.clear();
#pragma omp parallel for schedule(dynamic, 256)
    for (std::int64_t signed_k = static_cast<std::int64_t>(i); signed_k < static_cast<std::int64_t>(j); ++signed_k) {
      const auto k = static_cast<std::uint64_t>(signed_k);
      const detail::Range r = detail::segment_range(l, k);
      if (r.end - r.begin >= kLongSegment) {
#pragma omp critical
        long_ones.push_back(k);
        continue;
      }
      SegmentState<T> s(op, dtype_of<T>, acc);
      s.add(x + (r.begin - first.begin), r.end - r.begin, 1);
      s.store(ref, k, acc);
    }
    for (const std::uint64_t k : long_ones) {
      const detail::Range r = detail::segment_range(l, k);
      SegmentState<T> s(op, dtype_of<T>, acc);
      s.add(x + (r.begin - first.begin), r.end - r.begin, 1);
      s.store(ref, k, acc);
    }
    i = j;
  }
}

// Columns: bands of as many columns as `chunk_bytes` of states hold (all of them, mostly), each read
// in tiles of whole rows of the band; every column's state stays open until its last row.
template <class T>
void stream_columns(ChunkSource& source, const SegmentLayout& l, Op op, Accumulator acc, std::uint64_t chunk,
                    std::uint64_t chunk_bytes, SegmentReference& ref) {
  const std::uint64_t width =
      std::min<std::uint64_t>(l.count, std::max<std::uint64_t>(1, chunk_bytes / sizeof(SegmentState<T>)));
  // One band of every column with rows no longer than a chunk: tiles of whole rows, read at once
  // (gaps of a stride included); else each row's part of the band.
  const bool spans = width == l.count && l.stride <= chunk;
  const std::uint64_t height = std::max<std::uint64_t>(1, chunk / (spans ? l.stride : width));
  std::vector<T> buffer(std::min(height, l.length) * (spans ? l.stride : width));
  std::vector<SegmentState<T>> states(width, SegmentState<T>(op, dtype_of<T>, acc));
  for (std::uint64_t col = 0; col < l.count; col += width) {
    const std::uint64_t w = std::min(width, l.count - col);
    const std::uint64_t step = spans ? l.stride : w;  // a band's rows lie packed, `w` apart
    for (std::uint64_t k = 0; k < w; ++k) states[k].reset();
    for (std::uint64_t row = 0; row < l.length; row += height) {
      const std::uint64_t h = std::min(height, l.length - row);
      if (spans) {
        source.read(row * l.stride, (h - 1) * l.stride + w, buffer.data());
      } else {
        for (std::uint64_t r = 0; r < h; ++r) source.read((row + r) * l.stride + col, w, buffer.data() + r * w);
      }
      const T* x = buffer.data();
#pragma omp parallel for schedule(static)
      for (std::int64_t k = 0; k < static_cast<std::int64_t>(w); ++k)
        states[static_cast<std::size_t>(k)].add(x + k, h, step);
    }
#pragma omp parallel for schedule(static)
    for (std::int64_t k = 0; k < static_cast<std::int64_t>(w); ++k)
      states[static_cast<std::size_t>(k)].store(ref, col + static_cast<std::uint64_t>(k), acc);
  }
}

}  // namespace

SegmentReference reference_segments(ChunkSource& source, const SegmentLayout& layout, Op op, Accumulator acc,
                                    std::uint64_t chunk_bytes) {
  if (const void* memory = source.memory())
    return reference_segments(HostArray{memory, source.size(), source.type()}, layout, op, acc);
  if (layout.span() > source.size())
    throw InvalidArgument("reference_segments: the layout reaches element " + std::to_string(layout.span()) +
                          " of an input of " + std::to_string(source.size()));
  const DType type = source.type();
  SegmentReference ref;
  ref.op = op;
  ref.type = type;
  ref.values = HostBuffer(result_dtype(op, type, acc), layout.count);
  ref.length.resize(layout.count);
  if (op == Op::MinMax) ref.maxima = HostBuffer(type, layout.count);
  else if (is_pair(op)) ref.indices.resize(layout.count);
  if (has_magnitude(op, type, acc)) ref.magnitude.resize(layout.count);
  if (is_float(type) && op == Op::Prod) ref.order_dependent.resize(layout.count);
  if (!layout.count) return ref;
  visit_dtype(type, [&](auto zero) {
    using T = decltype(zero);
    const std::uint64_t chunk = std::max<std::uint64_t>(1, chunk_bytes / sizeof(T));
    if (layout.kind == SegmentKind::Columns) {
      if (layout.length == 0) {
        SegmentState<T> empty(op, type, acc);
        for (std::uint64_t i = 0; i < layout.count; ++i) empty.store(ref, i, acc);
      } else {
        stream_columns<T>(source, layout, op, acc, chunk, chunk_bytes, ref);
      }
    } else {
      stream_runs<T>(source, layout, op, acc, chunk, ref);
    }
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
