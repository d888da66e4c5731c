// One thread's share of the `vector` rung: lane loops in plain C++ that the compiler turns into
// SIMD. ladder.cpp compiles them three times, for the portable build (SSE2 on x86-64), for AVX2
// with F16C and for AVX-512, and takes the widest copy the CPU has (cpu.hpp); nothing here names
// an instruction beyond SSE2, and every copy puts every element into the same lane in the same
// order, so they compute the same thing, bit for bit.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "cpu.hpp"
#include "policy.hpp"
#include "widen.hpp"
#include "xreduce/semantics.hpp"

// Inlined into each compiled copy of the rung, whose instruction set it then takes.
#define XR_OMP_LANES [[gnu::always_inline]] inline

namespace xr::omp::detail::lanes {

using u64 = std::uint64_t;

// Accumulator lanes per thread (policy.hpp: kLaneBytes of them).
template <class C> constexpr u64 kLanes = kLaneBytes / sizeof(C);

// The lanes a fold of T (sum, prod) keeps: kLanes of its compute type, and twice as many float
// lanes for bf16, which is read as 32-bit words of two elements (Folds::add). The rung's
// rounding depth and its threads' share boundaries follow this count.
template <class T, class A> constexpr u64 kFoldLanes = std::is_same_v<T, bf16> ? 2 * kLanes<float> : kLanes<compute_t<A>>;

// The float of a bf16 word's first element (its low half on a little-endian machine) and second
// one: a shift and a mask, where widening each element takes a shuffle the CPU runs on one port
// (one core of the 2-core Xeon development machine, 16 KiB in L1, AVX2 copy: bf16 sums 49 GB/s
// against 28 from elements one at a time, bf16 max 37 against 26).
XR_OMP_LANES float bf16_first(std::uint32_t w) { return std::bit_cast<float>(w << 16); }
XR_OMP_LANES float bf16_second(std::uint32_t w) { return std::bit_cast<float>(w & 0xffff0000u); }
XR_OMP_LANES std::uint32_t word_at(const bf16* x) {
  std::uint32_t w;
  std::memcpy(&w, x, sizeof w);
  return w;
}

// Calls f(p, m, i) for consecutive blocks of x[0, n), each of m elements from x[i] on, p pointing
// at them, kScanBlockBytes at a time; f16 on a CPU without F16C widened into floats a kHalfBlock
// at a time first (where it has F16C, the lane loops convert in registers: fold_f16 and
// extremes_f16 in widen.hpp). Stops when f returns false.
template <class T, class F> XR_OMP_LANES void for_each_block(const T* x, u64 n, F&& f) {
  if constexpr (std::is_same_v<T, f16>) {
    if (!have_f16c()) {
      alignas(64) float wide[kHalfBlock];
      for (u64 i = 0; i < n; i += kHalfBlock) {
        const u64 m = std::min(kHalfBlock, n - i);
        widen(x + i, wide, m);
        if (!f(static_cast<const float*>(wide), m, i)) return;
      }
      return;
    }
  }
  constexpr u64 B = kScanBlockBytes / sizeof(T);
  for (u64 i = 0; i < n; i += B)
    if (!f(x + i, std::min(B, n - i), i)) return;
}

// op O (sum, prod) in K lanes of C, element i into lane i % K (bf16: words, below), then the
// lanes in order. Lanes of C (float for f16 and bf16) taking elements of T.
template <Op O, class C, u64 K = kLanes<C>> struct Folds {
  C lane[K];
  XR_OMP_LANES Folds() {
    for (auto& a : lane) a = identity<C>(O);
  }
  // The next n elements; n a multiple of K but for the last call. bf16 goes a word of two
  // elements at a time: of the K elements from a multiple of K, element 2j into lane j and
  // element 2j + 1 into lane K / 2 + j.
  template <class T> XR_OMP_LANES void add(const T* x, u64 n) {
    u64 i = 0;
    if constexpr (std::is_same_v<T, f16>) {
      static_assert(std::is_same_v<C, float> && K == 32);
      return fold_f16<O>(lane, x, n);
    } else if constexpr (std::is_same_v<T, bf16>) {
      static_assert(std::is_same_v<C, float> && K % 2 == 0);
      for (; i + K <= n; i += K) {
        prefetch_ahead<K * sizeof(T)>(x + i);
        for (u64 j = 0; j < K / 2; ++j) {
          const std::uint32_t w = word_at(x + i + 2 * j);
          lane[j] = OpFn<O>::apply(lane[j], bf16_first(w));
          lane[K / 2 + j] = OpFn<O>::apply(lane[K / 2 + j], bf16_second(w));
        }
      }
    } else {
      for (; i + K <= n; i += K) {
        prefetch_ahead<K * sizeof(T)>(x + i);
        for (u64 j = 0; j < K; ++j) lane[j] = OpFn<O>::apply(lane[j], static_cast<C>(x[i + j]));
      }
    }
    for (u64 j = 0; i < n; ++i, ++j) lane[j] = OpFn<O>::apply(lane[j], static_cast<C>(x[i]));
  }
  XR_OMP_LANES C result() const {
    C r = identity<C>(O);
    for (const auto& a : lane) r = OpFn<O>::apply(r, a);
    return r;
  }
};

// The sum of n bytes in 64 bits (A); i8 is biased by 128 to u8, the bias taken off at the end.
// PSADBW adds 8 bytes into a 64-bit lane in one instruction: 32 bytes at a time where the CPU has
// AVX2 (sum_bytes_avx2), else 16 with SSE2 (every x86-64); elsewhere 16-bit lanes over blocks of
// 256 steps (at most 255 * 256 each), added into 64 bits after each block. On a 16-core Xeon
// (H100 host), 512 MiB: widening every byte to 64 bits ran at 0.37 of stream_read, the 16-bit
// lanes at 0.67-0.82, PSADBW at 0.87-0.94.
template <class T, class A> XR_OMP_LANES A sum_bytes(const T* x, u64 n) {
  static_assert(sizeof(T) == 1 && sizeof(A) == 8);
  constexpr std::uint8_t bias = std::is_signed_v<T> ? 0x80 : 0;
  std::uint64_t total = 0;
  u64 i = 0;
  if (have_avx2()) {
    i = n / 128 * 128;
    total = sum_bytes_avx2(reinterpret_cast<const std::uint8_t*>(x), i, bias);
  }
#if defined(__SSE2__)
  constexpr u64 kVectors = 4, kStep = 16 * kVectors;
  const __m128i flip = _mm_set1_epi8(static_cast<char>(bias)), zero = _mm_setzero_si128();
  __m128i sums[kVectors] = {};
  for (; i + kStep <= n; i += kStep)
    for (u64 k = 0; k < kVectors; ++k) {
      const __m128i bytes = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i + 16 * k)), flip);
      sums[k] = _mm_add_epi64(sums[k], _mm_sad_epu8(bytes, zero));
    }
  const __m128i all = _mm_add_epi64(_mm_add_epi64(sums[0], sums[1]), _mm_add_epi64(sums[2], sums[3]));
  std::uint64_t halves[2];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(halves), all);
  total += halves[0] + halves[1];
