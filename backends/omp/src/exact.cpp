// Exact f32/f64 sums on the CPU (docs/exact.md, section "OpenMP front end").
//
// xr::ExactSum::add costs a few nanoseconds per term; this front end sums most terms exactly
// in ordinary double arithmetic first and hands ExactSum only a few exact doubles per chunk.
// Each thread walks its share in chunks of 16384 elements, in one pass each:
//  1. the thread keeps a window top eb (a biased exponent) from the chunks before; one pass
//     over the chunk sums every element within a fixed number of binades below eb into double
//     lanes, in a way that is exact by construction (below), and finds the chunk's own top
//     exponent (an integer max over the bit patterns; all ones: inf/NaN);
//  2. if the chunk's top lies above eb, the lane sums may be inexact: they are dropped and the
//     pass runs again with eb two binades above that top (the first chunk of a share always
//     does this, from eb = 0). A chunk with inf/NaN, or f64 values near overflow, goes to
//     ExactSum::add whole;
//  3. otherwise the lane sums are kept (added to the thread's ExactSum), and the elements
//     below the window ("misses"), found per block of 512, are summed exactly into bins by
//     exponent (MissBins, below), which go to the ExactSum every 2^18 elements and at the end of
//     the share. A chunk whose top lies more than 8 binades below eb lowers eb for the next one.
// f32: a float is an exact double; a lane takes at most H = 512 floats whose exponents lie in
// [eb - 20, eb], so every partial sum is a multiple of the smallest ulp and needs at most
// 9 + 20 + 24 = 53 bits: exact.
// f64: extraction against sigma = 1.5 * 2^(E + 12) (E the unbiased exponent of eb, H = 1024
// terms per lane): h = (v + sigma) - sigma is v rounded to a multiple of u = 2^(E - 40),
// |h| <= 2^(E+1), so 1024 of them sum exactly (<= 2^51 units of u); r = v - h is exact with
// |r| <= u/2, and for v at most 32 binades below E (ulp(v) >= 2^(E - 84)) 1024 of them sum
// exactly too (<= 2^52 units of the smallest ulp).
// Both arguments hold for every element whose exponent is at most eb, whatever the chunk's own
// top: that is why the pass may start from the window of the chunk before, and why only a rise
// above it forces a second pass. A two-pass form (the top first, then the sums) read every
// chunk twice and ran at 0.66x (f32) and 0.68x (f64) of the plain sum on the 2-core EPYC
// machine, 2^27 elements (docs/performance.md, "Exact sums in one pass").
// Rounding to nearest and no flush-to-zero are required: a thread that finds another floating-
// point environment uses ExactSum::add for everything.
#include "exact.hpp"
#include "policy.hpp"
#include "regions.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define XR_OMP_EXACT_X86 1
#else
#define XR_OMP_EXACT_X86 0
#endif


