// Segmented reductions on the host CPU (core/src/segment_device.hpp).
//   rows     Rows and Offsets: the elements of all segments split evenly over the threads, so a
//            thread may hold many short segments or a piece of a long one; each run folds in
//            independent SIMD lanes; pieces of a segment split between threads combine in order.
//   columns  Columns: SIMD across columns. Rows split over the threads, each streaming its rows
//            into its own row of partials (narrow arrays fold several rows per vector); arrays
//            too wide for a thread's partials to stay in cache split their columns instead.
#include "segments.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <utility>
#include <cstring>
#include <vector>

#include "ladder.hpp"
#include "policy.hpp"
#include "xreduce/error.hpp"
#include "xreduce/semantics.hpp"

namespace xr::omp::detail {
namespace {

using xr::detail::ExactPiece;
using xr::detail::SegmentJob;
using xr::detail::SegmentOutcome;

template <class A> constexpr std::uint64_t kLanes = kLaneBytes / sizeof(A);

// op over n elements x[0], x[step], ...: kLanes independent lanes when contiguous and long enough.
template <Op O, class T, class A> A fold(const T* x, std::uint64_t n) {
  constexpr std::uint64_t K = kLanes<A>;
  A r = identity<A>(O);
  std::uint64_t i = 0;
  if (n >= 2 * K) {
    A lane[K];
    for (auto& a : lane) a = identity<A>(O);
    for (; i + K <= n; i += K)
      for (std::uint64_t j = 0; j < K; ++j) lane[j] = OpFn<O>::apply(lane[j], static_cast<A>(x[i + j]));
    for (const auto& a : lane) r = OpFn<O>::apply(r, a);
  }
  for (; i < n; ++i) r = OpFn<O>::apply(r, static_cast<A>(x[i]));
  return r;
}

// op over exactly L contiguous elements, unrolled: a loop over short dense rows then vectorises
// across rows.
template <Op O, class T, class A, std::uint64_t L> A fold_fixed(const T* x) {
  A r = static_cast<A>(x[0]);
  for (std::uint64_t k = 1; k < L; ++k) r = OpFn<O>::apply(r, static_cast<A>(x[k]));
  return r;
}

// Dense rows of L <= kShortRow elements: one tight loop over rows, the row length a constant.
template <Op O, class T, class A, std::uint64_t L> void run_short_rows(const T* x, std::uint64_t rows, A* out, int threads) {
  const auto count = static_cast<std::int64_t>(rows);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t i = 0; i < count; ++i) out[i] = fold_fixed<O, T, A, L>(x + static_cast<std::uint64_t>(i) * L);
}

template <Op O, class T, class A, std::uint64_t... L>
bool short_rows(const T* x, const SegmentLayout& l, A* out, int threads, std::integer_sequence<std::uint64_t, L...>) {
  return ((l.length == L + 1 && (run_short_rows<O, T, A, L + 1>(x, l.count, out, threads), true)) || ...);
}

template <class A> A empty_of(Op op) {
  return op == Op::Min || op == Op::Max ? identity<A>(op) : empty_value<A>(op);
}

// Threads for `elements` of work: one per kMinSegmentElementsPerThread at least.
int team(const RunOptions& options, std::uint64_t elements) {
  const auto want = static_cast<std::uint64_t>(thread_count(options));
  return static_cast<int>(std::clamp<std::uint64_t>(elements / kMinSegmentElementsPerThread, 1, want));
}

// A piece of a segment that a thread did not hold whole: its value, combined in thread order.
template <class A> struct Part {
  std::uint64_t segment = ~std::uint64_t{0};
  A value{};
};

template <Op O, class T, class A> std::uint64_t run_rows(const T* x, const SegmentLayout& l, A* out, int threads) {
  const bool rows = l.kind == SegmentKind::Rows;
  if (rows && l.length == 0) {
    for (std::uint64_t i = 0; i < l.count; ++i) out[i] = empty_of<A>(O);
    return 0;
  }
  if (rows && l.stride == l.length && short_rows<O, T, A>(x, l, out, threads, std::make_integer_sequence<std::uint64_t, kShortRow>{}))
    return l.length;
  const std::uint64_t base = rows ? 0 : static_cast<std::uint64_t>(l.offsets[0]);
  const std::uint64_t total = rows ? l.count * l.length : static_cast<std::uint64_t>(l.offsets[l.count]) - base;
  const auto begin = [&](std::uint64_t i) { return rows ? i * l.length : static_cast<std::uint64_t>(l.offsets[i]) - base; };
  const auto end = [&](std::uint64_t i) { return rows ? (i + 1) * l.length : static_cast<std::uint64_t>(l.offsets[i + 1]) - base; };
  const auto at = [&](std::uint64_t v, std::uint64_t i) { return rows ? x + i * l.stride + (v - i * l.length) : x + base + v; };
  // The segment that holds virtual position v (0 <= v < total); empty segments hold none.
  const auto holder = [&](std::uint64_t v) -> std::uint64_t {
    if (rows) return v / l.length;
    const auto* e = std::upper_bound(l.offsets, l.offsets + l.count + 1, static_cast<std::int64_t>(v + base));
    return static_cast<std::uint64_t>(e - l.offsets) - 1;
  };
  std::vector<Part<A>> parts(2 * static_cast<std::size_t>(threads));
#pragma omp parallel num_threads(threads)
  {
    const auto nt = static_cast<std::uint64_t>(omp_get_num_threads()), t = static_cast<std::uint64_t>(omp_get_thread_num());
    if (!rows) {  // empty segments first: they hold no position, so no share below writes them
#pragma omp for schedule(static)
      for (std::int64_t i = 0; i < static_cast<std::int64_t>(l.count); ++i)
        if (l.offsets[i] == l.offsets[i + 1]) out[i] = empty_of<A>(O);
    }
    const std::uint64_t lo = total * t / nt, hi = total * (t + 1) / nt;
    if (lo < hi) {
      for (std::uint64_t i = holder(lo), last = holder(hi - 1); i <= last; ++i) {
        const std::uint64_t b = begin(i), e = end(i);
        if (b == e) continue;
        const std::uint64_t from = std::max(b, lo), to = std::min(e, hi);
        const A v = fold<O, T, A>(at(from, i), to - from);
        if (from == b && to == e) out[i] = v;
        else parts[2 * t + (from == b ? 1 : 0)] = {i, v};
      }
    }
  }
  // Segments split between threads: their pieces, in thread (so element) order.
  std::uint64_t open = ~std::uint64_t{0};
  for (const auto& p : parts) {
    if (p.segment == ~std::uint64_t{0}) continue;
    out[p.segment] = p.segment == open ? OpFn<O>::apply(out[p.segment], p.value) : p.value;
    open = p.segment;
  }
  const std::uint64_t longest = rows ? l.length : total;
  return std::min(longest, total / static_cast<std::uint64_t>(threads) + 1) / kLanes<A> + kLanes<A> + static_cast<std::uint64_t>(threads);
}

template <Op O, class T, class A> std::uint64_t run_columns(const T* x, const SegmentLayout& l, A* out, int threads) {
  const std::uint64_t cols = l.count, rows = l.length;
  // Rows [r0, r1) of columns [c0, c1) into acc. Narrow dense arrays fold kNarrowWidth elements
  // of consecutive rows at a time (element f of a group belongs to column f % cols), so the
  // inner loop is as long as a vector whatever the width.
  const auto fold_rows = [&](std::uint64_t r0, std::uint64_t r1, std::uint64_t c0, std::uint64_t c1, A* acc) {
    const std::uint64_t w = c1 - c0;
    for (std::uint64_t c = 0; c < w; ++c) acc[c] = identity<A>(O);
    std::uint64_t r = r0;
    if (l.stride == cols && w == cols && cols < kNarrowWidth) {
      const std::uint64_t group = kNarrowWidth / cols, width = group * cols;
      A lane[kNarrowWidth];
      for (std::uint64_t f = 0; f < width; ++f) lane[f] = identity<A>(O);
      for (; r + group <= r1; r += group) {
        const T* g = x + r * cols;
        for (std::uint64_t f = 0; f < width; ++f) lane[f] = OpFn<O>::apply(lane[f], static_cast<A>(g[f]));
      }
      for (std::uint64_t f = 0; f < width; ++f) acc[f % cols] = OpFn<O>::apply(acc[f % cols], lane[f]);
    }
    for (; r < r1; ++r) {
      const T* row = x + r * l.stride + c0;
      for (std::uint64_t c = 0; c < w; ++c) acc[c] = OpFn<O>::apply(acc[c], static_cast<A>(row[c]));
    }
  };
  if (rows == 0) {
    for (std::uint64_t c = 0; c < cols; ++c) out[c] = empty_of<A>(O);
    return 0;
  }
  if (cols * sizeof(A) > kColumnPartialBytes) {  // very wide: columns over threads, in bands
#pragma omp parallel num_threads(threads)
    {
      const auto nt = static_cast<std::uint64_t>(omp_get_num_threads()), t = static_cast<std::uint64_t>(omp_get_thread_num());
      const std::uint64_t c0 = cols * t / nt, c1 = cols * (t + 1) / nt;
      for (std::uint64_t b = c0; b < c1; b += kColumnBand) fold_rows(0, rows, b, std::min(c1, b + kColumnBand), out + b);
    }
    return rows;
  }
  // Rows over threads, each streaming its rows into its own partials; then the partials in
  // thread order.
  std::vector<A> partial(static_cast<std::size_t>(threads) * cols);
  std::vector<int> used(static_cast<std::size_t>(threads), 0);
#pragma omp parallel num_threads(threads)
  {
    const auto nt = static_cast<std::uint64_t>(omp_get_num_threads()), t = static_cast<std::uint64_t>(omp_get_thread_num());
    const std::uint64_t r0 = rows * t / nt, r1 = rows * (t + 1) / nt;
    if (r0 < r1) {
      fold_rows(r0, r1, 0, cols, partial.data() + t * cols);
      used[t] = 1;
    }
  }
  bool first = true;
  for (std::size_t t = 0; t < used.size(); ++t) {
    if (!used[t]) continue;
    for (std::uint64_t c = 0; c < cols; ++c)
      out[c] = first ? partial[t * cols + c] : OpFn<O>::apply(out[c], partial[t * cols + c]);
    first = false;
  }
  return rows / static_cast<std::uint64_t>(threads) + 1 + static_cast<std::uint64_t>(threads);
}

// Instantiates R<O, T, A> for the job's (op, type, accumulator).
template <class F> std::uint64_t dispatch(const SegmentJob& job, int threads, F run) {
  return visit_dtype(job.type, [&](auto zero) {
    using T = decltype(zero);
    return visit_op(job.op, [&](auto fn) {
      constexpr Op O = decltype(fn)::op;
      const T* x = static_cast<const T*>(job.data);
      if (job.options.accumulator == Accumulator::Native) {
        using A = accumulator_t<O, T, Accumulator::Native>;
        return run.template operator()<O, T, A>(x, job.layout, static_cast<A*>(job.out), threads);
      }
      using A = accumulator_t<O, T, Accumulator::Wide>;
      return run.template operator()<O, T, A>(x, job.layout, static_cast<A*>(job.out), threads);
    });
  });
}

KernelInfo strategy(std::string name, std::string note, KernelKind kind, std::vector<SegmentKind> layouts) {
  KernelInfo k;
  k.name = std::move(name);
  k.note = std::move(note);
  k.kind = kind;
  k.ops.assign(all_ops.begin(), all_ops.end());
  k.types.assign(all_dtypes.begin(), all_dtypes.end());
  k.exact = true;
  k.layouts = std::move(layouts);
  return k;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::vector<KernelInfo> HostSegments::kernels() const {
  return {
      strategy("auto", "rows for rows and segments, columns for columns", KernelKind::Auto,
               {SegmentKind::Rows, SegmentKind::Offsets, SegmentKind::Columns}),
      strategy("rows", "elements split evenly over threads, SIMD lanes within a run: any mix of lengths",
               KernelKind::Rung, {SegmentKind::Rows, SegmentKind::Offsets}),
      strategy("columns", "SIMD across columns, rows streamed per thread into partials: reads in order, one partial row per thread", KernelKind::Rung,
               {SegmentKind::Columns}),
  };
}

SegmentOutcome HostSegments::reduce(const SegmentJob& job) {
  const bool columns = job.layout.kind == SegmentKind::Columns;
  const int threads = team(job.options, job.layout.elements());
  std::vector<double> times;
  std::uint64_t depth = 0;
  for (int it = 0; it < job.options.warmup + job.options.repeat; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
    if (columns)
      depth = dispatch(job, threads, []<Op O, class T, class A>(const T* x, const SegmentLayout& l, A* out, int nt) {
        return run_columns<O, T, A>(x, l, out, nt);
      });
    else
      depth = dispatch(job, threads, []<Op O, class T, class A>(const T* x, const SegmentLayout& l, A* out, int nt) {
        return run_rows<O, T, A>(x, l, out, nt);
      });
    if (it >= job.options.warmup) times.push_back(ms_since(t0));
  }
  SegmentOutcome o;
  o.kernel_ms = median(times);
  o.launches = 1;
  const std::string name = columns ? "columns" : "rows";
  o.kernel = job.options.kernel == "auto" ? "auto:" + name : name;
  o.finish = columns ? "partials in thread order" : "split segments' pieces in thread order";
  o.depth = job.op == Op::Sum && is_float(job.type) ? depth : 0;
  return o;
}

SegmentOutcome HostSegments::exact_pieces(const void* data, std::uint64_t, DType type, std::span<const ExactPiece> pieces,
                                          std::int64_t* words, const RunOptions& options) {
  const int threads = team(options, pieces.size() * 64);
  const auto count = static_cast<std::int64_t>(pieces.size());
  const auto width = static_cast<std::size_t>(xr::detail::exact_piece_words(type));
  std::vector<double> times;
  for (int it = 0; it < options.warmup + options.repeat; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for num_threads(threads) schedule(dynamic, 64)
    for (std::int64_t p = 0; p < count; ++p) {
      std::int64_t* w = words + static_cast<std::size_t>(p) * width;
      if (type == DType::F32) xr::detail::exact_piece_state(static_cast<const float*>(data), pieces[p], w);
      else xr::detail::exact_piece_state(static_cast<const double*>(data), pieces[p], w);
    }
    if (it >= options.warmup) times.push_back(ms_since(t0));
  }
  SegmentOutcome o;
  o.kernel_ms = median(times);
  o.launches = 1;
  o.kernel = options.kernel == "auto" ? "auto:exact pieces" : options.kernel + ":exact pieces";
  o.finish = "exact pieces";
  return o;
}

}  // namespace xr::omp::detail
