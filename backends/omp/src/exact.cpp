// Exact f32/f64 sums on the CPU (docs/exact.md, section "OpenMP front end").
//
// xr::ExactSum::add costs a few nanoseconds per term; this front end sums most terms exactly
// in ordinary double arithmetic first and hands ExactSum only a few exact doubles per chunk.
// Each thread walks its share in chunks of 16384 elements:
//  1. the largest magnitude in the chunk (an integer max over the bit patterns) gives the
//     chunk's top exponent eb (and shows inf/NaN: eb = all ones);
//  2. every element within a fixed number of binades below eb is summed into double lanes in
//     a way that is exact by construction (below); the few elements below that window
//     ("misses") go to ExactSum::add one by one, and so does a whole chunk with inf/NaN or
//     near-overflow values;
//  3. the lane sums (exact doubles) are added to the thread's ExactSum.
// f32: a float is an exact double; a lane takes at most H = 512 floats whose exponents lie in
// [eb - 20, eb], so every partial sum is a multiple of the smallest ulp and needs at most
// 9 + 20 + 24 = 53 bits: exact.
// f64: extraction against sigma = 1.5 * 2^(E + 12) (E the unbiased top exponent, H = 1024
// terms per lane): h = (v + sigma) - sigma is v rounded to a multiple of u = 2^(E - 40),
// |h| <= 2^(E+1), so 1024 of them sum exactly (<= 2^51 units of u); r = v - h is exact with
// |r| <= u/2, and for v at most 32 binades below E (ulp(v) >= 2^(E - 84)) 1024 of them sum
// exactly too (<= 2^52 units of the smallest ulp).
// Rounding to nearest and no flush-to-zero are required: a thread that finds another floating-
// point environment uses ExactSum::add for everything.
#include "exact.hpp"

#include <omp.h>

#include <algorithm>
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
// f32: 32 lanes of doubles, H = 512 terms per lane, window of 20 binades below the top.
constexpr int kLanes32 = 32;
constexpr int kWindow32 = 20;
static_assert(kChunk / kLanes32 == 512 && 9 + kWindow32 + 24 == 53);
// f64: 16 lanes (twice: high and low parts), H = 1024, window 32 binades, sigma = 2^(E+2+10).
constexpr int kLanes64 = 16;
constexpr int kWindow64 = 32;
constexpr int kLog2H64 = 10;
static_assert(kChunk / kLanes64 == (1u << kLog2H64) && kWindow64 == 52 - 2 * kLog2H64);
// sigma = 1.5 * 2^(max(eb,1) - 1023 + 12) must be finite: max(eb,1) <= 2034.
constexpr u32 kMaxTopExponent64 = 1023 + 1023 - 2 - kLog2H64;

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

u32 top_exponent(u32 max_abs) { return max_abs >> 23; }
u32 top_exponent(u64 max_abs) { return static_cast<u32>(max_abs >> 52); }

// Threshold on |bits| below which an element is a miss.
u32 threshold32(u32 eb) { return eb > kWindow32 ? (eb - kWindow32) << 23 : 0; }
u64 threshold64(u32 eb) { return eb > kWindow64 + 1 ? u64(eb - kWindow64) << 52 : 0; }
double sigma64(u32 eb) { return std::ldexp(1.5, static_cast<int>(std::max(eb, 1u)) - 1023 + 2 + kLog2H64); }

// Misses of a chunk, one by one.
void add_misses(const float* x, u32 thr, ExactSum& acc) {
  for (u64 i = 0; i < kChunk; ++i) {
    u32 b;
    std::memcpy(&b, x + i, sizeof b);
    if ((b & kAbs32) < thr) acc.add(x[i]);
  }
}
void add_misses(const double* x, u64 thr, ExactSum& acc) {
  for (u64 i = 0; i < kChunk; ++i) {
    u64 b;
    std::memcpy(&b, x + i, sizeof b);
    if ((b & kAbs64) < thr) acc.add(x[i]);
  }
}

// ---- portable front end (plain C++, lanes the compiler may vectorise) ----