namespace xr::omp::detail {
namespace {

using u32 = std::uint32_t;
using u64 = std::uint64_t;
using i32 = std::int32_t;
using i64 = std::int64_t;

constexpr u64 kChunk = 16384;  // elements per chunk, both types
constexpr u64 kBlock = 512;    // misses are looked for per block: a bit of a u32 per block
static_assert(kChunk / kBlock == 32);
constexpr u32 kHeadroom = 2;   // eb = top + 2 after a rise: small ups and downs keep the window
constexpr u32 kLowerAfter = 8; // a top this far below eb lowers the window
// Each pass asks for the cache lines this many bytes ahead. The pass does more work per line
// than a plain sum, and without it the hardware prefetcher fell behind: on the 2-core EPYC
// machine (2^27 elements, 2 threads) the pass ran at 0.84x of the plain sum without, 0.93-0.98x
// with 512 or 1024 bytes and 0.97-1.12x with 2048 (docs/performance.md, "Exact sums in one pass").
constexpr u64 kPrefetchBytes = 2048;

// f32: 32 lanes of doubles, H = 512 terms per lane, window of 20 binades below the top.
constexpr int kLanes32 = 32;
constexpr int kWindow32 = 20;
static_assert(kChunk / kLanes32 == 512 && 9 + kWindow32 + 24 == 53);
constexpr u32 kMaxTop32 = 254;  // 255: inf/NaN
// f64: 16 lanes (twice: high and low parts), H = 1024, window 32 binades, sigma = 2^(E+2+10).
constexpr int kLanes64 = 16;
constexpr int kWindow64 = 32;
constexpr int kLog2H64 = 10;
static_assert(kChunk / kLanes64 == (1u << kLog2H64) && kWindow64 == 52 - 2 * kLog2H64);
// sigma = 1.5 * 2^(max(eb,1) - 1023 + 12) must be finite: max(eb,1) <= 2034.
constexpr u32 kMaxTop64 = 1023 + 1023 - 2 - kLog2H64;

constexpr u32 kAbs32 = 0x7fffffffu;
constexpr u64 kAbs64 = 0x7fffffffffffffffull;

// Rounding to nearest, no FTZ/DAZ: what the window sums rely on.
bool default_fp_env() {
#if XR_OMP_EXACT_X86
  return (_mm_getcsr() & 0xE040u) == 0;  // FTZ (bit 15), rounding control (13-14), DAZ (6)
#else
  return true;
#endif
}

// Threshold on |bits| below which an element is a miss.
u32 threshold(u32 eb, float) { return eb > kWindow32 ? (eb - kWindow32) << 23 : 0; }
u64 threshold(u32 eb, double) { return eb > kWindow64 + 1 ? u64(eb - kWindow64) << 52 : 0; }
double sigma64(u32 eb) { return std::ldexp(1.5, static_cast<int>(std::max(eb, 1u)) - 1023 + 2 + kLog2H64); }

template <class T> struct Layout;
template <> struct Layout<float> {
  using Bits = u32;
  static constexpr int kLaneSums = kLanes32;
  static constexpr u32 kMaxTop = kMaxTop32;
  static constexpr Bits kAbs = kAbs32;
  static u32 top(Bits max_abs) { return max_abs >> 23; }
};
template <> struct Layout<double> {
  using Bits = u64;
  static constexpr int kLaneSums = 2 * kLanes64;  // high parts, then low parts
  static constexpr u32 kMaxTop = kMaxTop64;
  static constexpr Bits kAbs = kAbs64;
  static u32 top(Bits max_abs) { return static_cast<u32>(max_abs >> 52); }
};

// What one pass over a chunk found: the chunk's top biased exponent, and the blocks that hold
// misses of the window it ran with (bit k: elements [k * kBlock, (k + 1) * kBlock)).
struct Pass {
  u32 top;
  u32 miss_blocks;
};

// ---- portable front end (plain C++, lanes the compiler may vectorise) ----

// The pass both types share: Lanes lanes of elements, per element its |bits| for the top and
// whether it lies in the window; add(j, v) sums v (0 for a miss) into lane j.
template <class T, int Lanes, class Add> Pass portable_pass(const T* x, u32 eb, Add add) {
  using L = Layout<T>;
  const auto thr = threshold(eb, T{});
  typename L::Bits mx[Lanes] = {};
  u32 blocks = 0;
  for (u64 blk = 0; blk < kChunk / kBlock; ++blk) {
    const T* xb = x + blk * kBlock;
    u32 miss = 0;
    for (u64 i = 0; i < kBlock; i += Lanes) {
      static_assert(Lanes * sizeof(T) == 128, "two cache lines a step");
      prefetch_ahead<128, kPrefetchBytes>(xb + i);
      for (int j = 0; j < Lanes; ++j) {
        typename L::Bits b;
        std::memcpy(&b, xb + i + j, sizeof b);
        const auto a = b & L::kAbs;
        mx[j] = std::max(mx[j], a);
        const bool keep = a >= thr;
        miss |= !keep;
        add(j, keep ? xb[i + j] : T(0));
      }
    }
    blocks |= miss << blk;
  }
  return {L::top(*std::max_element(mx, mx + Lanes)), blocks};
}

Pass pass_portable(const float* x, u32 eb, double* lanes) {
  double s[kLanes32] = {};
  const Pass p = portable_pass<float, kLanes32>(x, eb, [&](int j, float v) { s[j] += static_cast<double>(v); });
  std::copy(s, s + kLanes32, lanes);
  return p;
}

Pass pass_portable(const double* x, u32 eb, double* lanes) {
  const double sigma = sigma64(eb);
  double hi[kLanes64] = {}, lo[kLanes64] = {};
  // No -ffast-math in this library, so (v + sigma) - sigma is evaluated as written.
  const Pass p = portable_pass<double, kLanes64>(x, eb, [&](int j, double v) {
    const double h = (v + sigma) - sigma;
    hi[j] += h;
    lo[j] += v - h;
  });
  std::copy(hi, hi + kLanes64, lanes);
  std::copy(lo, lo + kLanes64, lanes + kLanes64);
  return p;
}

// ---- AVX2 front end (the same sums, lane for lane: identical results by exactness) ----
#if XR_OMP_EXACT_X86

__attribute__((target("avx2"))) Pass pass_avx2(const float* x, u32 eb, double* lanes) {
  const __m256i abs_mask = _mm256_set1_epi32(static_cast<int>(kAbs32));
  const __m256i vthr = _mm256_set1_epi32(static_cast<int>(threshold(eb, float{})));
  __m256i m[4];
  __m256d s[8];
  for (auto& v : m) v = _mm256_setzero_si256();
  for (auto& v : s) v = _mm256_setzero_pd();
  u32 blocks = 0;
  for (u64 blk = 0; blk < kChunk / kBlock; ++blk) {
    const float* xb = x + blk * kBlock;
    __m256i miss = _mm256_setzero_si256();
    for (u64 i = 0; i < kBlock; i += 32) {
      prefetch_ahead<128, kPrefetchBytes>(xb + i);
      for (int k = 0; k < 4; ++k) {
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb + i + 8 * k));
        const __m256i a = _mm256_and_si256(b, abs_mask);
        m[k] = _mm256_max_epi32(m[k], a);  // |bits| >= 0 as i32
        const __m256i below = _mm256_cmpgt_epi32(vthr, a);
        miss = _mm256_or_si256(miss, below);
        const __m256 v = _mm256_castsi256_ps(_mm256_andnot_si256(below, b));  // misses become +0
        s[2 * k] = _mm256_add_pd(s[2 * k], _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
        s[2 * k + 1] = _mm256_add_pd(s[2 * k + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
      }
    }
    blocks |= static_cast<u32>(!_mm256_testz_si256(miss, miss)) << blk;
  }
  for (int k = 0; k < 8; ++k) _mm256_storeu_pd(lanes + 4 * k, s[k]);
  alignas(32) i32 lane_max[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lane_max),
                     _mm256_max_epi32(_mm256_max_epi32(m[0], m[1]), _mm256_max_epi32(m[2], m[3])));
  return {Layout<float>::top(static_cast<u32>(*std::max_element(lane_max, lane_max + 8))), blocks};
}

__attribute__((target("avx2"))) Pass pass_avx2(const double* x, u32 eb, double* lanes) {
  const __m256i abs_mask = _mm256_set1_epi64x(static_cast<i64>(kAbs64));
  const __m256i vthr = _mm256_set1_epi64x(static_cast<i64>(threshold(eb, double{})));
  const __m256d sigma = _mm256_set1_pd(sigma64(eb));
  // The top needs only the high words of |bits|: a 32-bit max over both halves, whose low
  // halves are dropped at the end (cheaper than a 64-bit compare and blend).
  __m256i m[4];
  __m256d hi[4], lo[4];
  for (int k = 0; k < 4; ++k) {
    m[k] = _mm256_setzero_si256();
    hi[k] = lo[k] = _mm256_setzero_pd();
  }
  u32 blocks = 0;
  for (u64 blk = 0; blk < kChunk / kBlock; ++blk) {
    const double* xb = x + blk * kBlock;
    __m256i miss = _mm256_setzero_si256();
    for (u64 i = 0; i < kBlock; i += 16) {
      prefetch_ahead<128, kPrefetchBytes>(xb + i);
      for (int k = 0; k < 4; ++k) {
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb + i + 4 * k));
        const __m256i a = _mm256_and_si256(b, abs_mask);
        m[k] = _mm256_max_epi32(m[k], a);
        const __m256i below = _mm256_cmpgt_epi64(vthr, a);
        miss = _mm256_or_si256(miss, below);
        const __m256d v = _mm256_castsi256_pd(_mm256_andnot_si256(below, b));
        const __m256d h = _mm256_sub_pd(_mm256_add_pd(v, sigma), sigma);
        hi[k] = _mm256_add_pd(hi[k], h);
        lo[k] = _mm256_add_pd(lo[k], _mm256_sub_pd(v, h));
      }
    }
    blocks |= static_cast<u32>(!_mm256_testz_si256(miss, miss)) << blk;
  }
  for (int k = 0; k < 4; ++k) {
    _mm256_storeu_pd(lanes + 4 * k, hi[k]);
    _mm256_storeu_pd(lanes + kLanes64 + 4 * k, lo[k]);
  }
  alignas(32) u32 words[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(words),
                     _mm256_max_epi32(_mm256_max_epi32(m[0], m[1]), _mm256_max_epi32(m[2], m[3])));
  const u32 high = std::max({words[1], words[3], words[5], words[7]});  // little-endian: odd words
  return {high >> 20, blocks};
}

bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
#endif

bool use_avx2() {
#if XR_OMP_EXACT_X86
  return have_avx2() && std::getenv("XREDUCE_OMP_EXACT_PORTABLE") == nullptr;
#else
  return false;
#endif
}

template <class T> Pass run_pass(const T* x, u32 eb, double* lanes, [[maybe_unused]] bool avx2) {
#if XR_OMP_EXACT_X86
  if (avx2) return pass_avx2(x, eb, lanes);
#endif
  return pass_portable(x, eb, lanes);
}

// The misses (elements below a chunk's window), summed exactly in double bins by biased
// exponent, kBinades binades a bin, up to kTerms of them between two flush()es, which hand the
// bins' sums to the ExactSum. Data of wide range (magnitudes over 1e-300..1e300) is almost all
// misses: one by one through ExactSum::add it ran at 0.06x of the plain sum (16-core Xeon
// host, 2^28 f64).
// f32 (8 binades a bin): a float is an exact double, a multiple of the smallest ulp of its bin,
// and 2^18 of them need at most 18 + 1 + 7 + 24 = 50 bits: exact.
// f64 (16 binades a bin, top E): the window sums' extraction with H = 2^18 terms, sigma =
// 1.5 * 2^(E + 2 + 18): h = (v + sigma) - sigma is a multiple of u = 2^(E - 32) with |h| <=
// 2^(E+1), 2^18 of them <= 2^51 units of u; r = v - h is exact, |r| <= u/2 and a multiple of
// ulp(v) >= 2^(E - 15 - 52), 2^18 of them <= 2^52 units of it: exact (2 * 18 + 16 <= 53). A miss
// lies below eb - 32 <= kMaxTop64 - 32, so sigma stays finite. Sums of subsets of the terms
// are exact too, so the copies of a bin add exactly before the flush.
template <class T> struct MissBins {
  static constexpr int kBinades = sizeof(T) == 8 ? 16 : 8;
  static constexpr int kExponentBits = sizeof(T) == 8 ? 11 : 8;
  static constexpr int kBins = (1 << kExponentBits) / kBinades;
  static constexpr int kMantissaBits = sizeof(T) == 8 ? 52 : 23;
  static constexpr int kLog2Terms = 18;
  static constexpr u64 kTerms = u64{1} << kLog2Terms;
  // Neighbouring elements go to different copies of the bins, so that two of them in one bin
  // do not wait for each other's store: 2-core Xeon VM, 2^25 `--dist wide`, 2 threads, one copy
  // against four: f32 48.7 against 38.3 ms, f64 55.0 against 37.2.
  static constexpr int kCopies = 4;
  double hi[kCopies][kBins] = {};
  double lo[kCopies][kBins] = {};  // f64: the parts below each bin's u

  static const double* sigmas() {
    static const auto table = [] {
      std::array<double, kBins> t{};
      for (int b = 0; b < kBins; ++b) t[b] = std::ldexp(1.5, std::max((b + 1) * kBinades - 1, 1) - 1023 + 2 + kLog2Terms);
      return t;
    }();
    return table.data();
  }
  // x with its |bits|, below the window: finite, and below eb - the window. Zeros add nothing.
  void add(int copy, T x, typename Layout<T>::Bits abs_bits, [[maybe_unused]] const double* sigma) {
    const auto bin = static_cast<int>(abs_bits >> kMantissaBits) / kBinades;
    if constexpr (sizeof(T) == 4) {
      hi[copy][bin] += static_cast<double>(x);
    } else {
      const double h = (x + sigma[bin]) - sigma[bin];
      hi[copy][bin] += h;
      lo[copy][bin] += x - h;
    }
  }
  // The misses of block x (kBlock elements) under threshold thr.
  void add_block(const T* x, typename Layout<T>::Bits thr, const double* sigma) {
    for (u64 i = 0; i < kBlock; i += kCopies) {
      for (int c = 0; c < kCopies; ++c) {
        typename Layout<T>::Bits b;
        std::memcpy(&b, x + i + c, sizeof b);
        const auto a = b & Layout<T>::kAbs;
        if (a < thr) add(c, x[i + c], a, sigma);
      }
    }
  }
  void flush(ExactSum& acc) {
    double sums[2 * kBins];
    std::size_t k = 0;
    for (int b = 0; b < kBins; ++b) {
      double h = 0, l = 0;
      for (int c = 0; c < kCopies; ++c) {
        h += hi[c][b];
        l += lo[c][b];
        hi[c][b] = lo[c][b] = 0;
      }
      if (h != 0) sums[k++] = h;
      if (l != 0) sums[k++] = l;
    }
    acc.add(sums, k);
  }
};

