// Exact f32/f64 sums on the GPU, and of f16 and bf16 (each exactly an f32: they are read as
// 16-byte packs of eight and summed as f32) (docs/exact.md, "Device kernels"). Device code only; the
// launcher is backends/cuda/src/exact.cu.
//
// Each warp keeps a warp-uniform *window* [W - K, W] of binades, K by the stored type. Per tile
// (Traits::kPerThread elements a thread), every thread tests its own elements against it
// (inside, or zero) and sums them exactly by construction (f32, bf16: plain double sums; f64: sigma extraction into a
// high and a low double; f16, whose whole range is one window: two wrapping 32-bit integers
// read off FP32 adds); one vote decides the tile. Only a tile that fails somewhere in the warp
// (no window yet, an element above the window or far below it, inf/NaN, a full count) takes
// the warp max of its keys and may move the window. Before a sum could stop being exact, the
// warp converts the sums to integers on the window's grid, adds them across the warp, and lane
// 0 adds the result to the block's carry-save superaccumulator in shared memory (68 x int64,
// the xr::ExactSum layout) with 64-bit shared atomics. Elements below the window, inf/NaN and
// near-overflow f64 elements are added one by one as 32-bit digits (the ExactSum split). At
// the end the block normalises its state and adds it limb-wise to a global state with 64-bit
// atomics; the last block (ticket) moves the global state to `out`, zeroes it for the next
// launch and, when asked, rounds it into `value` on the device.
#pragma once

#include <bit>
#include <cstdint>

#include "xreduce/half.hpp"

