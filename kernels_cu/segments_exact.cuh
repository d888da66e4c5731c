// Exact float sums per segment go through pieces (core/src/segment_device.hpp): piece p is
// data[first + k * step] for k < count, and its state is the window of ExactSum limbs its type can
// reach plus the flags, exactly as exact_piece_state adds it up on the host. f16 and bf16 terms
// are added as the f32 values they are exactly, in the f32 window. Device code only;
// backends/cuda/src/segments_exact.cu launches it.
//
// One warp per piece: lanes take elements lane, lane + 32, ... and add each element's 32-bit
// digits into the warp's limbs in shared memory. A limb is a plain integer sum of at most 2^16
// digits below 2^32 (no carries, no rounding), so the order of the additions does not change it:
// the words are those of the host definition, bit for bit.
#pragma once

#include <cstdint>

#include "short_exact.hpp"
#include "xreduce/half.hpp"

namespace xr::kern::seg {

// The layout of ExactPiece (three int64: first, count, step).
struct PieceRef {
  long long first, count, step;
};

constexpr unsigned kExactPieceWarps = 4;  // warps per block of k_exact_pieces
constexpr unsigned kFlagNaN = 1u, kFlagPosInf = 2u, kFlagNegInf = 4u, kFlagAny = 8u, kFlagNotNegZero = 16u;

// The window of limbs a type reaches (exact_window_first, exact_window_limbs) and its bit layout:
// of f32 and f64, the types terms are added in.
template <class T> struct PieceTraits;
template <> struct PieceTraits<float> {
  using Bits = unsigned;
  static constexpr int first = 28, limbs = 10, frac = 23, bias = 150;
  static constexpr Bits exp_max = 0xffu;
};
template <> struct PieceTraits<double> {
  using Bits = unsigned long long;
  static constexpr int first = 0, limbs = 68, frac = 52, bias = 1075;
  static constexpr Bits exp_max = 0x7ffu;
};

template <class T>
__global__ void __launch_bounds__(32 * kExactPieceWarps)
    k_exact_pieces(const T* __restrict__ data, const PieceRef* __restrict__ pieces, unsigned long long count,
                   long long* __restrict__ words) {
  using W = xr::compute_t<T>;  // the type a term is added as: T, or f32 for f16 and bf16
  using Tr = PieceTraits<W>;
  using Bits = typename Tr::Bits;
  constexpr int kBits = 8 * sizeof(W);
  constexpr int kWords = Tr::limbs + 1;
  __shared__ unsigned long long limb[kExactPieceWarps][Tr::limbs];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const unsigned long long p = static_cast<unsigned long long>(blockIdx.x) * kExactPieceWarps + warp;
  if (p >= count) return;  // whole warps leave: the rest use only their own limbs
  unsigned long long* L = limb[warp];
  for (int i = static_cast<int>(lane); i < Tr::limbs; i += 32) L[i] = 0;
  __syncwarp();
  const PieceRef piece = pieces[p];
  unsigned flags = 0;
  for (long long k = lane; k < piece.count; k += 32) {
    const W x = static_cast<W>(data[piece.first + k * piece.step]);
    Bits bits;
    __builtin_memcpy(&bits, &x, sizeof bits);
    const bool negative = bits >> (kBits - 1);
    const Bits ex = (bits >> Tr::frac) & Tr::exp_max, fraction = bits & ((Bits{1} << Tr::frac) - 1);
    if (bits != (Bits{1} << (kBits - 1))) flags |= kFlagNotNegZero;
    if (ex == Tr::exp_max) {
      flags |= fraction ? kFlagNaN : negative ? kFlagNegInf : kFlagPosInf;
      continue;
    }
    const unsigned long long m = static_cast<unsigned long long>(fraction | (Bits{ex != 0} << Tr::frac));
    // x = m * 2^(max(ex, 1) - bias): m's bit 0 lies `pos` bits above 2^-1074.
    const int pos = static_cast<int>(ex ? ex : 1) - Tr::bias + 1074;
    const int shift = pos % 32, at = pos / 32 - Tr::first;
    const unsigned long long lo = m << shift, hi = shift ? m >> (64 - shift) : 0ull;
    const unsigned long long digit[3] = {lo & 0xffffffffull, lo >> 32, hi};
#pragma unroll
    for (int d = 0; d < (sizeof(W) == 4 ? 2 : 3); ++d)
      if (digit[d]) atomicAdd(L + at + d, negative ? 0ull - digit[d] : digit[d]);
  }
#if __CUDA_ARCH__ >= 800
  flags = __reduce_or_sync(0xffffffffu, flags);
#else
  for (unsigned d = 16; d > 0; d >>= 1) flags |= __shfl_xor_sync(0xffffffffu, flags, d);
#endif
  __syncwarp();
  long long* out = words + p * kWords;
  for (int i = static_cast<int>(lane); i < Tr::limbs; i += 32) out[i] = static_cast<long long>(L[i]);
  if (lane == 0) out[Tr::limbs] = static_cast<long long>(flags | (piece.count > 0 ? kFlagAny : 0u));
}

// Exact sums of short segments (at most kShortExactTerms terms), a thread a segment
// (core/src/short_exact.hpp): segment k's terms start at k * first_step, term_step apart. Columns
// (first_step 1) let a warp read 32 neighbouring values a row; rows (term_step 1) are read by
// each thread along its own row. A segment whose terms span too many binades is counted in
// *missed_count and listed in missed (its first `capacity` entries), its value left to the pieces
// path.
template <class T>
__global__ void k_exact_short_segments(const T* __restrict__ data, unsigned long long count, unsigned long long length,
                                       unsigned long long first_step, unsigned long long term_step,
                                       xr::compute_t<T>* __restrict__ out, unsigned long long* __restrict__ missed_count,
                                       unsigned long long* __restrict__ missed, unsigned long long capacity) {
  using C = xr::compute_t<T>;
  for (unsigned long long k = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; k < count;
       k += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
    const T* segment = data + k * first_step;
    C value;
    if (xr::detail::short_exact_sum([&](unsigned long long r) { return static_cast<C>(segment[r * term_step]); },
                                    length, value)) {
      out[k] = value;
    } else {
      const unsigned long long slot = atomicAdd(missed_count, 1ull);
      if (slot < capacity) missed[slot] = k;
    }
  }
}

}  // namespace xr::kern::seg