#else
  constexpr u64 K = kLaneBytes / 2, kSteps = 256;
  while (i + K <= n) {
    std::uint16_t lane[K] = {};
    const u64 end = i + std::min((n - i) / K, kSteps) * K;
    for (; i < end; i += K)
      for (u64 j = 0; j < K; ++j) lane[j] += static_cast<std::uint8_t>(static_cast<std::uint8_t>(x[i + j]) ^ bias);
    for (const auto l : lane) total += l;
  }
#endif
  total -= std::uint64_t{bias} * i;  // wraps to the signed sum's bits
  for (; i < n; ++i) total += static_cast<std::uint64_t>(static_cast<A>(x[i]));
  return static_cast<A>(total);
}

// The sum of n 32-bit integers in 64 bits (A), in blocks of 2^16 elements: each element adds
// whole into a 32-bit sum, and its top 16 bits (an arithmetic shift for i32) into a second one.
// The block's sum is 2^16 times the tops' sum plus the bottoms' sum, which lies below 2^32 and so
// is the whole sum less 2^16 times the tops', modulo 2^32. Two plain integer reductions, which
// the compiler vectorises in 32-bit lanes: a shift and two adds an element, where widening each
// element to 64 bits takes two shuffles and an add in lanes half as wide. (Accumulator arrays
// indexed in the loop, as the float lanes are, kept the sums in memory here: 12.7 GB/s a core,
// L2-resident, on the 2-core Xeon development machine, against 18.9 for the widening.)
template <class T, class A> XR_OMP_LANES A sum_words(const T* x, u64 n) {
  static_assert(sizeof(T) == 4 && sizeof(A) == 8 && std::is_integral_v<T>);
  constexpr u64 kBlock = u64{1} << 16;
  std::uint64_t total = 0;
  for (u64 i = 0; i < n; i += kBlock) {
    const u64 end = std::min(n, i + kBlock);
    std::uint32_t whole = 0;
    T top = 0;
    for (u64 k = i; k < end; ++k) {
      whole += static_cast<std::uint32_t>(x[k]);
      top += x[k] >> 16;
    }
    const auto bottoms = whole - (static_cast<std::uint32_t>(top) << 16);
    total += (static_cast<std::uint64_t>(static_cast<A>(top)) << 16) + bottoms;
  }
  return static_cast<A>(total);
}