namespace xr::kern::exact {

using u32 = std::uint32_t;
using u64 = std::uint64_t;
using i64 = long long;
using ull = unsigned long long;

constexpr int kLimbs = 68;  // ExactSum::kLimbs
constexpr unsigned kMaxBlock = 512;  // __launch_bounds__: up to 128 registers a thread
constexpr u32 kFlagNaN = 1u, kFlagPosInf = 2u, kFlagNegInf = 4u, kFlagNotNegZero = 16u;

// Global accumulator and result, in the launcher's workspace (zero before the first launch;
// the last block leaves the accumulator and the ticket at zero again).
struct Global {
  i64 limb[kLimbs];
  u32 flags;
  u32 ticket;
};
struct RawOut {  // ExactSum::Raw-compatible: limbs then flags
  i64 limb[kLimbs];
  u32 flags;
  u32 pad;
};

// Per stored type In: the window of binades a warp keeps below its top W, the terms a thread
// sums between flushes, the largest W (elements above it go digit by digit), and the elements a
// thread reads per tile (kPerThread; timed on an H200 at 2^28 against CUB's plain sum of the
// same array, normal data: f16 0.94x of CUB's time at 16, 1.23x at 8, 1.11x at 32; f64 1.01x at
// 16, 1.08x at 8; bf16 1.36x at 8, 1.57x at 16; f32 1.08x at 8, 1.18x at 16).
// f32 and bf16 sum in a double: kept elements are multiples of 2^g, g = max(W - kWindow, 1) -
// 127 - (p - 1) for p significand bits, below 2^(W - 126), so kMaxTerms of them sum exactly when
// log2(kMaxTerms) + kWindow + p <= 53. f16 sums in two wrapping 32-bit integers (Window<f16>).
template <class In> struct Traits {  // f32
  static constexpr int kWindow = 20, kMaxTerms = 512, kPrecision = 24, kPerThread = 8;
  static constexpr u32 kMaxWindowTop = 254;
};
template <> struct Traits<bf16> {  // fewer significand bits: a wider window
  static constexpr int kWindow = 35, kMaxTerms = 1024, kPrecision = 8, kPerThread = 8;
  static constexpr u32 kMaxWindowTop = 254;
};
template <> struct Traits<f16> {  // one fixed window: every f16, 2^-24 to 2^16
  static constexpr int kMaxTerms = 1024, kPerThread = 16;
  static constexpr u32 kMaxWindowTop = 254;  // only inf and NaN are above it
};
template <> struct Traits<double> {
  static constexpr int kWindow = 32;         // 52 - 2 * log2(kMaxTerms)
  static constexpr int kMaxTerms = 1024;     // log2 = 10
  static constexpr int kPerThread = 16;
  static constexpr u32 kMaxWindowTop = 2034; // sigma = 1.5 * 2^(W - 1023 + 12) stays finite
};
template <class In> constexpr bool kDoubleSumExact =
    std::countr_zero(unsigned(Traits<In>::kMaxTerms)) + Traits<In>::kWindow + Traits<In>::kPrecision <= 53;
static_assert(kDoubleSumExact<float> && kDoubleSumExact<bf16>);
// Window<f16>'s bounds: |sum H| < 2^31 and |sum Lo| < 2^31 over kMaxTerms terms.
static_assert(std::countr_zero(unsigned(Traits<f16>::kMaxTerms)) + 20 <= 30);

// How the stored type In is read: 16-byte packs of kPerPack elements, each converted to
// compute_t<In> exactly.
template <class In> struct Loads {
  static constexpr int kPerPack = 16 / sizeof(In);
  struct alignas(16) Pack {
    In v[kPerPack];
  };
  static __device__ __forceinline__ void load(const Pack* p, compute_t<In> (&v)[kPerPack]) {
    const uint4 raw = *reinterpret_cast<const uint4*>(p);  // one 16-byte load
    Pack q;
    __builtin_memcpy(&q, &raw, sizeof(Pack));
#pragma unroll
    for (int k = 0; k < kPerPack; ++k) v[k] = static_cast<compute_t<In>>(q.v[k]);
  }
};
template <class In> constexpr int kPerThread = Traits<In>::kPerThread;

// ---- the superaccumulator in shared memory ----

__device__ __forceinline__ void limb_add(i64* L, int i, i64 d) {
  if (d != 0) atomicAdd(reinterpret_cast<ull*>(L + i), static_cast<ull>(d));
}

// L += n * 2^(pos - 1074) for |n| < 2^63 (three digits below 2^32, signed).
__device__ __forceinline__ void add_scaled(i64* L, i64 n, int pos) {
  if (n == 0) return;
  const bool neg = n < 0;
  const ull a = neg ? 0ull - static_cast<ull>(n) : static_cast<ull>(n);
  const int i = pos >> 5, r = pos & 31;
  const ull lo = a << r;
  const ull hi = r ? a >> (64 - r) : 0ull;
  const i64 d0 = static_cast<i64>(lo & 0xffffffffull), d1 = static_cast<i64>(lo >> 32), d2 = static_cast<i64>(hi);
  limb_add(L, i, neg ? -d0 : d0);
  limb_add(L, i + 1, neg ? -d1 : d1);
  limb_add(L, i + 2, neg ? -d2 : d2);
}

// One element, digit by digit (ExactSum's split); inf/NaN only set flags.
__device__ __forceinline__ void add_one(i64* L, u32& flags, float x) {
  const u32 b = __float_as_uint(x);
  const u32 ex = (b >> 23) & 0xffu;
  if (ex == 0xffu) {
    flags |= (b & 0x7fffffu) ? kFlagNaN : ((b >> 31) ? kFlagNegInf : kFlagPosInf);
    return;
  }
  const u32 normal = ex != 0;
  const i64 m = static_cast<i64>((b & 0x7fffffu) | (normal << 23));
  add_scaled(L, (b >> 31) ? -m : m, static_cast<int>(ex + (1u - normal) + 924u));
}
__device__ __forceinline__ void add_one(i64* L, u32& flags, double x) {
  const ull b = static_cast<ull>(__double_as_longlong(x));
  const u32 ex = static_cast<u32>(b >> 52) & 0x7ffu;
  if (ex == 0x7ffu) {
    flags |= (b & 0xfffffffffffffull) ? kFlagNaN : ((b >> 63) ? kFlagNegInf : kFlagPosInf);
    return;
  }
  const u32 normal = ex != 0;
  const i64 m = static_cast<i64>((b & 0xfffffffffffffull) | (static_cast<ull>(normal) << 52));
  add_scaled(L, (b >> 63) ? -m : m, static_cast<int>(ex - normal));
}

// A double s that is an integer multiple of 2^(pos - 1074) (pos >= 0), as that integer
// (|result| < 2^63 by the callers' bounds).
__device__ __forceinline__ i64 scaled_int(double s, int pos) {
  const ull b = static_cast<ull>(__double_as_longlong(s));
  const u32 ex = static_cast<u32>(b >> 52) & 0x7ffu;
  const u32 normal = ex != 0;
  const ull m = (b & 0xfffffffffffffull) | (static_cast<ull>(normal) << 52);
  if (m == 0) return 0;
  const int p = static_cast<int>(ex - normal);  // position of m's lowest bit
  const ull v = p >= pos ? m << (p - pos) : m >> (pos - p);  // the shift out is exact (zeros)
  return (b >> 63) ? -static_cast<i64>(v) : static_cast<i64>(v);
}

// Carry propagation (ExactSum's normalisation): limbs below the top in [0, 2^32).
__device__ __forceinline__ void normalise(i64* L) {
  i64 carry = 0;
  for (int i = 0; i < kLimbs - 1; ++i) {
    const i64 v = L[i] + carry;
    carry = v >> 32;
    L[i] = v & 0xffffffffll;
  }
  L[kLimbs - 1] += carry;
}

// The state's value rounded once, to nearest with ties to even, to a format of Prec significand
// bits and normal exponents [Emin, Emax], as a double (which holds every f32 and f64 exactly):
// ExactSum::round_to on the device (core/src/exact.cpp), for results that stay on the device.
// `l` is normalised and is overwritten; `any`: at least one term (an exact zero is -0 only when
// every term was -0).
template <int Prec, int Emin, int Emax>
__device__ double round_state(i64* l, u32 flags, bool any) {
  const double inf = __longlong_as_double(0x7ff0000000000000ll);
  if ((flags & kFlagNaN) || (flags & (kFlagPosInf | kFlagNegInf)) == (kFlagPosInf | kFlagNegInf))
    return __longlong_as_double(0x7ff8000000000000ll);
  if (flags & kFlagPosInf) return inf;
  if (flags & kFlagNegInf) return -inf;
  const bool neg = l[kLimbs - 1] < 0;
  if (neg) {
    for (int i = 0; i < kLimbs; ++i) l[i] = -l[i];
    normalise(l);
  }
  int k = kLimbs - 1;
  while (k >= 0 && l[k] == 0) --k;
  if (k < 0) return any && !(flags & kFlagNotNegZero) ? -0.0 : 0.0;
  const double sign = neg ? -1.0 : 1.0;
  if (32 * k - 1074 > Emax) return sign * inf;
  // The top three limbs, M * 2^b (M = hi * 2^64 + lo), and a sticky bit for everything below.
  const ull hi = static_cast<ull>(l[k]);
  const ull lo = (k >= 1 ? static_cast<ull>(l[k - 1]) << 32 : 0ull) | (k >= 2 ? static_cast<ull>(l[k - 2]) : 0ull);
  bool sticky = false;
  for (int j = 0; j < k - 2; ++j) sticky |= l[j] != 0;
  const int b = 32 * (k - 2) - 1074;
  const int bits = hi ? 128 - __clzll(static_cast<i64>(hi)) : 64 - __clzll(static_cast<i64>(lo));
  const int E = bits - 1 + b;  // exponent of the leading bit
  if (E > Emax) return sign * inf;
  const int q = max(E - Prec + 1, Emin - Prec + 1);  // exponent of the target ulp
  const int sh = q - b;                              // > 0 (docs/exact.md)
  const unsigned __int128 M = (static_cast<unsigned __int128>(hi) << 64) | lo;
  ull kept = 0;
  if (sh < 128) {
    kept = static_cast<ull>(M >> sh);
    const unsigned __int128 one = 1, rem = M & ((one << sh) - 1), half = one << (sh - 1);
    if (rem > half || (rem == half && (sticky || (kept & 1u)))) ++kept;
  }
  if (kept == 0) return sign * 0.0;
  if (q + (64 - __clzll(static_cast<i64>(kept))) - 1 > Emax) return sign * inf;
  return sign * ldexp(static_cast<double>(kept), q);  // exact: kept <= 2^Prec
}

__device__ __forceinline__ i64 warp_sum(i64 v) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
  return v;
}
__device__ __forceinline__ u32 warp_max(u32 v) {
#if __CUDA_ARCH__ >= 800
  return __reduce_max_sync(0xffffffffu, v);
#else
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, d));
  return v;
