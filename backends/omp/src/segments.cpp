// Segmented reductions on the host CPU (core/src/segment_device.hpp): the strategies' rows, the
// timed runs of the folds (segment_folds.hpp, one translation unit a type) and the exact pieces.
#include "segments.hpp"
#include "short_exact.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <type_traits>
#include <vector>

#include "fold_segments.hpp"
#include "ladder.hpp"
#include "regions.hpp"
#include "team.hpp"
#include "widen.hpp"
#include "xreduce/error.hpp"
#include "xreduce/semantics.hpp"

namespace xr::omp::detail {
namespace {

using xr::detail::ExactPiece;
using xr::detail::Region;
using xr::detail::RegionErrors;
using xr::detail::SegmentJob;
using xr::detail::SegmentOutcome;

// A strategy's row: the ops it takes (the folds, with exact sums through pieces; or the pair ops).
template <std::size_t N>
KernelInfo strategy(std::string name, std::string note, KernelKind kind, std::vector<SegmentKind> layouts,
                    const std::array<Op, N>& ops) {
  KernelInfo k;
  k.name = std::move(name);
  k.note = std::move(note);
  k.kind = kind;
  k.ops.assign(ops.begin(), ops.end());
  k.types = segment_dtypes();
  k.exact = std::find(k.ops.begin(), k.ops.end(), Op::Sum) != k.ops.end();
  k.layouts = std::move(layouts);
  return k;
}

// The exact state of a piece of f16 or bf16: that of its values widened to f32 (each exactly), in
// `wide`, with the f32 window (exact_piece_words(compute_dtype(type)) words).
template <class T> void half_piece_state(const T* x, const ExactPiece& piece, std::vector<float>& wide, std::int64_t* words) {
  const auto count = static_cast<std::uint64_t>(piece.count);
  wide.resize(count);
  if (piece.step == 1) {
    widen(x + piece.first, wide.data(), count);
  } else {
    for (std::uint64_t k = 0; k < count; ++k)
      wide[k] = static_cast<float>(x[piece.first + static_cast<std::int64_t>(k) * piece.step]);
  }
  xr::detail::exact_piece_state(wide.data(), ExactPiece{0, piece.count, 1}, words);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::vector<KernelInfo> Segments::kernels() const {
  const std::vector<SegmentKind> every{SegmentKind::Rows, SegmentKind::Offsets, SegmentKind::Columns};
  return {
      strategy("auto", "rows for rows and segments, columns for columns; pairs for argmin, argmax, minmax",
               KernelKind::Auto, every, all_ops),
      strategy("rows", "elements split evenly over threads, SIMD lanes within a run: any mix of lengths",
               KernelKind::Rung, {SegmentKind::Rows, SegmentKind::Offsets}, folding_ops),
      strategy("columns", "SIMD across columns, rows streamed per thread into partials: reads in order, one partial row per thread", KernelKind::Rung,
               {SegmentKind::Columns}, folding_ops),
      strategy("pairs", "argmin, argmax, minmax: segments over threads, columns in blocks by bands of rows, "
                        "scalar compares in index order; no SIMD, one thread per segment",
               KernelKind::Rung, every, pair_ops),
  };
}

SegmentOutcome Segments::reduce(const SegmentJob& job) {
  const bool columns = job.layout.kind == SegmentKind::Columns, pairs = is_pair(job.op);
  const int threads = team_size(job.options, job.layout.elements() * size_of(job.type));
  std::vector<double> times;
  std::uint64_t depth = 0;
  for (int it = 0; it < job.options.warmup + job.options.repeat; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
    if (pairs)
      reduce_pairs(job, threads);
    else
      depth = visit_dtype(job.type, [&](auto zero) { return fold_segments<dtype_of<decltype(zero)>>(job, threads); });
    if (it >= job.options.warmup) times.push_back(ms_since(t0));
  }
  SegmentOutcome o;
  o.kernel_ms = median(times);
  o.launches = 1;
  const std::string name = pairs ? "pairs" : columns ? "columns" : "rows";
  o.kernel = job.options.kernel == "auto" ? "auto:" + name : name;
  o.finish = pairs ? (columns ? "row bands' records by PairFn" : "one thread per segment")
             : columns ? "partials in thread order" : "split segments' pieces in thread order";
  o.depth = fold_of(job.op) == Op::Sum && is_float(result_dtype(job.op, job.type, job.options.accumulator)) ? depth : 0;
  return o;
}

SegmentOutcome Segments::exact_pieces(xr::detail::Memory memory, std::uint64_t, DType type,
                                          std::span<const ExactPiece> pieces, std::int64_t* words,
                                          const RunOptions& options) {
  const void* data = memory.address();
  const int threads = team_size(options, pieces.size() * 64 * size_of(type));
  const auto count = static_cast<std::int64_t>(pieces.size());
  const auto width = static_cast<std::size_t>(xr::detail::exact_piece_words(compute_dtype(type)));
  // One piece's exact state into words; f16 and bf16 widened to f32 in `wide` first.
  using PieceState = void (*)(const void* data, const ExactPiece& piece, std::vector<float>& wide, std::int64_t* words);
  const PieceState piece_state = visit_dtype(type, [&](auto t) -> PieceState {
    using T = decltype(t);
    if constexpr (is_half_v<T>)
      return [](const void* x, const ExactPiece& piece, std::vector<float>& wide, std::int64_t* words) {
        half_piece_state(static_cast<const T*>(x), piece, wide, words);
      };
    else if constexpr (std::is_floating_point_v<T>)
      return [](const void* x, const ExactPiece& piece, std::vector<float>&, std::int64_t* words) {
        xr::detail::exact_piece_state(static_cast<const T*>(x), piece, words);
      };
    else
      throw InvalidArgument("omp: exact pieces are float sums, not " + std::string(to_string(type)));
  });
  std::vector<double> times;
  for (int it = 0; it < options.warmup + options.repeat; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
    // A piece's state may throw (std::bad_alloc widening f16 and bf16): each iteration is
    // guarded, and once a thread has failed the others skip the pieces left.
    RegionErrors errors;
#pragma omp parallel num_threads(threads)
    {
      errors.enter(Region::OmpExactPieces);
      std::vector<float> wide;  // f16 and bf16: a piece widened to f32
#pragma omp for schedule(dynamic, 64)
      for (std::int64_t p = 0; p < count; ++p) {
        if (errors.failed()) continue;
        errors.guard([&] {
          std::int64_t* w = words + static_cast<std::size_t>(p) * width;
          piece_state(data, pieces[p], wide, w);
        });
      }
    }
    errors.rethrow();
    if (it >= options.warmup) times.push_back(ms_since(t0));
  }
  SegmentOutcome o;
  o.kernel_ms = median(times);
  o.launches = 1;
  o.kernel = options.kernel == "auto" ? "auto:exact pieces" : options.kernel + ":exact pieces";
  o.finish = "exact pieces";
  return o;
}

// Each thread a band of rows or columns, each summed in a 128-bit integer and rounded
// (short_exact.hpp); those that do not fit it are listed, in thread order.
std::optional<SegmentOutcome> Segments::exact_short_segments(xr::detail::Memory memory, std::uint64_t, DType type,
                                                            const SegmentLayout& l, xr::detail::Memory out,
                                                            std::vector<std::uint64_t>& missed,
                                                            const RunOptions& options) {
  const int threads = team_size(options, l.elements() * size_of(type));
  const auto count = static_cast<std::int64_t>(l.count);
  // Where segment k starts, and the step between its terms.
  const std::uint64_t first_step = l.kind == SegmentKind::Rows ? l.stride : 1;
  const std::uint64_t term_step = l.kind == SegmentKind::Rows ? 1 : l.stride;
  std::vector<std::vector<std::uint64_t>> missed_by(static_cast<std::size_t>(threads));
  const auto sum_segments = [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    const T* x = static_cast<const T*>(memory.address());
    C* values = static_cast<C*>(out.mutable_address());
    RegionErrors errors;
#pragma omp parallel num_threads(threads)
    {
      errors.enter(Region::OmpExactShortSegments);
      std::vector<std::uint64_t>& mine = missed_by[static_cast<std::size_t>(omp_get_thread_num())];
      mine.clear();
#pragma omp for schedule(static)
      for (std::int64_t k = 0; k < count; ++k) {
        const T* segment = x + static_cast<std::uint64_t>(k) * first_step;
        const std::uint64_t step = term_step;  // a copy: clang's OpenMP cannot capture the enclosing function's local
        const auto term = [&](std::uint64_t r) { return static_cast<C>(segment[r * step]); };
        if (!xr::detail::short_exact_sum(term, l.length, values[k]))
          errors.guard([&] { mine.push_back(static_cast<std::uint64_t>(k)); });
      }
    }
    errors.rethrow();
  };
  std::vector<double> times;
  for (int it = 0; it < options.warmup + options.repeat; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
    visit_dtype(type, [&](auto zero) {
      if constexpr (is_float_v<decltype(zero)>) sum_segments(zero);
      else throw InvalidArgument("omp: exact sums are of float types, not " + std::string(to_string(type)));
    });
    if (it >= options.warmup) times.push_back(ms_since(t0));
  }
  for (const auto& part : missed_by) missed.insert(missed.end(), part.begin(), part.end());
  SegmentOutcome o;
  o.kernel_ms = median(times);
  o.launches = 1;
  o.kernel = (options.kernel == "auto" ? "auto:exact short " : options.kernel + ":exact short ") + std::string(to_string(l.kind));
  o.finish = "each segment in a 128-bit integer";
  o.depth = 1;
  return o;
}

double Segments::read(xr::detail::Memory from, void* to, std::uint64_t bytes) {
  if (bytes) std::memcpy(to, from.address(), bytes);
  return 0;
}

double Segments::write(const void* from, xr::detail::Memory to, std::uint64_t bytes) {
  if (bytes) std::memcpy(to.mutable_address(), from, bytes);
  return 0;
}

}  // namespace xr::omp::detail