// The min and the max (Lo, Hi: which of them) of the elements added so far, in kLanes<C> lanes
// of C that never take a NaN, and whether a NaN was among them. Each step takes two elements per
// lane, v and w: their min (and max) goes into the lane, and whether either is a NaN into a flag
// lane. For floats both selects are the SSE MINPS/MAXPS forms (a < b ? a : b), which keep the
// lane when v or w is a NaN: two selects, an unordered compare and an OR for two elements, where
// the NaN-propagating select of OpFn takes four operations an element. Integers have no flag.
template <bool Lo, bool Hi, class C> struct Extremes {
  static constexpr u64 K = kLanes<C>;
  static constexpr bool kFloat = std::is_floating_point_v<C>;
  using Flag = std::conditional_t<sizeof(C) == 8, std::int64_t, std::int32_t>;
  C lo[K], hi[K];
  Flag nan[K];
  XR_OMP_LANES Extremes() {
    for (auto& a : lo) a = identity<C>(Op::Min);
    for (auto& a : hi) a = identity<C>(Op::Max);
    for (auto& a : nan) a = 0;
  }
  // The selects of a step, on one lane (V = C) or on a pack of lanes.
  template <class V> XR_OMP_LANES static void select_into(V& low, V& high, V v, V w) {
    if constexpr (Lo) {
      const V m = w < v ? w : v;
      low = m < low ? m : low;
    }
    if constexpr (Hi) {
      const V m = v < w ? w : v;
      high = high < m ? m : high;
    }
  }
  XR_OMP_LANES void take(u64 j, C v, C w) {
    select_into(lo[j], hi[j], v, w);
    if constexpr (kFloat) nan[j] |= -static_cast<Flag>(__builtin_isunordered(v, w));
  }
  // The next n elements, any number of them (bf16: the two elements of a word together), in
  // packs of B bytes where B is not 0, else lane by lane.
  template <u64 B, class T> XR_OMP_LANES void add(const T* x, u64 n) {
    u64 i = 0;
    if constexpr (std::is_same_v<T, f16>) {
      static_assert(std::is_same_v<C, float> && K == 32);
      return extremes_f16(Lo, Hi, lo, hi, nan, x, n);
    } else if constexpr (B != 0) {
      i = add_packs<B>(x, n);
    } else if constexpr (std::is_same_v<T, bf16>) {
      for (; i + 2 * K <= n; i += 2 * K) {
        prefetch_ahead<2 * K * sizeof(T)>(x + i);
        for (u64 j = 0; j < K; ++j) {
          const std::uint32_t w = word_at(x + i + 2 * j);
          take(j, bf16_first(w), bf16_second(w));
        }
      }
    } else {
      for (; i + 2 * K <= n; i += 2 * K) {
        prefetch_ahead<2 * K * sizeof(T)>(x + i);
        for (u64 j = 0; j < K; ++j) take(j, static_cast<C>(x[i + j]), static_cast<C>(x[i + K + j]));
      }
    }
    for (; i < n; ++i) take(i % K, static_cast<C>(x[i]), static_cast<C>(x[i]));
  }
  // add's steps on whole packs of B bytes (GCC's vector extension, which Clang has too): lane j
  // is element j % W of pack j / W, so each lane takes the elements it takes lane by lane; the
  // lanes go into packs at the start and back at the end. Returns how many elements it took. A
  // float's NaN flag is a pack that a select sets to the NaN: GCC 12 turned a compare's result
  // taken as a value into scalar code under AVX-512. Lane by lane, GCC 12 made 128-bit pieces of
  // u64 minmax, the lanes spilled to the stack. One core of the 2-core Xeon development machine,
  // 16 KiB in L1, AVX-512 copy, GB/s in packs against lanes: u64 minmax 60 against 12, u64 max
  // 102 against 39, f64 minmax 64 against 38, u32 minmax 68 against 55; f32 and bf16 alike. In
  // the AVX2 copy packs were the slower for floats (f32 minmax 31 against 46, bf16 16 against
  // 22), so only the AVX-512 copy takes them (ladder.cpp).
  template <u64 B, class T> XR_OMP_LANES u64 add_packs(const T* x, u64 n) {
    typedef C Pack __attribute__((vector_size(B)));
    typedef std::uint32_t Words __attribute__((vector_size(B)));
    constexpr u64 W = B / sizeof(C), P = K / W;
    static_assert(K % W == 0);
    Pack l[P], h[P], g[P] = {};
    std::memcpy(l, lo, sizeof lo);
    std::memcpy(h, hi, sizeof hi);
    const auto take_pack = [&](u64 p, Pack v, Pack w) {
      select_into(l[p], h[p], v, w);
      if constexpr (kFloat) {
        g[p] = v == v ? g[p] : v;
        g[p] = w == w ? g[p] : w;
      }
    };
    u64 i = 0;
    for (; i + 2 * K <= n; i += 2 * K) {
      prefetch_ahead<2 * K * sizeof(T)>(x + i);
      for (u64 p = 0; p < P; ++p) {
        if constexpr (std::is_same_v<T, bf16>) {
          Words words;
          std::memcpy(&words, x + i + 2 * p * W, B);
          take_pack(p, (Pack)(words << 16), (Pack)(words & 0xffff0000u));
        } else {
          Pack v, w;
          std::memcpy(&v, x + i + p * W, B);
          std::memcpy(&w, x + i + K + p * W, B);
          take_pack(p, v, w);
        }
      }
    }
    std::memcpy(lo, l, sizeof lo);
    std::memcpy(hi, h, sizeof hi);
    if constexpr (kFloat) {
      C seen[K];
      std::memcpy(seen, g, sizeof seen);
      for (u64 j = 0; j < K; ++j) nan[j] |= -static_cast<Flag>(seen[j] != seen[j]);
    }
    return i;
  }
  XR_OMP_LANES bool any_nan() const {
    if constexpr (!kFloat) return false;
    Flag any = 0;
    for (const auto f : nan) any |= f;
    return any != 0;
  }
  // Whether some element so far lies strictly beyond v: below it for Min, above it for Max.
  template <Op F> XR_OMP_LANES bool beyond(C v) const {
    int any = 0;
    for (u64 j = 0; j < K; ++j) any |= F == Op::Min ? lo[j] < v : v < hi[j];
    return any != 0;
  }
  // The min (F = Min) or the max of the elements so far, none of them a NaN: lanes halved log2(K)
  // times.
  template <Op F> XR_OMP_LANES C extreme() const {
    C t[K];
    for (u64 j = 0; j < K; ++j) t[j] = F == Op::Min ? lo[j] : hi[j];
    for (u64 w = K / 2; w > 0; w /= 2)
      for (u64 j = 0; j < w; ++j) t[j] = F == Op::Min ? (t[j + w] < t[j] ? t[j + w] : t[j]) : (t[j] < t[j + w] ? t[j + w] : t[j]);
    return t[0];
  }
};