#endif
}
__device__ __forceinline__ u32 warp_or(u32 v) {
#if __CUDA_ARCH__ >= 800
  return __reduce_or_sync(0xffffffffu, v);
#else
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) v |= __shfl_xor_sync(0xffffffffu, v, d);
  return v;
#endif
}

// ---- per-thread window sums ----

// |bits| of the high word that holds the exponent (f64: the upper 32 bits).
__device__ __forceinline__ u32 abs_key(float x) { return __float_as_uint(x) & 0x7fffffffu; }
__device__ __forceinline__ u32 abs_key(double x) {
  return static_cast<u32>(static_cast<ull>(__double_as_longlong(x)) >> 32) & 0x7fffffffu;
}
template <class T> __device__ __forceinline__ u32 exponent_of_key(u32 key) {
  return sizeof(T) == 4 ? key >> 23 : key >> 20;
}
// Nonzero unless x is -0 (ORed over a thread's elements: "a term other than -0").
__device__ __forceinline__ u32 not_neg_zero(float x) { return __float_as_uint(x) ^ 0x80000000u; }
__device__ __forceinline__ u32 not_neg_zero(double x) {
  const ull b = static_cast<ull>(__double_as_longlong(x));
  return static_cast<u32>(b >> 32) ^ 0x80000000u | static_cast<u32>(b);
}