// Adds one chunk to acc exactly, with the window top eb of the chunks before (0: none yet),
// which it updates for the next chunk.
template <class T> void add_chunk(const T* x, u32& eb, ExactSum& acc, MissBins<T>& bins, bool avx2) {
  using L = Layout<T>;
  alignas(32) double lanes[L::kLaneSums];
  for (;;) {
    const Pass p = run_pass(x, eb, lanes, avx2);
    if (p.top > L::kMaxTop) {  // inf/NaN (flags), or f64 too close to overflow for sigma
      acc.add(x, kChunk);
      return;
    }
    if (p.top > eb) {  // above the window: the sums may be inexact; again, with a window on top
      eb = std::min(p.top + kHeadroom, L::kMaxTop);
      continue;
    }
    const auto thr = threshold(eb, T{});
    const double* sigma = MissBins<T>::sigmas();
    for (u32 mask = p.miss_blocks; mask != 0; mask &= mask - 1)
      bins.add_block(x + static_cast<u64>(std::countr_zero(mask)) * kBlock, thr, sigma);
    acc.add(lanes, L::kLaneSums);
    if (p.top + kLowerAfter < eb) eb = p.top + kHeadroom;
    return;
  }
}

// Adds x[0..n) to acc exactly (flags aside: see exact_sum_state()).
template <class T> void add_range(const T* x, u64 n, ExactSum& acc, bool avx2) {
  if (!default_fp_env()) {
    acc.add(x, static_cast<std::size_t>(n));
    return;
  }
  u64 i = 0;
  u32 eb = 0;
  MissBins<T> bins;
  static_assert(MissBins<T>::kTerms % kChunk == 0);
  for (; i + kChunk <= n; i += kChunk) {
    add_chunk(x + i, eb, acc, bins, avx2);
    if ((i / kChunk + 1) % (MissBins<T>::kTerms / kChunk) == 0) bins.flush(acc);
  }
  bins.flush(acc);
  acc.add(x + i, static_cast<std::size_t>(n - i));
}