void chunk_portable(const float* x, ExactSum& acc) {
  u32 mx[kLanes32] = {};
  for (u64 i = 0; i < kChunk; i += kLanes32)
    for (int j = 0; j < kLanes32; ++j) {
      u32 b;
      std::memcpy(&b, x + i + j, sizeof b);
      mx[j] = std::max(mx[j], b & kAbs32);
    }
  const u32 eb = top_exponent(*std::max_element(mx, mx + kLanes32));
  if (eb == 0xffu) {
    acc.add(x, kChunk);
    return;
  }
  const u32 thr = threshold32(eb);
  double s[kLanes32] = {};
  u32 miss = 0;
  for (u64 i = 0; i < kChunk; i += kLanes32)
    for (int j = 0; j < kLanes32; ++j) {
      u32 b;
      std::memcpy(&b, x + i + j, sizeof b);
      const bool keep = (b & kAbs32) >= thr;
      miss |= !keep;
      s[j] += keep ? static_cast<double>(x[i + j]) : 0.0;
    }
  if (miss) add_misses(x, thr, acc);
  acc.add(s, kLanes32);
}

void chunk_portable(const double* x, ExactSum& acc) {
  u64 mx[kLanes64] = {};
  for (u64 i = 0; i < kChunk; i += kLanes64)
    for (int j = 0; j < kLanes64; ++j) {
      u64 b;
      std::memcpy(&b, x + i + j, sizeof b);
      mx[j] = std::max(mx[j], b & kAbs64);
    }
  const u32 eb = top_exponent(*std::max_element(mx, mx + kLanes64));
  if (eb > kMaxTopExponent64) {  // inf/NaN, or too close to overflow for sigma
    acc.add(x, kChunk);
    return;
  }
  const u64 thr = threshold64(eb);
  const double sigma = sigma64(eb);
  // volatile-free: no -ffast-math in this library, so (v + sigma) - sigma is evaluated as written.
  double hi[kLanes64] = {}, lo[kLanes64] = {};
  u32 miss = 0;
  for (u64 i = 0; i < kChunk; i += kLanes64)
    for (int j = 0; j < kLanes64; ++j) {
      u64 b;
      std::memcpy(&b, x + i + j, sizeof b);
      const bool keep = (b & kAbs64) >= thr;
      miss |= !keep;
      const double v = keep ? x[i + j] : 0.0;
      const double h = (v + sigma) - sigma;
      hi[j] += h;
      lo[j] += v - h;
    }
  if (miss) add_misses(x, thr, acc);
  acc.add(hi, kLanes64);
  acc.add(lo, kLanes64);
}

// ---- AVX2 front end (the same sums, lane for lane: identical results by exactness) ----
#if XR_OMP_EXACT_X86

