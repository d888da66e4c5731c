// Exact f32/f64 sums on the GPU, and of f16 and bf16 (each exactly an f32: they are read as
// 16-byte packs of eight and summed as f32) (docs/exact.md, "Device kernels"). Device code only; the
// launcher is backends/cuda/exact_sum.cu.
//
// Per warp, per tile of 8 elements a thread: the tile's largest exponent (a warp max) keeps
// a warp-uniform *window* [W - K, W] of binades. Each thread sums the elements inside the
// window in double registers, exactly by construction (f32: plain double sums of floats;
// f64: sigma extraction into a high and a low double). Before a sum could stop being exact
// (a count limit, or the window has to move), the warp converts the sums to integers on the
// window's grid, adds them across the warp, and lane 0 adds the result to the block's
// carry-save superaccumulator in shared memory (68 x int64, the xr::ExactSum layout) with
// 64-bit shared atomics. Elements below the window, inf/NaN tiles and near-overflow f64 tiles
// are added one by one as 32-bit digits (the ExactSum split). At the end the block
// normalises its state and adds it limb-wise to a global state with 64-bit atomics; the last
// block (ticket) moves the global state to `out` and zeroes it for the next launch.
#pragma once

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

// The arithmetic of the compute type T (f32 or f64): window and flush limits.
template <class T> struct Traits;
template <> struct Traits<float> {
  using Bits = u32;
  static constexpr int kWindow = 20;         // binades kept below the window top
  static constexpr int kMaxTerms = 512;      // per thread between flushes (9 + 20 + 24 = 53 bits)
  static constexpr u32 kSpecialExp = 255;
  static constexpr u32 kMaxWindowTop = 254;
};
template <> struct Traits<double> {
  using Bits = ull;
  static constexpr int kWindow = 32;         // 52 - 2 * log2(kMaxTerms)
  static constexpr int kMaxTerms = 1024;     // log2 = 10
  static constexpr u32 kSpecialExp = 2047;
  static constexpr u32 kMaxWindowTop = 2034; // sigma = 1.5 * 2^(W - 1023 + 12) stays finite
};
// How the stored type In is read: 16-byte packs of kPerPack elements, kPacks per thread per
// tile (8 elements), each converted to compute_t<In> exactly.
template <class In> struct Loads {
  static constexpr int kPerPack = 16 / sizeof(In);
  static constexpr int kPacks = 8 / kPerPack;
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
template <class In> constexpr int kPerThread = Loads<In>::kPerPack * Loads<In>::kPacks;  // 8

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

// The rare paths, out of line so that the unrolled tile loop keeps its registers.
template <class T> __device__ __noinline__ void add_one_cold(i64* L, u32& flags, T x) { add_one(L, flags, x); }

// ---- per-thread window sums ----

// |bits| of the high word that holds the exponent (f64: the upper 32 bits).
__device__ __forceinline__ u32 abs_key(float x) { return __float_as_uint(x) & 0x7fffffffu; }
__device__ __forceinline__ u32 abs_key(double x) {
  return static_cast<u32>(static_cast<ull>(__double_as_longlong(x)) >> 32) & 0x7fffffffu;
}
template <class T> __device__ __forceinline__ u32 exponent_of_key(u32 key) {
  return sizeof(T) == 4 ? key >> 23 : key >> 20;
}
__device__ __forceinline__ bool is_neg_zero(float x) { return __float_as_uint(x) == 0x80000000u; }
__device__ __forceinline__ bool is_neg_zero(double x) {
  return static_cast<ull>(__double_as_longlong(x)) == 0x8000000000000000ull;
}

template <class T> struct Window;

// f32: kept elements (biased exponent >= W - 20) are summed as doubles; a sum of at most 512
// of them is a multiple of the lowest kept ulp 2^(max(W-20,1) - 150) below 2^(W - 126 + 9):
// 53 bits, exact.
template <> struct Window<float> {
  u32 top = 0;       // W, warp-uniform; 0 with count == 0: none yet
  u32 thr = 0;       // key threshold: kept iff abs_key >= thr
  double s = 0.0;
  __device__ __forceinline__ void set(u32 w) {
    top = w;
    thr = w > 20u ? (w - 20u) << 23 : 0u;
  }
  __device__ __forceinline__ bool keep(float x) const { return abs_key(x) >= thr; }
  __device__ __forceinline__ void add(float x) { s = __dadd_rn(s, static_cast<double>(x)); }
  // Everything is a multiple of 2^(pos - 1074) with pos = max(W - 20, 1) + 924.
  __device__ __forceinline__ void flush(i64* L) {
    const int pos = static_cast<int>(max(top, 21u) - 20u) + 924;
    const i64 v = warp_sum(scaled_int(s, pos));  // |v| < 32 * 2^53
    if ((threadIdx.x & 31u) == 0) add_scaled(L, v, pos);
    s = 0.0;
  }
};

// f64: sigma = 1.5 * 2^(E + 12), E = max(W,1) - 1023. h = (v + sigma) - sigma is v rounded to a
// multiple of u = 2^(E - 40) with |h| <= 2^(E+1); r = v - h is exact, |r| <= u/2. 1024 h's
// sum exactly (<= 2^51 units of u); 1024 r's of elements at most 32 binades below W sum
// exactly (<= 2^53 units of their lowest ulp 2^(E - 84), or of 2^-1074).
template <> struct Window<double> {
  u32 top = 0;
  u32 thr = 0;   // on the high word: kept iff abs_key >= thr
  double sigma = 0.0;
  double hi = 0.0, lo = 0.0;
  __device__ __forceinline__ void set(u32 w) {
    top = w;
    thr = w > 33u ? (w - 32u) << 20 : 0u;
    const u32 we = max(w, 1u) + 12u;  // biased exponent of sigma
    sigma = __longlong_as_double(static_cast<i64>((static_cast<ull>(we) << 52) | (1ull << 51)));
  }
  __device__ __forceinline__ bool keep(double x) const { return abs_key(x) >= thr; }
  __device__ __forceinline__ void add(double v) {
    const double h = __dsub_rn(__dadd_rn(v, sigma), sigma);
    hi = __dadd_rn(hi, h);
    lo = __dadd_rn(lo, __dsub_rn(v, h));
  }
  __device__ __forceinline__ void flush(i64* L) {
    const int e = static_cast<int>(max(top, 1u));          // E + 1023
    const int pos_hi = e - 1023 - 40 + 1074;               // u = 2^(E - 40)
    const int pos_lo = max(e - 1023 - 84 + 1074, 0);       // 2^(E - 84), at least 2^-1074
    const i64 vh = warp_sum(scaled_int(hi, pos_hi));       // |vh| <= 32 * 2^51
    const i64 vl = warp_sum(scaled_int(lo, pos_lo));       // |vl| <= 32 * 2^53
    if ((threadIdx.x & 31u) == 0) {
      add_scaled(L, vh, pos_hi);
      add_scaled(L, vl, pos_lo);
    }
    hi = lo = 0.0;
  }
};

// The kernel. `in` is aligned to sizeof(In); the unaligned head (before the first 16-byte
// boundary) and the tail (after the last whole pack) are added one by one by block 0.
// blockDim.x: a multiple of 32, at most 512 (kMaxBlock). Any grid (<= 2^30 blocks).
template <class In>
__global__ void __launch_bounds__(512) k_exact_sum(const In* __restrict__ in, u64 n, Global* g, RawOut* out) {
  using T = compute_t<In>;
  using Tr = Traits<T>;
  using Pack = typename Loads<In>::Pack;
  constexpr int PP = Loads<In>::kPerPack, NP = Loads<In>::kPacks, PT = PP * NP;
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
      nnz |= !is_neg_zero(x);
      add_one(L, flags, x);
    }
  }

  const Pack* packs = reinterpret_cast<const Pack*>(in + head);
  const u64 tile = u64(blockDim.x) * NP;  // packs per block iteration
  Window<T> w;
  int count = 0;      // terms per thread since the last flush (warp-uniform)
  bool have = false;  // a window is set
  u32 iter = 0;
  for (u64 base = u64(blockIdx.x) * tile; base < npacks; base += u64(gridDim.x) * tile) {
    T v[PT];
    bool valid[NP];
#pragma unroll
    for (int u = 0; u < NP; ++u) {
      const u64 j = base + threadIdx.x + u64(u) * blockDim.x;
      valid[u] = j < npacks;
      T t[PP];
      if (valid[u]) Loads<In>::load(packs + j, t);
      else
#pragma unroll
        for (int k = 0; k < PP; ++k) t[k] = T(0);
#pragma unroll
      for (int k = 0; k < PP; ++k) v[u * PP + k] = t[k];
    }
    u32 key = 0;
#pragma unroll
    for (int e = 0; e < PT; ++e) {
      key = max(key, abs_key(v[e]));
      nnz |= valid[e / PP] && !is_neg_zero(v[e]);
    }
    const u32 top = exponent_of_key<T>(warp_max(key));
    if (top > Tr::kMaxWindowTop) {
      // inf/NaN (or f64 values too close to overflow for sigma) in this warp's tile: digits.
#pragma unroll
      for (int e = 0; e < PT; ++e)
        if (valid[e / PP]) add_one_cold(L, flags, v[e]);
    } else {
      if (!have || top > w.top || top + 8u < w.top || count + PT > Tr::kMaxTerms) {
        if (have && count > 0) w.flush(L);
        w.set(min(top + 2u, Tr::kMaxWindowTop));
        have = true;
        count = 0;
      }
#pragma unroll
      for (int e = 0; e < PT; ++e) {
        const bool k = w.keep(v[e]);
        if (!k) add_one_cold(L, flags, v[e]);  // below the window (rare; zeros add nothing)
        w.add(k ? v[e] : T(0));
      }
      count += PT;
    }
    // Bound the shared limbs: each iteration adds at most blockDim * 8 + 2 * 32 digits to a
    // limb; normalising every 2^16 iterations keeps |limb| < 2^62.
    if ((++iter & 0xffffu) == 0) {
      __syncthreads();
      if (threadIdx.x == 0) normalise(L);
      __syncthreads();
    }
  }
  if (have && count > 0) w.flush(L);

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
  }
}

}  // namespace xr::kern::exact