// A warp's window: the binades [W - kWindow, W] of its keys, and each thread's sums of its
// elements in it. `keep` is the hot test of every element: inside the window, or zero (which
// adds nothing). `moves_to(t)`: whether a tile whose largest exponent is t moves the window
// (none yet, t above W, or t 8 binades under it).
struct WindowKeys {
  u32 top = 0;         // W; with lo = ~0u and span = 0 nothing is kept: no window yet
  u32 lo = ~0u;        // keys in [lo, lo + span] are kept
  u32 span = 0;
  __device__ __forceinline__ void place(u32 w, int window, int key_shift) {
    top = w;
    lo = w > u32(window) ? (w - window) << key_shift : 0u;
    span = (((w + 1u) << key_shift) - 1u) - lo;
  }
  __device__ __forceinline__ bool inside(u32 key) const { return key - lo <= span; }
  __device__ __forceinline__ bool moves_to(u32 t) const { return lo == ~0u || t > top || t + 8u < top; }
};

template <class In, class T = compute_t<In>> struct Window;

// f32 and bf16: plain double sums.
template <class In> struct Window<In, float> : WindowKeys {
  using Tr = Traits<In>;
  double s = 0.0;
  __device__ __forceinline__ void set(u32 w) { place(w, Tr::kWindow, 23); }
  __device__ __forceinline__ bool keep(float x) const { return inside(abs_key(x)) || x == 0.0f; }
  __device__ __forceinline__ void add(float x) { s = __dadd_rn(s, static_cast<double>(x)); }
  // The sum is a multiple of 2^(pos - 1074), pos = max(W - kWindow, 1) + 948 - p.
  __device__ __forceinline__ void flush(i64* L, int) {
    const int pos = static_cast<int>(max(top, u32(Tr::kWindow + 1)) - Tr::kWindow) + 948 - Tr::kPrecision;
    const i64 v = warp_sum(scaled_int(s, pos));  // |v| < 32 * 2^53
    if ((threadIdx.x & 31u) == 0) add_scaled(L, v, pos);
    s = 0.0;
  }
};