// The first k in [0, m) where pred(C(p[k])) holds (one does): kLanes<C> elements at a time by a
// test the compiler vectorises, then one by one in the first group where it holds.
// f16 is widened a kHalfBlock at a time first (through F16C where the CPU has it), where the
// portable conversion of each element would be the cost.
template <class C, class T, class P> XR_OMP_LANES u64 first_where(const T* p, u64 m, P pred) {
  if constexpr (std::is_same_v<T, f16>) {
    alignas(64) float wide[kHalfBlock];
    for (u64 b = 0;; b += kHalfBlock) {
      const u64 w = std::min(kHalfBlock, m - b);
      widen(p + b, wide, w);
      int any = 0;
      for (u64 j = 0; j < w; ++j) any |= pred(wide[j]);
      if (any) return b + first_where<C>(static_cast<const float*>(wide), w, pred);
    }
  }
  constexpr u64 K = kLanes<C>;
  u64 k = 0;
  for (; k + K <= m; k += K) {
    int any = 0;
    for (u64 j = 0; j < K; ++j) any |= pred(static_cast<C>(p[k + j]));
    if (any) break;
  }
  while (!pred(static_cast<C>(p[k]))) ++k;
  return k;
}
template <class C, class T> XR_OMP_LANES u64 first_nan(const T* p, u64 m) {
  return first_where<C>(p, m, [](C v) { return v != v; });
}