template <class T> bool all_negative_zero(const T* x, u64 n) {
  using U = std::conditional_t<sizeof(T) == 4, u32, u64>;
  constexpr U kNegZero = U{1} << (8 * sizeof(U) - 1);
  for (u64 i = 0; i < n; ++i) {
    U b;
    std::memcpy(&b, x + i, sizeof b);
    if (b != kNegZero) return false;
  }
  return true;
}

}  // namespace

const char* exact_front_end() { return use_avx2() ? "avx2" : "portable"; }

template <class T> ExactSum::Raw exact_sum_state(const T* x, std::uint64_t n, int threads) {
  threads = std::max(threads, 1);
  const bool avx2 = use_avx2();
  std::vector<ExactSum> part(static_cast<std::size_t>(threads));
  xr::detail::RegionErrors errors;
#pragma omp parallel num_threads(threads)
  errors.run(xr::detail::Region::OmpExact, [&] {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    // Shares on 64-byte boundaries of the index (any split gives the same exact sum).
    constexpr u64 kAlign = 64 / sizeof(T);
    const auto edge = [&](int k) { return std::min(n, n / kAlign * static_cast<u64>(k) / nt * kAlign); };
    const u64 lo = edge(t), hi = t + 1 == nt ? n : edge(t + 1);
    if (hi > lo) add_range(x + lo, hi - lo, part[static_cast<std::size_t>(t)], avx2);
  });
  errors.rethrow();
  // Merge in thread order (any order gives the same state).
  ExactSum total;
  for (const auto& p : part) total.merge(p);
  ExactSum::Raw r = total.raw();
  // The lane sums added to the states set kFlagAny/kFlagNotNegZero regardless of the data:
  // recompute them as ExactSum::add of the data would. inf/NaN flags come only from
  // ExactSum::add of the original elements, so they are exact.
  constexpr std::uint32_t kSpecial = ExactSum::kFlagNaN | ExactSum::kFlagPosInf | ExactSum::kFlagNegInf;
  std::uint32_t flags = r.flags & kSpecial;
  if (n != 0) {
    flags |= ExactSum::kFlagAny;
    // Some term is not -0 if there is a special value or the exact sum is nonzero; only an
    // exact zero needs a look at the data (which stops at the first element that is not -0).
    const bool nonzero = std::any_of(r.limb.begin(), r.limb.end(), [](std::int64_t v) { return v != 0; });
    if (flags != ExactSum::kFlagAny || nonzero || !all_negative_zero(x, n)) flags |= ExactSum::kFlagNotNegZero;
  }
  r.flags = flags;
  return r;
}

template ExactSum::Raw exact_sum_state<float>(const float*, std::uint64_t, int);
template ExactSum::Raw exact_sum_state<double>(const double*, std::uint64_t, int);

}  // namespace xr::omp::detail