// f16: no window and no double. Every finite f16 x is a multiple of 2^-24 below 2^16, and
// x = H * 2^-4 + Lo * 2^-24 exactly, where H = round(x / 2^-4) is read from the bits of
// t = x + kHigh (kHigh = 1.5 * 2^19, whose ulp is 2^-4: t stays in kHigh's binade, so the bits of
// t less those of kHigh are H, |H| <= 2^20), and Lo from the bits of (x - (t - kHigh)) + kLow
// (kLow = 0.75, ulp 2^-24; |Lo| <= 2^19). Every step is an exact FP32 add. The bits are summed in
// 32-bit integers that wrap; at a flush, subtracting count times the constants' bits gives sum H
// and sum Lo exactly, both below 2^31 for up to 2^10 terms (Traits<f16>).
template <> struct Window<f16, float> {
  static constexpr float kHigh = 786432.0f, kLow = 0.75f;
  u32 high = 0, low = 0;
  __device__ __forceinline__ void set(u32) {}
  __device__ __forceinline__ bool moves_to(u32) const { return false; }
  __device__ __forceinline__ bool keep(float x) const { return fabsf(x) < __int_as_float(0x7f800000); }
  __device__ __forceinline__ void add(float x) {
    const float t = __fadd_rn(x, kHigh);
    high += __float_as_uint(t);
    low += __float_as_uint(__fadd_rn(__fsub_rn(x, __fsub_rn(t, kHigh)), kLow));
  }
  __device__ __forceinline__ void flush(i64* L, int count) {
    const i64 h = static_cast<int>(high - u32(count) * __float_as_uint(kHigh));
    const i64 l = static_cast<int>(low - u32(count) * __float_as_uint(kLow));
    const i64 v = warp_sum(h * (i64{1} << 20) + l);  // the sum in units of 2^-24, |v| < 32 * 2^51
    if ((threadIdx.x & 31u) == 0) add_scaled(L, v, 1074 - 24);
    high = low = 0;
  }
};

// f64: sigma = 1.5 * 2^(E + 12), E = max(W,1) - 1023. h = (v + sigma) - sigma is v rounded to a
// multiple of u = 2^(E - 40) with |h| <= 2^(E+1); r = v - h is exact, |r| <= u/2. 1024 h's
// sum exactly (<= 2^51 units of u); 1024 r's of elements at most 32 binades below W sum
// exactly (<= 2^53 units of their lowest ulp 2^(E - 84), or of 2^-1074).
template <> struct Window<double, double> : WindowKeys {
  double sigma = 0.0;
  double hi = 0.0, lo_sum = 0.0;
  __device__ __forceinline__ void set(u32 w) {
    place(w, 32, 20);
    const u32 we = max(w, 1u) + 12u;  // biased exponent of sigma
    sigma = __longlong_as_double(static_cast<i64>((static_cast<ull>(we) << 52) | (1ull << 51)));
  }
  __device__ __forceinline__ bool keep(double x) const { return inside(abs_key(x)) || x == 0.0; }
  __device__ __forceinline__ void add(double v) {
    const double h = __dsub_rn(__dadd_rn(v, sigma), sigma);
    hi = __dadd_rn(hi, h);
    lo_sum = __dadd_rn(lo_sum, __dsub_rn(v, h));
  }
  __device__ __forceinline__ void flush(i64* L, int) {
    const int e = static_cast<int>(max(top, 1u));          // E + 1023
    const int pos_hi = e - 1023 - 40 + 1074;               // u = 2^(E - 40)
    const int pos_lo = max(e - 1023 - 84 + 1074, 0);       // 2^(E - 84), at least 2^-1074
    const i64 vh = warp_sum(scaled_int(hi, pos_hi));       // |vh| <= 32 * 2^51
    const i64 vl = warp_sum(scaled_int(lo_sum, pos_lo));   // |vl| <= 32 * 2^53
    if ((threadIdx.x & 31u) == 0) {
      add_scaled(L, vh, pos_hi);
      add_scaled(L, vl, pos_lo);
    }
    hi = lo_sum = 0.0;
  }
};

