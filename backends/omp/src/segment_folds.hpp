// The folds of the OpenMP segmented reductions (segments.cpp), one translation unit an element
// type (segment_folds.cpp.in, one copy a type made by CMake), so that a build spreads them over its
// cores: in one file they took 209 s of g++ -O3 and 385 s under ASan at -O1, on one core of the
// 2-core development machine, the last object every build waited for.
//
//   rows     Rows and Offsets: the elements of all segments split evenly over the threads; a
//            thread owns the segments that start in its share and folds each in packs of SIMD
//            lanes; a segment that runs past a share's end takes its pieces from the next
//            threads, combined in order. Dense rows of a length with a loop of its own (1 to
//            kShortRow, powers of two to kFixedRowMax) go in blocks of whole rows over the
//            threads, several rows per vector, their values streamed past the caches when many.
//   columns  Columns: SIMD across columns. Rows split over the threads, each streaming its rows,
//            kColumnRows at a time, into its own row of partials (narrow arrays fold several rows
//            per vector), the partials combined in thread order by all threads; arrays too wide
//            for a thread's partials to stay in cache split their columns instead.
// f16 and bf16 compute in f32: their loads widen them (exactly), and the min and max go back to
// the input type at the end.
#pragma once

#include <omp.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "arith.hpp"
#include "cpu.hpp"
#include "fold_segments.hpp"
#include "policy.hpp"
#include "regions.hpp"
#include "xreduce/semantics.hpp"

