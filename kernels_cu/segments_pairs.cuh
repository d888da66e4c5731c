// The pair ops (argmin, argmax, minmax) of segmented reductions (xreduce/segments.hpp): one record
// per row, column or CSR segment, with pairs.cuh's records and semantics (feed, the PairFn of
// core): ties to the smallest index, the first NaN with its index, f16 and bf16 compared in f32 and
// stored as the input type. Each record is stored as core's pair_record_t over the input type
// (Located<T>, Bounds<T>), its index WITHIN the segment, -1 for an empty segment (whose value is
// the identity). Device code only; backends/cuda/src/segments/pairs.cu launches it.
#pragma once

#include <cstdint>

#include "pairs.cuh"
#include "segments.cuh"  // RowsSource, OffsetsSource, load_ro

namespace xr::kern::seg {

// Loads each lane of k_seg_pairs keeps in flight.
constexpr unsigned kPairLoadsInFlight = 4;

// A thread's record stored over the input type: the identity's kNoIndex (no element) as -1.
template <xr::Op O, class In> __device__ __forceinline__ StoredRecord<O, In> stored_record(const ThreadRecord<O, In>& r) {
  StoredRecord<O, In> s = convert<O, In>(r);
  if constexpr (O != xr::Op::MinMax)
    if (s.index == xr::kNoIndex) s.index = -1;
  return s;
}

// k_seg_pairs: a warp per segment of `src` (RowsSource, or OffsetsSource without a list),
// grid-stride over the segments. Lane l feeds elements l, l + 32, ... of its segment in index
// order, kPairLoadsInFlight loads at a time, into a record whose indices count from the segment's
// start; the warp's records meet by shuffles (PairFn compares indices: any order).
// Improves on nothing before it (the fold kernels take no pair ops); costs idle lanes on segments
// shorter than a warp and element loads, not 16-byte packs.
template <class In, xr::Op O, class Source>
__global__ void __launch_bounds__(1024)
    k_seg_pairs(const In* __restrict__ in, Source src, StoredRecord<O, In>* __restrict__ out) {
  using C = xr::compute_t<In>;
  using R = ThreadRecord<O, In>;
  constexpr unsigned U = kPairLoadsInFlight;
  const unsigned lane = threadIdx.x & 31u;
  const u64 warps = (u64(gridDim.x) * blockDim.x) >> 5;
  const u64 segments = src.size();
  // k is the same for every lane of a warp, so the shuffles below see whole warps.
  for (u64 k = (u64(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; k < segments; k += warps) {
    const u64 s = src.segment(k);
    const Range r = src.range(s);
    R acc = ident<O, R>();
    u64 i = r.begin + lane;
    for (; i + (U - 1) * 32 < r.end; i += U * 32) {
      In v[U];
#pragma unroll
      for (unsigned u = 0; u < U; ++u) v[u] = load_ro(in + i + u * 32);
#pragma unroll
      for (unsigned u = 0; u < U; ++u) feed<O>(acc, static_cast<C>(v[u]), static_cast<std::int64_t>(i + u * 32 - r.begin));
    }
    for (; i < r.end; i += 32) feed<O>(acc, static_cast<C>(load_ro(in + i)), static_cast<std::int64_t>(i - r.begin));
    acc = warp_reduce<O>(acc);
    if (lane == 0) out[s] = stored_record<O, In>(acc);
  }
}

// k_seg_pair_columns: column c of a C-order matrix is in[r * stride + c] for r < rows, its index
// r. A thread per column walks the rows in order (neighbouring threads read neighbouring
// elements: coalesced), grid-stride over the columns.
// Improves on k_seg_pairs for columns: reads along rows; costs a whole column per thread, so few
// columns leave the device idle.
template <class In, xr::Op O>
__global__ void __launch_bounds__(1024)
    k_seg_pair_columns(const In* __restrict__ in, u64 cols, u64 rows, u64 stride, StoredRecord<O, In>* __restrict__ out) {
  using C = xr::compute_t<In>;
  using R = ThreadRecord<O, In>;
  for (u64 c = u64(blockIdx.x) * blockDim.x + threadIdx.x; c < cols; c += u64(gridDim.x) * blockDim.x) {
    R acc = ident<O, R>();
    for (u64 r = 0; r < rows; ++r) feed<O>(acc, static_cast<C>(load_ro(in + r * stride + c)), static_cast<std::int64_t>(r));
    out[c] = stored_record<O, In>(acc);
  }
}

}  // namespace xr::kern::seg