// A tile that failed the hot test in some thread of the warp (all threads enter together): an
// element outside the window (or no window yet), inf or NaN, or a full count. Specials set flags;
// the window moves up to the warp's largest element, or down when that is 8 binades under it,
// flushing first; what it still cannot keep is added digit by digit.
template <class In, int N, class T>
__device__ __forceinline__ void tile_cold(i64* L, u32& flags, Window<In>& w, int& count, T (&v)[N]) {
  using Tr = Traits<In>;
  u32 key = 0;
#pragma unroll
  for (int e = 0; e < N; ++e) {
    if (exponent_of_key<T>(abs_key(v[e])) > Tr::kMaxWindowTop) {  // inf/NaN, or f64 too close to overflow
      add_one(L, flags, v[e]);
      v[e] = T(0);
    }
    key = max(key, abs_key(v[e]));
  }
  key = warp_max(key);
  const u32 top = exponent_of_key<T>(key);
  const bool move = key != 0 && w.moves_to(top);
  if (count > 0 && (move || count + N > Tr::kMaxTerms)) {
    w.flush(L, count);
    count = 0;
  }
  if (move) w.set(min(top + 2u, Tr::kMaxWindowTop));
#pragma unroll
  for (int e = 0; e < N; ++e) {
    const bool keep = w.keep(v[e]);
    if (!keep) add_one(L, flags, v[e]);  // below the window
    w.add(keep ? v[e] : T(0));           // N terms a thread: Window<f16> counts them
  }
  count += N;
}

// Iterations of k_exact_sum between normalisations of the block's limbs, PT elements a thread.
template <int PT> constexpr u32 kNormaliseEvery = std::bit_floor((u32{1} << 21) / u32(PT + 1));

