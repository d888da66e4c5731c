// pairs: the pair ops (argmin, argmax, minmax) of every segment, row and column on the host CPU.
// Rows and offsets: segments over the threads (dynamic schedule), each scanned in order with
// core's replaces (the first extreme, the first NaN). Columns: blocks of columns by bands of rows,
// a thread walking its band row by row (reads in memory order) into one record per column, the
// bands' records combined by PairFn (their indices are rows, so any order gives the first).
// Improves on nothing before it (the fold strategies take no pair ops); costs one scalar compare
// per element, no SIMD, and one thread for a single long segment.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "arith.hpp"
#include "policy.hpp"
#include "regions.hpp"
#include "segments.hpp"
#include "xreduce/semantics.hpp"

namespace xr::omp::detail {
namespace {

using xr::detail::ceil_div;
using xr::detail::Region;
using xr::detail::RegionErrors;
using xr::detail::SegmentJob;

// Columns a block of the columns layout keeps records for: 4 KiB of f32 input a row.
constexpr std::uint64_t kPairColumnBlock = 1024;

// A record over C (the type T computes in) fed element v at index i, found after every element it
// has seen (core's PairFn, without comparing indices).
template <Op O, class C> void feed(pair_record_t<O, C>& r, C v, std::int64_t i) {
  if constexpr (O == Op::MinMax) {
    r.min = OpFn<Op::Min>::apply(r.min, v);
    r.max = OpFn<Op::Max>::apply(r.max, v);
  } else {
    if (r.index == kNoIndex || replaces<PairFn<O>::fold>(r.value, v)) r = {v, i};
  }
}

// A record over C stored as the input type T: kNoIndex (an empty segment) as -1.
template <Op O, class T, class C> pair_record_t<O, T> stored(const pair_record_t<O, C>& r) {
  if constexpr (O == Op::MinMax) return {static_cast<T>(r.min), static_cast<T>(r.max)};
  else return {static_cast<T>(r.value), r.index == kNoIndex ? -1 : r.index};
}

template <Op O, class T> void pair_segments(const T* x, const SegmentLayout& l, pair_record_t<O, T>* out, int threads) {
  using C = compute_t<T>;
  const auto count = static_cast<std::int64_t>(l.count);
  RegionErrors errors;
#pragma omp parallel num_threads(threads)
  {
    errors.enter(Region::OmpPairSegments);
#pragma omp for schedule(dynamic, 64)
    for (std::int64_t si = 0; si < count; ++si) {
      const auto i = static_cast<std::uint64_t>(si);
      const xr::detail::Range range = xr::detail::segment_range(l, i);
      auto r = PairFn<O>::template identity<C>();
      const T* seg = x + range.begin;
      const auto len = static_cast<std::int64_t>(range.end - range.begin);
      for (std::int64_t k = 0; k < len; ++k) feed<O, C>(r, static_cast<C>(seg[k]), k);
      out[i] = stored<O, T>(r);
    }
  }
  errors.rethrow();
}

template <Op O, class T> void pair_columns(const T* x, const SegmentLayout& l, pair_record_t<O, T>* out, int threads) {
  using C = compute_t<T>;
  using R = pair_record_t<O, C>;
  const std::uint64_t cols = l.count, rows = l.length;
  const std::uint64_t blocks = ceil_div(cols, kPairColumnBlock);
  // Bands of rows where there are fewer column blocks than threads.
  const std::uint64_t bands =
      std::clamp<std::uint64_t>(static_cast<std::uint64_t>(threads) / blocks, 1, std::max<std::uint64_t>(1, rows / 64));
  const std::uint64_t band_rows = ceil_div(rows, bands);
  std::vector<R> partial(bands * cols, PairFn<O>::template identity<C>());
  const auto tasks = static_cast<std::int64_t>(blocks * bands);
  RegionErrors errors;
#pragma omp parallel num_threads(threads)
  {
    errors.enter(Region::OmpPairColumns);
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t task = 0; task < tasks; ++task) {
      const std::uint64_t block = static_cast<std::uint64_t>(task) % blocks, band = static_cast<std::uint64_t>(task) / blocks;
      const std::uint64_t c0 = block * kPairColumnBlock, c1 = std::min(cols, c0 + kPairColumnBlock);
      const std::uint64_t r0 = band * band_rows, r1 = std::min(rows, r0 + band_rows);
      R* acc = partial.data() + band * cols;
      for (std::uint64_t r = r0; r < r1; ++r) {
        const T* row = x + r * l.stride;
        for (std::uint64_t c = c0; c < c1; ++c) feed<O, C>(acc[c], static_cast<C>(row[c]), static_cast<std::int64_t>(r));
      }
    }
  }
  errors.rethrow();
  const auto ncols = static_cast<std::int64_t>(cols);
#pragma omp parallel num_threads(threads)
  {
    errors.enter(Region::OmpPairColumnMerge);
#pragma omp for
    for (std::int64_t sc = 0; sc < ncols; ++sc) {
      const auto c = static_cast<std::uint64_t>(sc);
      R r = partial[c];
      for (std::uint64_t b = 1; b < bands; ++b) r = PairFn<O>::apply(r, partial[b * cols + c]);
      out[c] = stored<O, T>(r);
    }
  }
  errors.rethrow();
}

}  // namespace

void reduce_pairs(const SegmentJob& job, int threads) {
  visit_pair(job.op, [&](auto fn) {
    constexpr Op O = decltype(fn)::op;
    visit_dtype(job.type, [&](auto zero) {
      using T = decltype(zero);
      const T* x = static_cast<const T*>(job.data.address());
      auto* out = static_cast<pair_record_t<O, T>*>(job.out.mutable_address());
      if (job.layout.kind == SegmentKind::Columns) pair_columns<O, T>(x, job.layout, out, threads);
      else pair_segments<O, T>(x, job.layout, out, threads);
    });
  });
}

}  // namespace xr::omp::detail
