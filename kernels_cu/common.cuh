// Device helpers shared by every rung: the op (core's OpFn, so device and host agree bit for
// bit), identities, warp and block reductions, cache-global loads, and atomic combines.
// Device code only: launching lives in backends/cuda.
#pragma once

#include <cfloat>

#include <cstdint>
#include <type_traits>

#include "xreduce/semantics.hpp"

namespace xr::kern {

using u64 = std::uint64_t;

// The identity of O in type T (core's definition; constexpr, so usable on the device with
// --expt-relaxed-constexpr). Core's xr::identity(op) and xr::empty_value(op) take the op at run
// time and look it up in core's op table (fold_of), which is host memory: device code calling
// them reads a host address. These name the fold at compile time (OpFn<fold_of(O)>) instead.
// For a pair op, T is its record (xr::Located, xr::Bounds) and the identity PairFn's.
template <xr::Op O, class T> __device__ __forceinline__ T ident() {
  if constexpr (xr::is_pair(O)) return xr::PairFn<O>::template identity<typename T::element_type>();
  else return xr::OpFn<xr::fold_of(O)>::template identity<T>();
}

// The value of a reduction of no elements, as core's empty_value: the identity, but +0 for a
// float sum (whose identity is -0).
template <xr::Op O, class T> __device__ __forceinline__ T empty_value() {
  if constexpr (xr::is_float_v<T> && xr::fold_of(O) == xr::Op::Sum) return T(0.0f);
  else return ident<O, T>();
}

template <xr::Op O, class T> __device__ __forceinline__ T apply(T a, T b) {
  if constexpr (xr::is_pair(O)) return xr::PairFn<O>::apply(a, b);
  else return xr::OpFn<O>::apply(a, b);
}

// Smallest power of two >= x (x >= 1, x <= 2^31).
__device__ __forceinline__ unsigned pow2_ceil(unsigned x) {
  return x <= 1 ? 1u : 1u << (32 - __clz(x - 1));
}

// Dynamic shared memory viewed as T (one extern array for every instantiation).
template <class T> __device__ __forceinline__ T* dyn_shared() {
  extern __shared__ __align__(16) unsigned char xr_dyn_smem[];
  return reinterpret_cast<T*>(xr_dyn_smem);
}

// Shuffle of any trivially copyable type, in 32-bit words (what the hardware moves; a 64-bit
// __shfl_down_sync is two of them too). Narrower types travel in one word.
template <class T> __device__ __forceinline__ T shfl_down(T v, unsigned delta) {
  constexpr unsigned kWords = (sizeof(T) + 3) / 4;
  unsigned w[kWords] = {};
  __builtin_memcpy(w, &v, sizeof(T));
#pragma unroll
  for (unsigned i = 0; i < kWords; ++i) w[i] = __shfl_down_sync(0xffffffffu, w[i], delta);
  __builtin_memcpy(&v, w, sizeof(T));
  return v;
}

// Warp reduction by shuffles: lane 0 ends with the combination of all 32 lanes.
template <xr::Op O, class T> __device__ __forceinline__ T warp_reduce(T v) {
#pragma unroll
  for (unsigned d = 16; d > 0; d >>= 1) v = apply<O>(v, shfl_down(v, d));
  return v;
}

// Block reduction: shuffles inside each warp, the warp results through shared memory, the
// last warp by shuffles. blockDim.x must be a multiple of 32 (<= 1024). Thread 0 gets the
// result; every thread of the block must call it.
template <xr::Op O, class T> __device__ __forceinline__ T block_reduce(T v) {
  __shared__ T warp_part[32];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const unsigned nwarps = blockDim.x >> 5;
  v = warp_reduce<O>(v);
  if (nwarps == 1) return v;
  if (lane == 0) warp_part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < nwarps ? warp_part[lane] : ident<O, T>();
    v = warp_reduce<O>(v);
  }
  __syncthreads();  // warp_part may be reused by a second call in the same kernel
  return v;
}

// Load bypassing L1 (partials written by other blocks of the same grid).
template <class T> __device__ __forceinline__ T load_cg(const T* p) {
  if constexpr (xr::is_half_v<T>) {
    return T::from_bits(__ldcg(reinterpret_cast<const unsigned short*>(p)));
  } else if constexpr (std::is_integral_v<T> && sizeof(T) == 8) {
    return static_cast<T>(__ldcg(reinterpret_cast<const long long*>(p)));
  } else {
    return __ldcg(p);
  }
}

template <class To, class From> __device__ __forceinline__ To bits_as(From v) {
  static_assert(sizeof(To) == sizeof(From));
  To r;
  __builtin_memcpy(&r, &v, sizeof(To));
  return r;
}