// The kernel. `in` is aligned to sizeof(In); the unaligned head (before the first 16-byte
// boundary) and the tail (after the last whole pack) are added one by one by block 0.
// blockDim.x: a multiple of 32, at most 512 (kMaxBlock). Any grid (<= 2^30 blocks).
template <class In, int PT = kPerThread<In>>
__global__ void __launch_bounds__(512) k_exact_sum(const In* __restrict__ in, u64 n, Global* g, RawOut* out,
                                                   compute_t<In>* value) {
  using T = compute_t<In>;
  using Tr = Traits<In>;
  using Pack = typename Loads<In>::Pack;
  constexpr int PP = Loads<In>::kPerPack, NP = PT / PP;
  static_assert(NP * PP == PT && Tr::kMaxTerms % PT == 0);
  __shared__ i64 L[kLimbs];
  __shared__ u32 block_flags;
  __shared__ bool is_last;
  for (int i = threadIdx.x; i < kLimbs; i += blockDim.x) L[i] = 0;
  if (threadIdx.x == 0) block_flags = 0;
  __syncthreads();

  u32 flags = 0;     // NaN / inf flags of this thread
  u32 nnz = 0;       // a term that is not -0
  const auto addr = reinterpret_cast<std::uintptr_t>(in);
  u64 head = ((16u - (addr & 15u)) & 15u) / sizeof(In);
  if (head > n) head = n;
  const u64 npacks = (n - head) / PP;
  const u64 tail_begin = head + npacks * PP;
  if (blockIdx.x == 0) {
    const u64 extra = head + (n - tail_begin);  // < 2 * PP
    if (threadIdx.x < extra) {
      const T x = static_cast<T>(in[threadIdx.x < head ? threadIdx.x : tail_begin + (threadIdx.x - head)]);
      nnz |= not_neg_zero(x);
      add_one(L, flags, x);
    }
  }

  const Pack* packs = reinterpret_cast<const Pack*>(in + head);
  const u64 tile = u64(blockDim.x) * NP;  // packs per block iteration
  Window<In> w;
  int count = 0;  // terms in the window sums since the last flush
  u32 iter = 0;
  for (u64 base = u64(blockIdx.x) * tile; base < npacks; base += u64(gridDim.x) * tile) {
    T v[PT];
#pragma unroll
    for (int u = 0; u < NP; ++u) {
      const u64 j = base + threadIdx.x + u64(u) * blockDim.x;
      T t[PP];
      if (j < npacks) Loads<In>::load(packs + j, t);
      else
#pragma unroll
        for (int k = 0; k < PP; ++k) t[k] = -T(0);  // -0: adds nothing, and is not "other than -0"
#pragma unroll
      for (int k = 0; k < PP; ++k) v[u * PP + k] = t[k];
    }
    bool hot = count + PT <= Tr::kMaxTerms;
#pragma unroll
    for (int e = 0; e < PT; ++e) {
      nnz |= not_neg_zero(v[e]);
      hot &= w.keep(v[e]);
    }
    if (__all_sync(0xffffffffu, hot)) {
#pragma unroll
      for (int e = 0; e < PT; ++e) w.add(v[e]);
      count += PT;
    } else {
      tile_cold(L, flags, w, count, v);
    }
    // Bound the shared limbs: an element or a flushed sum adds at most one digit (below 2^32)
    // to a limb, so an iteration adds at most kMaxBlock * (PT + 1) digits to one (PT elements a
    // thread, two flushed sums a warp); normalising every kNormaliseEvery iterations keeps
    // |limb| < 2^62.
    static_assert(u64(kMaxBlock) * (PT + 1) * kNormaliseEvery<PT> <= (u64{1} << 30));
    if ((++iter & (kNormaliseEvery<PT> - 1)) == 0) {
      __syncthreads();
      if (threadIdx.x == 0) normalise(L);
      __syncthreads();
    }
  }
  if (count > 0) w.flush(L, count);

  // Flags of the block, then the block state into the global one.
  u32 f = warp_or(flags | (nnz ? kFlagNotNegZero : 0u));
  if ((threadIdx.x & 31u) == 0 && f) atomicOr(&block_flags, f);
  __syncthreads();
  if (threadIdx.x == 0) normalise(L);
  __syncthreads();
  for (int i = threadIdx.x; i < kLimbs; i += blockDim.x)
    if (L[i] != 0) atomicAdd(reinterpret_cast<ull*>(g->limb + i), static_cast<ull>(L[i]));
  if (threadIdx.x == 0) {
    if (block_flags) atomicOr(&g->flags, block_flags);
    __threadfence();
    is_last = atomicAdd(&g->ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (is_last) {
    __threadfence();
    for (int i = threadIdx.x; i < kLimbs; i += blockDim.x)
      out->limb[i] = static_cast<i64>(atomicExch(reinterpret_cast<ull*>(g->limb + i), 0ull));
    if (threadIdx.x == 0) {
      out->flags = atomicExch(&g->flags, 0u);
      out->pad = 0;
      g->ticket = 0;
    }
    if (value != nullptr) {  // the rounded sum, on the device
      __syncthreads();
      if (threadIdx.x == 0) {
        for (int i = 0; i < kLimbs; ++i) L[i] = out->limb[i];
        normalise(L);
        *value = sizeof(T) == 4 ? static_cast<T>(round_state<24, -126, 127>(L, out->flags, n > 0))
                                : static_cast<T>(round_state<53, -1022, 1023>(L, out->flags, n > 0));
      }
    }
  }
}

}  // namespace xr::kern::exact