__attribute__((target("avx2"))) void chunk_avx2(const float* x, ExactSum& acc) {
  const __m256i abs_mask = _mm256_set1_epi32(static_cast<int>(kAbs32));
  __m256i m[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                  _mm256_setzero_si256()};
  for (u64 i = 0; i < kChunk; i += 32)
    for (int k = 0; k < 4; ++k) {
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 8 * k));
      m[k] = _mm256_max_epi32(m[k], _mm256_and_si256(b, abs_mask));  // |bits| >= 0 as i32
    }
  alignas(32) i32 lane_max[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lane_max),
                     _mm256_max_epi32(_mm256_max_epi32(m[0], m[1]), _mm256_max_epi32(m[2], m[3])));
  const u32 eb = top_exponent(static_cast<u32>(*std::max_element(lane_max, lane_max + 8)));
  if (eb == 0xffu) {
    acc.add(x, kChunk);
    return;
  }
  const u32 thr = threshold32(eb);
  const __m256i vthr = _mm256_set1_epi32(static_cast<int>(thr));
  __m256d s[8];
  for (auto& v : s) v = _mm256_setzero_pd();
  __m256i miss = _mm256_setzero_si256();
  for (u64 i = 0; i < kChunk; i += 32)
    for (int k = 0; k < 4; ++k) {
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 8 * k));
      const __m256i below = _mm256_cmpgt_epi32(vthr, _mm256_and_si256(b, abs_mask));
      miss = _mm256_or_si256(miss, below);
      const __m256 v = _mm256_castsi256_ps(_mm256_andnot_si256(below, b));  // misses become +0
      s[2 * k] = _mm256_add_pd(s[2 * k], _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
      s[2 * k + 1] = _mm256_add_pd(s[2 * k + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    }
  if (!_mm256_testz_si256(miss, miss)) add_misses(x, thr, acc);
  alignas(32) double lanes[kLanes32];
  for (int k = 0; k < 8; ++k) _mm256_store_pd(lanes + 4 * k, s[k]);
  acc.add(lanes, kLanes32);
}

__attribute__((target("avx2"))) void chunk_avx2(const double* x, ExactSum& acc) {
  const __m256i abs_mask = _mm256_set1_epi64x(static_cast<i64>(kAbs64));
  __m256i m[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                  _mm256_setzero_si256()};
  for (u64 i = 0; i < kChunk; i += 16)
    for (int k = 0; k < 4; ++k) {
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 4 * k));
      const __m256i a = _mm256_and_si256(b, abs_mask);
      m[k] = _mm256_blendv_epi8(m[k], a, _mm256_cmpgt_epi64(a, m[k]));
    }
  alignas(32) i64 lane_max[16];
  for (int k = 0; k < 4; ++k) _mm256_store_si256(reinterpret_cast<__m256i*>(lane_max + 4 * k), m[k]);
  const u32 eb = top_exponent(static_cast<u64>(*std::max_element(lane_max, lane_max + 16)));
  if (eb > kMaxTopExponent64) {
    acc.add(x, kChunk);
    return;
  }
  const u64 thr = threshold64(eb);
  const __m256i vthr = _mm256_set1_epi64x(static_cast<i64>(thr));
  const __m256d sigma = _mm256_set1_pd(sigma64(eb));
  __m256d hi[4], lo[4];
  for (int k = 0; k < 4; ++k) hi[k] = lo[k] = _mm256_setzero_pd();
  __m256i miss = _mm256_setzero_si256();
  for (u64 i = 0; i < kChunk; i += 16)
    for (int k = 0; k < 4; ++k) {
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 4 * k));
      const __m256i below = _mm256_cmpgt_epi64(vthr, _mm256_and_si256(b, abs_mask));
      miss = _mm256_or_si256(miss, below);
      const __m256d v = _mm256_castsi256_pd(_mm256_andnot_si256(below, b));
      const __m256d h = _mm256_sub_pd(_mm256_add_pd(v, sigma), sigma);
      hi[k] = _mm256_add_pd(hi[k], h);
      lo[k] = _mm256_add_pd(lo[k], _mm256_sub_pd(v, h));
    }
  if (!_mm256_testz_si256(miss, miss)) add_misses(x, thr, acc);
  alignas(32) double lanes[2 * kLanes64];
  for (int k = 0; k < 4; ++k) {
    _mm256_store_pd(lanes + 4 * k, hi[k]);
    _mm256_store_pd(lanes + kLanes64 + 4 * k, lo[k]);
  }
  acc.add(lanes, 2 * kLanes64);
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

// Adds x[0..n) to acc exactly (flags aside: see exact_sum_state()).
template <class T> void add_range(const T* x, u64 n, ExactSum& acc, bool avx2) {
  if (!default_fp_env()) {
    acc.add(x, static_cast<std::size_t>(n));
    return;
  }
  u64 i = 0;
  for (; i + kChunk <= n; i += kChunk) {
#if XR_OMP_EXACT_X86
    if (avx2) {
      chunk_avx2(x + i, acc);
      continue;
    }
#endif
    (void)avx2;
    chunk_portable(x + i, acc);
  }
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
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    // Shares on 64-byte boundaries of the index (any split gives the same exact sum).
    constexpr u64 kAlign = 64 / sizeof(T);
    const auto edge = [&](int k) { return std::min(n, n / kAlign * static_cast<u64>(k) / nt * kAlign); };
    const u64 lo = edge(t), hi = t + 1 == nt ? n : edge(t + 1);
    if (hi > lo) add_range(x + lo, hi - lo, part[static_cast<std::size_t>(t)], avx2);
  }
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