namespace xr::omp::detail {
namespace {

using xr::detail::ceil_div;
using xr::detail::ceil_log2;
using xr::detail::Region;
using xr::detail::RegionErrors;
using xr::detail::SegmentJob;

template <class A> constexpr std::uint64_t kLanes = kLaneBytes / sizeof(A);

template <Op O, class A> constexpr A start_of() { return OpFn<O>::template identity<A>(); }

// Share t of nt of [0, total): its first position (share nt is total); no overflow.
std::uint64_t share_start(std::uint64_t total, std::uint64_t t, std::uint64_t nt) {
  return total / nt * t + total % nt * t / nt;
}

template <class A> A empty_of(Op op) {
  return op_info(op).empty_has_value ? empty_value<A>(op) : identity<A>(op);
}

// A piece of a segment that a thread did not hold whole: its value, combined in thread order.
template <class A> struct Part {
  std::uint64_t segment = ~std::uint64_t{0};
  A value{};
};

// The SIMD folds (segment_packs.hpp) in 16-byte packs for the portable build, and in 32-byte
// packs compiled for AVX2 where GCC builds for x86-64 (#pragma GCC target); the rows of a fixed
// length and the columns take the portable ones.
namespace portable {
constexpr std::uint64_t kPackBytes = 16;
#include "segment_packs.hpp"
}  // namespace portable
#if XR_OMP_X86 && !defined(__clang__)
#define XR_OMP_SEGMENTS_AVX2 1
#pragma GCC push_options
#pragma GCC target("avx2,f16c")
namespace avx2 {
constexpr std::uint64_t kPackBytes = 32;
#include "segment_packs.hpp"
}  // namespace avx2
#pragma GCC pop_options
#else
#define XR_OMP_SEGMENTS_AVX2 0
#endif
using namespace portable;

// fold_lanes of P packs at once (P rows, say), as P lane-wise ops on packs: pack k of `rows`
// holds the lanes of row k, and lane k of the result is fold_lanes of row k, the same
// operations in the same order. Each step pairs two packs of `Rows` rows each into one pack of
// 2 * Rows rows, its lanes the first half of each row's lanes op the second half.
constexpr int across_index(std::uint64_t P, std::uint64_t rows, bool second, std::uint64_t q) {
  const std::uint64_t lanes = P / rows, half = lanes / 2, row = q / half;
  return static_cast<int>((row >= rows ? P : 0) + (row % rows) * lanes + q % half + (second ? half : 0));
}
template <Op O, class A, std::uint64_t Rows, std::size_t... Q>
[[gnu::always_inline]] inline Pack<A> fold_pair(Pack<A> a, Pack<A> b, std::index_sequence<Q...>) {
  constexpr std::uint64_t P = kPackLanes<A>;
  const Pack<A> first = __builtin_shufflevector(a, b, across_index(P, Rows, false, Q)...);
  const Pack<A> second = __builtin_shufflevector(a, b, across_index(P, Rows, true, Q)...);
  return apply<O, A>(first, second);
}
template <Op O, class A, std::uint64_t Rows = 1> [[gnu::always_inline]] inline Pack<A> fold_across(Pack<A>* rows) {
  constexpr std::uint64_t P = kPackLanes<A>;
  if constexpr (Rows == P) {
    return rows[0];
  } else {
    for (std::uint64_t k = 0; k < P / (2 * Rows); ++k)
      rows[k] = fold_pair<O, A, Rows>(rows[2 * k], rows[2 * k + 1], std::make_index_sequence<P>{});
    return fold_across<O, A, 2 * Rows>(rows);
  }
}

// op over exactly L contiguous elements, unrolled: a loop over short dense rows then vectorises
// across rows.
template <Op O, class T, class A, std::uint64_t L> A fold_fixed(const T* x) {
  A r = static_cast<A>(x[0]);
  for (std::uint64_t k = 1; k < L; ++k) r = OpFn<O>::apply(r, static_cast<A>(x[k]));
  return r;
}

// Writes `bytes` (a multiple of 16) from src to dst (16-byte aligned) past the caches where the
// CPU has non-temporal stores (SSE2): values that are written once and not read back here then
// cost no read of their lines first. finish_streaming() orders them before the thread's later
// stores, ahead of the end of the parallel region.
inline void stream_out(void* dst, const void* src, std::size_t bytes) {
#if defined(__SSE2__)
  for (std::size_t b = 0; b < bytes; b += 16) {
    __m128i v;
    std::memcpy(&v, static_cast<const char*>(src) + b, 16);
    _mm_stream_si128(reinterpret_cast<__m128i*>(static_cast<char*>(dst) + b), v);
  }
#else
  std::memcpy(dst, src, bytes);
#endif
}
inline void finish_streaming() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// Dense rows of a length L known at compile time: one tight loop over rows in blocks of
// kOutputBlockBytes of values. Rows that fill a pack fold P at a time, each in W lanes, finished
// together by fold_across; shorter rows fold whole, the compiler vectorising across rows. Many
// values (at least kStreamOutputBytes) go to out a block at a time through stream_out.
template <Op O, class T, class A, std::uint64_t L> void run_fixed_rows(const T* x, std::uint64_t rows, A* out, int threads) {
  constexpr std::uint64_t B = kOutputBlockBytes / sizeof(A), P = kPackLanes<A>, W = std::min(kLanes<A>, std::bit_ceil(L));
  const bool stream = rows * sizeof(A) >= kStreamOutputBytes && reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
  const std::uint64_t blocks = ceil_div(rows, B);
  // Whether the W-element block from row r's last block lies inside the input (fold_pack).
  const auto readable = [&](std::uint64_t r) { return last_block_readable<W>(r * L, L, rows * L); };
  RegionErrors errors;
#pragma omp parallel num_threads(threads)
  {
    errors.run(Region::OmpRowsFixed, [&] {
      const auto nt = static_cast<std::uint64_t>(omp_get_num_threads()), t = static_cast<std::uint64_t>(omp_get_thread_num());
      for (std::uint64_t b = share_start(blocks, t, nt), b1 = share_start(blocks, t + 1, nt); b < b1; ++b) {
        const std::uint64_t r0 = b * B, n = std::min(B, rows - r0);
        const T* block = x + r0 * L;
        if (n == B && (stream || L >= 2 * P)) {
          alignas(16) A value[B];
          if constexpr (L >= 2 * P) {
            const bool whole = readable(r0 + B - 1);
            for (std::uint64_t g = 0; g < B; g += P) {
              Pack<A> row[P];
              for (std::uint64_t k = 0; k < P; ++k) row[k] = fold_pack<O, T, A, W>(block + (g + k) * L, L, whole);
              const Pack<A> v = fold_across<O, A>(row);
              std::memcpy(value + g, &v, sizeof v);
            }
          } else {
            for (std::uint64_t r = 0; r < B; ++r) value[r] = fold_fixed<O, T, A, L>(block + r * L);
          }
          if (stream) stream_out(out + r0, value, sizeof value);
          else std::memcpy(out + r0, value, sizeof value);
        } else {
          for (std::uint64_t r = 0; r < n; ++r) {
            if constexpr (L >= 2 * P) out[r0 + r] = fold<O, T, A, W>(block + r * L, L, readable(r0 + r));
            else out[r0 + r] = fold_fixed<O, T, A, L>(block + r * L);
          }
        }
      }
    });
    if (stream) finish_streaming();
  }
  errors.rethrow();
}

// The dense row lengths with a loop of their own (run_fixed_rows): 1 to kShortRow, then the
// powers of two up to kFixedRowMax.
constexpr std::uint64_t fixed_row_length(std::uint64_t k) { return k < kShortRow ? k + 1 : kShortRow << (k - kShortRow + 1); }
constexpr std::uint64_t kFixedRowLengths = kShortRow + ceil_log2(kFixedRowMax / kShortRow);

template <Op O, class T, class A, std::size_t... K>
bool fixed_rows(const T* x, const SegmentLayout& l, A* out, int threads, std::index_sequence<K...>) {
  return ((l.length == fixed_row_length(K) && (run_fixed_rows<O, T, A, fixed_row_length(K)>(x, l.count, out, threads), true)) || ...);
}


// Segments as positions in the concatenation of all their elements ("virtual" positions, so a
// strided layout has no gaps) and as places in the input.
// Rows: segment i is positions [i * length, (i + 1) * length), elements from i * stride.
struct RowSegments {
  std::uint64_t count, length, stride;
  std::uint64_t start(std::uint64_t i) const { return i * length; }
  std::uint64_t finish(std::uint64_t i) const { return (i + 1) * length; }
  std::uint64_t place(std::uint64_t i) const { return i * stride; }
  // The first segment that starts at or after position v (count if none).
  std::uint64_t first_from(std::uint64_t v) const { return std::min(count, ceil_div(v, length)); }
};

// Offsets: segment i is elements [offsets[i], offsets[i + 1]), positions less offsets[0].
struct OffsetSegments {
  std::uint64_t count;
  const std::int64_t* offsets;
  std::uint64_t start(std::uint64_t i) const { return static_cast<std::uint64_t>(offsets[i] - offsets[0]); }
  std::uint64_t finish(std::uint64_t i) const { return static_cast<std::uint64_t>(offsets[i + 1] - offsets[0]); }
  std::uint64_t place(std::uint64_t i) const { return static_cast<std::uint64_t>(offsets[i]); }
  std::uint64_t first_from(std::uint64_t v) const {
    const auto* e = std::lower_bound(offsets, offsets + count + 1, static_cast<std::int64_t>(v) + offsets[0]);
    return static_cast<std::uint64_t>(e - offsets);
  }
};

// Every segment of s, in W lanes: each thread's fold_share, then the pieces of the segments
// split between threads added in thread order. Returns the most roundings behind a float sum.
template <Op O, class T, class A, std::uint64_t W, class S>
std::uint64_t run_segments(const T* x, std::uint64_t readable, const S& s, A* out, int threads) {
  // fold_share of 32-byte packs where the CPU has AVX2 (cpu.hpp): 2^20 lognormal lengths of mean
  // 64 f32 (256 MiB), one thread of the 2-core Xeon development machine, 9.6 GB/s against 7.5 in
  // 16-byte packs (stream_read 9.3); half the loads and adds a segment keep more of the
  // segments' loads in flight. 64-byte packs under AVX-512 read 7.3-7.6 against these packs'
  // 8.4-8.7 on the same core, 15.2-15.4 against 17.5-18.4 on both: the CPU's AVX-512 stays unused.
  auto* share = &portable::fold_share<O, T, A, W, S>;
#if XR_OMP_SEGMENTS_AVX2
  if (have_avx2()) share = &avx2::fold_share<O, T, A, W, S>;
#endif
  std::vector<Part<A>> parts(static_cast<std::size_t>(threads));
  RegionErrors errors;
#pragma omp parallel num_threads(threads)
  errors.run(Region::OmpRows, [&] {
    share(x, readable, s, out, parts[static_cast<std::size_t>(omp_get_thread_num())],
          static_cast<std::uint64_t>(omp_get_thread_num()), static_cast<std::uint64_t>(omp_get_num_threads()));
  });
  errors.rethrow();
  for (const auto& p : parts)
    if (p.segment != ~std::uint64_t{0}) out[p.segment] = OpFn<O>::apply(out[p.segment], p.value);
  const std::uint64_t total = s.start(s.count);
  std::uint64_t longest = 0;
  if constexpr (std::is_same_v<S, RowSegments>) longest = s.length;
  else longest = total;
  return std::min(longest, total / static_cast<std::uint64_t>(threads) + 1) / W + 1 + ceil_log2(W) +
         static_cast<std::uint64_t>(threads);
}

template <Op O, class T, class A> std::uint64_t run_rows(const T* x, const SegmentLayout& l, A* out, int threads) {
  constexpr std::uint64_t K = kLanes<A>;
  if (l.kind == SegmentKind::Offsets)
    return run_segments<O, T, A, kSegmentLaneBytes / sizeof(A)>(x, l.span(), OffsetSegments{l.count, l.offsets}, out, threads);
  if (l.length == 0) {
    for (std::uint64_t i = 0; i < l.count; ++i) out[i] = empty_of<A>(O);
    return 0;
  }
  if (l.stride == l.length && fixed_rows<O, T, A>(x, l, out, threads, std::make_index_sequence<kFixedRowLengths>{}))
    return l.length;
  const RowSegments rows{l.count, l.length, l.stride};
  // Rows that fill no more than half of K lanes fold in K / 2.
  if (2 * l.length <= K) return run_segments<O, T, A, K / 2>(x, l.span(), rows, out, threads);
  return run_segments<O, T, A, K>(x, l.span(), rows, out, threads);
}

// Rows [r0, r1) of the columns [0, w) of x (rows `stride` apart) into acc: kColumnRows rows folded
// together per column, then into acc. Narrow dense arrays (a row of fewer than K elements, the
// rows one after another) fold K / w rows at a time as one vector of lanes (lane f takes column
// f % w), so the inner loop is a vector long whatever the width, and ask for the lines
// kLanePrefetchBytes ahead (policy.hpp): (2^24, 4) f32 at 16 threads on the 16-core Xeon host of
// the H100 machine read 0.92-1.99 of stream_read (median 1.29, five processes) with, 0.53-1.18
// (median 0.91) without, interleaved. Prefetching each of the kColumnRows rows ahead in the wider
// loop below read (2^16, 1024) at 1.04-1.20 against 0.57-1.53 without and was not kept.
template <Op O, class T, class A>
void fold_rows(const T* x, std::uint64_t stride, std::uint64_t r0, std::uint64_t r1, std::uint64_t w, A* acc) {
  constexpr std::uint64_t K = kLanes<A>, R = kColumnRows;
  for (std::uint64_t c = 0; c < w; ++c) acc[c] = start_of<O, A>();
  std::uint64_t r = r0;
  if (stride == w && w < K) {
    const std::uint64_t group = K / w, width = group * w;
    A lane[K];
    for (auto& a : lane) a = start_of<O, A>();
    const auto step = [&](const T* g, auto n) {
      prefetch_ahead<K * sizeof(T)>(g);
      for (std::uint64_t f = 0; f < n; ++f) lane[f] = OpFn<O>::apply(lane[f], static_cast<A>(g[f]));
    };
    if (width == K)
      for (; r + group <= r1; r += group) step(x + r * w, std::integral_constant<std::uint64_t, K>{});
    else
      for (; r + group <= r1; r += group) step(x + r * w, width);
    for (std::uint64_t f = 0; f < width; ++f) acc[f % w] = OpFn<O>::apply(acc[f % w], lane[f]);
  }
  for (; r + R <= r1; r += R) {
    const T* row = x + r * stride;
    for (std::uint64_t c = 0; c < w; ++c) {
      A v = static_cast<A>(row[c]);
      for (std::uint64_t k = 1; k < R; ++k) v = OpFn<O>::apply(v, static_cast<A>(row[k * stride + c]));
      acc[c] = OpFn<O>::apply(acc[c], v);
    }
  }
  for (; r < r1; ++r) {
    const T* row = x + r * stride;
    for (std::uint64_t c = 0; c < w; ++c) acc[c] = OpFn<O>::apply(acc[c], static_cast<A>(row[c]));
  }
}

// Where in `slot` (at least w + kPageBytes / sizeof(A) values) a thread's partial row lies: half
// a 4 KiB page from `row` modulo the page, so that the stores to the partials never share the
// low 12 address bits with the loads of the rows just ahead (4K aliasing stalls those loads).
template <class A> A* apart_from(A* slot, const void* row) {
  constexpr std::uintptr_t page = 4096;
  const auto want = (reinterpret_cast<std::uintptr_t>(row) + page / 2) % page;
  const auto at = reinterpret_cast<std::uintptr_t>(slot) % page;
  return slot + ((want + page - at) % page) / sizeof(A);
}

template <Op O, class T, class A> std::uint64_t run_columns(const T* x, const SegmentLayout& l, A* out, int threads) {
  const std::uint64_t cols = l.count, rows = l.length;
  if (rows == 0) {
    for (std::uint64_t c = 0; c < cols; ++c) out[c] = empty_of<A>(O);
    return 0;
  }
  if (cols * sizeof(A) > kColumnPartialBytes) {  // very wide: columns over threads, in bands
    RegionErrors errors;
#pragma omp parallel num_threads(threads)
    errors.run(Region::OmpColumnBands, [&] {
      const auto nt = static_cast<std::uint64_t>(omp_get_num_threads()), t = static_cast<std::uint64_t>(omp_get_thread_num());
      const std::uint64_t c0 = share_start(cols, t, nt), c1 = share_start(cols, t + 1, nt);
      for (std::uint64_t b = c0; b < c1; b += kColumnBand)
        fold_rows<O, T, A>(x + b, l.stride, 0, rows, std::min(c1, b + kColumnBand) - b, out + b);
    });
    errors.rethrow();
    return rows;
  }
  // Rows over threads, each streaming its rows into its own partials; then every thread combines
  // a share of the columns over the partials in thread order.
  // Left uninitialised (fold_rows starts each partial row from the identity): zeroed on one
  // thread first, 16 threads' 256 KiB rows of (1024, 2^16) f32 read at 0.74 of stream_read on
  // the 16-core Xeon host of the H100 machine, 0.98-1.55 without.
  const std::uint64_t slot = cols + 4096 / sizeof(A);
  const auto slots = std::make_unique_for_overwrite<A[]>(static_cast<std::size_t>(threads) * slot);
  std::vector<A*> partial(static_cast<std::size_t>(threads), nullptr);
  // Every thread meets the barrier, whatever its first phase threw; the second runs only if
  // no thread failed in the first.
  RegionErrors errors;
#pragma omp parallel num_threads(threads)
  {
    const auto nt = static_cast<std::uint64_t>(omp_get_num_threads()), t = static_cast<std::uint64_t>(omp_get_thread_num());
    errors.run(Region::OmpColumns, [&] {
      const std::uint64_t r0 = share_start(rows, t, nt), r1 = share_start(rows, t + 1, nt);
      if (r0 < r1) {
        A* acc = apart_from(slots.get() + t * slot, x + r0 * l.stride);
        fold_rows<O, T, A>(x, l.stride, r0, r1, cols, acc);
        partial[t] = acc;
      }
    });
#pragma omp barrier
    if (!errors.failed())
      errors.guard([&] {
        const std::uint64_t c0 = share_start(cols, t, nt), c1 = share_start(cols, t + 1, nt);
        bool first = true;
        for (const A* p : partial) {
          if (p == nullptr) continue;
          if (first)
            for (std::uint64_t c = c0; c < c1; ++c) out[c] = p[c];
          else
            for (std::uint64_t c = c0; c < c1; ++c) out[c] = OpFn<O>::apply(out[c], p[c]);
          first = false;
        }
      });
  }
  errors.rethrow();
  return rows / static_cast<std::uint64_t>(threads) + 1 + kColumnRows + kLanes<A> + static_cast<std::uint64_t>(threads);
}

// Instantiates run<O, T, C> for the job's (op, type, accumulator A), C the type it computes in:
// A, or f32 for the min and max of f16 and bf16, whose values then go back to the input type
// exactly (each is an input, an infinity or a NaN).
// Mapped elements (the mapped ops): each segment, row or column folded in order by one thread, its
// elements mapped as they convert to A; rows and segments over the threads, columns in blocks of
// kLanes<A> over them. A plain loop: the SIMD folds above over Mapped elements (their fixed row
// lengths, half-width lanes and AVX2 copy) took this file past 8 minutes of g++ on the 2-core
// development VM. Returns the most roundings behind a float sum.
template <Op O, class T, class A> std::uint64_t run_mapped(const T* x, const SegmentLayout& l, A* out, int threads) {
  const bool columns = l.kind == SegmentKind::Columns;
  constexpr std::uint64_t K = kLanes<A>;
  const std::uint64_t items = columns ? ceil_div(l.count, K) : l.count;
  std::uint64_t longest = columns ? l.length : 0;
  RegionErrors errors;
#pragma omp parallel num_threads(threads) reduction(max : longest)
  {
    errors.enter(Region::OmpRows);
#pragma omp for schedule(dynamic, 64)
    for (std::int64_t signed_i = 0; signed_i < static_cast<std::int64_t>(items); ++signed_i) {
      if (errors.failed()) continue;
      errors.guard([&] {
        const auto i = static_cast<std::uint64_t>(signed_i);
        if (columns) {
          const std::uint64_t c0 = i * K, w = std::min(K, l.count - c0);
          A acc[K];
          for (std::uint64_t c = 0; c < w; ++c) acc[c] = start_of<O, A>();
          for (std::uint64_t r = 0; r < l.length; ++r)
            for (std::uint64_t c = 0; c < w; ++c) acc[c] = OpFn<O>::apply(acc[c], static_cast<A>(x[r * l.stride + c0 + c]));
          for (std::uint64_t c = 0; c < w; ++c) out[c0 + c] = l.length ? acc[c] : empty_of<A>(O);
          return;
        }
        const std::uint64_t begin = l.kind == SegmentKind::Rows ? i * l.stride : static_cast<std::uint64_t>(l.offsets[i]);
        const std::uint64_t end = l.kind == SegmentKind::Rows ? begin + l.length : static_cast<std::uint64_t>(l.offsets[i + 1]);
        A acc = start_of<O, A>();
        for (std::uint64_t k = begin; k < end; ++k) acc = OpFn<O>::apply(acc, static_cast<A>(x[k]));
        out[i] = end > begin ? acc : empty_of<A>(O);
        longest = std::max(longest, end - begin);
      });
    }
  }
  errors.rethrow();
  return longest;
}

// A mapped op runs its fold over Mapped<T, op> elements (semantics.hpp), which apply the map as
// they convert to the accumulator, with the mapped op's accumulator.
template <class T, class F> std::uint64_t dispatch(const SegmentJob& job, int threads, F run) {
  const auto fold = [&]<Op O, class E, Op Acc>() -> std::uint64_t {
    const E* x = static_cast<const E*>(job.data.address());
    const auto with = [&]<class A>() -> std::uint64_t {
      using C = compute_t<A>;
      A* out = static_cast<A*>(job.out.mutable_address());
      if constexpr (std::is_same_v<C, A>) {
        return run.template operator()<O, E, A>(x, job.layout, out, threads);
      } else {
        std::vector<C> values(job.layout.count);
        const std::uint64_t depth = run.template operator()<O, E, C>(x, job.layout, values.data(), threads);
        const auto count = static_cast<std::int64_t>(values.size());
        RegionErrors errors;
#pragma omp parallel num_threads(threads)
        {
          errors.enter(Region::OmpSegmentsNarrow);
#pragma omp for
          for (std::int64_t i = 0; i < count; ++i) out[i] = static_cast<A>(values[static_cast<std::size_t>(i)]);
        }
        errors.rethrow();
        return depth;
      }
    };
    if (job.options.accumulator == Accumulator::Native)
      return with.template operator()<accumulator_t<Acc, T, Accumulator::Native>>();
    return with.template operator()<accumulator_t<Acc, T, Accumulator::Wide>>();
  };
  if (is_mapped(job.op))
    return visit_mapped(job.op, [&](auto fn) {
      using M = decltype(fn);
      return fold.template operator()<M::fold, typename M::template element<T>, M::op>();
    });
  return visit_fold(job.op, [&](auto fn) {
    constexpr Op O = decltype(fn)::op;
    return fold.template operator()<O, T, O>();
  });
}

}  // namespace

template <DType D> std::uint64_t fold_segments(const SegmentJob& job, int threads) {
  using T = element_t<D>;
  if (job.layout.kind == SegmentKind::Columns)
    return dispatch<T>(job, threads, []<Op O, class E, class A>(const E* x, const SegmentLayout& l, A* out, int nt) {
      if constexpr (is_mapped_v<E>) return run_mapped<O, E, A>(x, l, out, nt);
      else return run_columns<O, E, A>(x, l, out, nt);
    });
  return dispatch<T>(job, threads, []<Op O, class E, class A>(const E* x, const SegmentLayout& l, A* out, int nt) {
    if constexpr (is_mapped_v<E>) return run_mapped<O, E, A>(x, l, out, nt);
    else return run_rows<O, E, A>(x, l, out, nt);
  });
}

}  // namespace xr::omp::detail