// *addr = O(*addr, v) atomically, in global or shared memory. Native atomics where the
// hardware has them: add for every type of 4 or 8 bytes (integers wrap; f64 needs sm_60),
// min/max for integers of 4 or 8 bytes. Products, float min/max and types of 1 or 2 bytes have
// no native atomic: a compare-and-swap loop on the bit pattern (so NaN results compare equal
// to themselves and the loop ends).
// x, or a zero of its sign where x is subnormal: what the f32 atomicAdd of global memory does to
// its operands and its result.
__device__ __forceinline__ float flush_subnormal(float x) { return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x; }

// *addr = apply<O>(*addr, v) by a compare-and-swap loop on the bits, in the arithmetic of apply.
// A type narrower than 4 bytes swaps the aligned word that holds it (little-endian: its bytes
// start at bit 8 * (addr % 4)), leaving the word's other bytes as they are.
template <xr::Op O, class T> __device__ __forceinline__ void cas_combine(T* addr, T v) {
  if constexpr (sizeof(T) < 4) {
    const auto at = reinterpret_cast<std::uintptr_t>(addr);
    unsigned* word = reinterpret_cast<unsigned*>(at & ~std::uintptr_t{3});
    const unsigned shift = 8u * static_cast<unsigned>(at & 3u), mask = ((1u << (8 * sizeof(T))) - 1u) << shift;
    unsigned old = *reinterpret_cast<volatile unsigned*>(word);
    for (;;) {
      T mine;
      const unsigned field = (old & mask) >> shift;
      __builtin_memcpy(&mine, &field, sizeof(T));
      const T combined = apply<O>(mine, v);
      unsigned bits = 0;
      __builtin_memcpy(&bits, &combined, sizeof(T));
      const unsigned next = (old & ~mask) | (bits << shift);
      if (next == old) return;
      const unsigned seen = atomicCAS(word, old, next);
      if (seen == old) return;
      old = seen;
    }
  } else {
    using Bits = std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;
    Bits* a = reinterpret_cast<Bits*>(addr);
    Bits old = *reinterpret_cast<volatile Bits*>(a);
    for (;;) {
      const Bits next = bits_as<Bits>(apply<O>(bits_as<T>(old), v));
      if (next == old) return;
      const Bits seen = atomicCAS(a, old, next);
      if (seen == old) return;
      old = seen;
    }
  }
}

template <xr::Op O, class T> __device__ __forceinline__ void atomic_combine(T* addr, T v) {
  if constexpr (sizeof(T) < 4) {
    cas_combine<O>(addr, v);
  } else if constexpr (O == xr::Op::Sum && std::is_integral_v<T> && sizeof(T) == 4) {
    atomicAdd(reinterpret_cast<int*>(addr), static_cast<int>(v));
  } else if constexpr (O == xr::Op::Sum && std::is_integral_v<T>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(addr), static_cast<unsigned long long>(v));
  } else if constexpr (O == xr::Op::Sum && std::is_same_v<T, float>) {
    // The f32 atomicAdd flushes subnormal operands and results to zero in global memory (not in
    // shared memory): reduce_cli check found f32 sums of subnormals wrong on an H100. The
    // hardware add stays (a compare-and-swap loop per element timed out on one address at
    // 2^24 elements); where its flush changed the sum, the difference is added back by the loop.
    const float old = atomicAdd(addr, v);
    if (!__isGlobal(addr)) return;
    const float ieee = old + v;
    const float flushed = flush_subnormal(flush_subnormal(old) + flush_subnormal(v));
    if (__float_as_uint(ieee) != __float_as_uint(flushed)) cas_combine<O>(addr, ieee - flushed);
  } else if constexpr (O == xr::Op::Sum) {
    atomicAdd(addr, v);
  } else if constexpr ((O == xr::Op::Min || O == xr::Op::Max) && std::is_integral_v<T>) {
    // The hardware's min and max compare as the type does: signed or unsigned, 4 or 8 bytes.
    using Native = std::conditional_t<sizeof(T) == 4, std::conditional_t<std::is_signed_v<T>, int, unsigned>,
                                      std::conditional_t<std::is_signed_v<T>, long long, unsigned long long>>;
    if constexpr (O == xr::Op::Min) atomicMin(reinterpret_cast<Native*>(addr), static_cast<Native>(v));
    else atomicMax(reinterpret_cast<Native*>(addr), static_cast<Native>(v));
  } else {
    cas_combine<O>(addr, v);
  }
}

// Writes one value (the identity before an atomic rung).
template <class T> __global__ void k_fill(T* out, T value) { *out = value; }

}  // namespace xr::kern