// The extremes of x[0, n) into e, a block at a time, up to the first block with a NaN: then the
// first NaN (what min, max and minmax give), else nothing.
template <u64 B, class E, class T> XR_OMP_LANES std::optional<compute_t<T>> scan_extremes(E& e, const T* x, u64 n) {
  using C = compute_t<T>;
  std::optional<C> nan;
  for_each_block(x, n, [&](const auto* p, u64 m, u64) {
    e.template add<B>(p, m);
    if (!e.any_nan()) return true;
    nan = static_cast<C>(p[first_nan<C>(p, m)]);
    return false;
  });
  return nan;
}

// Min or max (O) of x[0, n).
template <Op O, u64 B, class T> XR_OMP_LANES T extreme_share(const T* x, u64 n) {
  Extremes<O == Op::Min, O == Op::Max, compute_t<T>> e;
  const auto nan = scan_extremes<B>(e, x, n);
  return static_cast<T>(nan ? *nan : e.template extreme<O>());
}

// minmax of x[0, n): a NaN makes both the first NaN.
template <u64 B, class T> XR_OMP_LANES Bounds<T> bounds_share(const T* x, u64 n) {
  Extremes<true, true, compute_t<T>> e;
  if (const auto nan = scan_extremes<B>(e, x, n)) return {static_cast<T>(*nan), static_cast<T>(*nan)};
  return {static_cast<T>(e.template extreme<Op::Min>()), static_cast<T>(e.template extreme<Op::Max>())};
}

// argmin or argmax (O) of x[0, n), element 0 at index `first`. The lanes fold every block; only a
// block that holds an element strictly beyond the record (a test of the lanes against it: no
// earlier element is beyond it) is searched, for the first element equal to the new extreme,
// so ties keep the smallest index. A block with a NaN ends the share with its first NaN, which
// nothing after replaces.
template <Op O, u64 B, class T> XR_OMP_LANES Located<T> located_share(const T* x, u64 n, std::int64_t first) {
  using C = compute_t<T>;
  constexpr Op F = PairFn<O>::fold;
  Extremes<F == Op::Min, F == Op::Max, C> e;
  Located<C> best = PairFn<O>::template identity<C>();
  for_each_block(x, n, [&](const auto* p, u64 m, u64 i) {
    e.template add<B>(p, m);
    const auto at = [&](u64 k) { return Located<C>{static_cast<C>(p[k]), first + static_cast<std::int64_t>(i + k)}; };
    if (e.any_nan()) {
      best = at(first_nan<C>(p, m));
      return false;
    }
    if (best.index == kNoIndex || e.template beyond<F>(best.value)) {
      const C v = e.template extreme<F>();
      best = at(first_where<C>(p, m, [v](C y) { return y == v; }));
    }
    return true;
  });
  return {static_cast<T>(best.value), best.index};
}

// What one thread computes over its share x[0, n), element 0 at index `first`: A for a fold (op
// O over T, accumulated in A), the record for a pair op. The min, max and pair ops step in packs
// of B bytes where B is not 0 (Extremes::add_packs). Mapped elements (a mapped op's, T =
// Mapped<..>) take the lanes of Folds, which read each through its map; their min and max have no
// NaN left to look for.
template <Op O, class T, class A, u64 B> XR_OMP_LANES auto share_result(const T* x, u64 n, std::int64_t first) {
  if constexpr (O == Op::ArgMin || O == Op::ArgMax) {
    return located_share<O, B>(x, n, first);
  } else if constexpr (O == Op::MinMax) {
    return bounds_share<B>(x, n);
  } else if constexpr ((O == Op::Min || O == Op::Max) && !is_mapped_v<T>) {
    return static_cast<A>(extreme_share<O, B>(x, n));
  } else if constexpr (O == Op::Sum && sizeof(T) == 1 && sizeof(A) == 8 && !is_mapped_v<T>) {
    return sum_bytes<T, A>(x, n);
  } else if constexpr (O == Op::Sum && std::is_integral_v<T> && sizeof(T) == 4 && sizeof(A) == 8) {
    return sum_words<T, A>(x, n);
  } else {
    Folds<O, compute_t<A>, kFoldLanes<T, A>> lanes;
    for_each_block(x, n, [&](const auto* p, u64 m, u64) {
      lanes.add(p, m);
      return true;
    });
    return static_cast<A>(lanes.result());
  }
}

}  // namespace xr::omp::detail::lanes
