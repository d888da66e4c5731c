// The pair ops on the device: argmin and argmax (a value and the index of its first
// occurrence) and minmax. A thread keeps a record over the computed type (float for f16 and
// bf16); records in memory are core's pair_record_t over the input type, the layout of a
// result cell. Device code only: launching lives in backends/cuda/src/rungs_pairs.cu.
#pragma once

#include "common.cuh"
#include "grid.cuh"

namespace xr::kern {

template <xr::Op O, class In> using ThreadRecord = xr::pair_record_t<O, xr::compute_t<In>>;
template <xr::Op O, class In> using StoredRecord = xr::pair_record_t<O, In>;

// Element v at index i, found after every element the record has seen: argmin and argmax take
// it only when strictly beyond the kept value or the first NaN (replaces), so ties keep the
// earlier index without comparing indices.
template <xr::Op O, class C> __device__ __forceinline__ void feed(xr::pair_record_t<O, C>& r, C v, std::int64_t i) {
  if constexpr (O == xr::Op::MinMax) {
    r.min = xr::OpFn<xr::Op::Min>::apply(r.min, v);
    r.max = xr::OpFn<xr::Op::Max>::apply(r.max, v);
  } else {
    const bool take = r.index == xr::kNoIndex || xr::replaces<xr::PairFn<O>::fold>(r.value, v);
    r.value = take ? v : r.value;
    r.index = take ? i : r.index;
  }
}

// A record over another element type (f16 <-> float converts exactly both ways here).
template <xr::Op O, class To, class Record>
__device__ __forceinline__ xr::pair_record_t<O, To> convert(const Record& r) {
  if constexpr (O == xr::Op::MinMax) return {static_cast<To>(r.min), static_cast<To>(r.max)};
  else return {static_cast<To>(r.value), r.index};
}

// A pack's elements after every element the record has seen: argmin and argmax find the pack's
// first best element and its position in 32 bits first, then fold that one into the record
// (one 64-bit index select per pack, not per element); minmax feeds each element.
template <xr::Op O, class In, class R>
__device__ __forceinline__ void feed_pack(R& r, const Pack<In>& v, std::int64_t first_index) {
  using C = xr::compute_t<In>;
  constexpr unsigned V = Pack<In>::size;
  if constexpr (O == xr::Op::MinMax) {
#pragma unroll
    for (unsigned j = 0; j < V; ++j) feed<O>(r, static_cast<C>(v.v[j]), 0);
  } else {
    C best = static_cast<C>(v.v[0]);
    unsigned at = 0;
#pragma unroll
    for (unsigned j = 1; j < V; ++j) {
      const C x = static_cast<C>(v.v[j]);
      const bool take = xr::replaces<xr::PairFn<O>::fold>(best, x);
      best = take ? x : best;
      at = take ? j : at;
    }
    feed<O>(r, best, first_index + at);
  }
}

// A stored record another block of this launch wrote, read past L1 in 32-bit words.
template <class Record> __device__ __forceinline__ Record load_record_cg(const Record* p) {
  static_assert(sizeof(Record) % 2 == 0);
  Record r;
  if constexpr (sizeof(Record) % 4 == 0) {
    unsigned w[sizeof(Record) / 4];
#pragma unroll
    for (unsigned k = 0; k < sizeof(Record) / 4; ++k) w[k] = __ldcg(reinterpret_cast<const unsigned*>(p) + k);
    __builtin_memcpy(&r, w, sizeof r);
  } else {
    const unsigned short w = __ldcg(reinterpret_cast<const unsigned short*>(p));
    __builtin_memcpy(&r, &w, sizeof r);
  }
  return r;
}

// Packs [p, end) of one thread, `step` apart, in index order (U loads in flight); pack q starts
// at index base + q * V.
template <xr::Op O, class In, unsigned U, Deal D, class R>
__device__ __forceinline__ void feed_packs(R& r, const Pack<In>* packs, u64 p, u64 end, u64 step, std::int64_t base) {
  constexpr unsigned V = Pack<In>::size;
  for (; p + (U - 1) * step < end; p += U * step) {
    Pack<In> v[U];
#pragma unroll
    for (unsigned u = 0; u < U; ++u) v[u] = load_pack<D>(packs + p + u * step);
#pragma unroll
    for (unsigned u = 0; u < U; ++u) feed_pack<O, In>(r, v[u], base + static_cast<std::int64_t>((p + u * step) * V));
  }
  for (; p < end; p += step) feed_pack<O, In>(r, load_pack<D>(packs + p), base + static_cast<std::int64_t>(p * V));
}

// One launch: blocks draw tiles of `tile_packs` 128-bit packs from `tile_counter` (as
// k_vec_tiles does: SMs that stream faster take more tiles) and each thread feeds a tile's
// packs in index order, U loads in flight, streaming past L1; a block's draws only grow, so
// every thread sees its packs in index order. The head and tail elements go apart. The block
// combines its records by PairFn (any order); one stored record per block in `partials`; the
// block that draws the last ticket of `counter` combines them into *out and resets both
// counters (0 between launches). Element 0 is index `first` of the whole input.
template <class In, xr::Op O, unsigned U>
__global__ void __launch_bounds__(1024)
    k_pair(const In* __restrict__ in, u64 n, std::int64_t first, u64 tile_packs, StoredRecord<O, In>* __restrict__ partials,
           unsigned* __restrict__ counter, unsigned* __restrict__ tile_counter, StoredRecord<O, In>* __restrict__ out) {
  using C = xr::compute_t<In>;
  using R = ThreadRecord<O, In>;
  const PackSplit<In> split(in, n);
  const u64 nvec = split.nvec;
  const u64 tid = u64(blockIdx.x) * blockDim.x + threadIdx.x;
  R edge = ident<O, R>();
  if (tid < split.head) {
    feed<O>(edge, static_cast<C>(in[tid]), first + static_cast<std::int64_t>(tid));
  } else if (tid - split.head < n - split.tail_begin) {
    const u64 i = split.tail_begin + (tid - split.head);
    feed<O>(edge, static_cast<C>(in[i]), first + static_cast<std::int64_t>(i));
  }
  R r = ident<O, R>();
  const Pack<In>* packs = reinterpret_cast<const Pack<In>*>(in + split.head);
  const std::int64_t base = first + static_cast<std::int64_t>(split.head);
  const u64 tiles = (nvec + tile_packs - 1) / tile_packs;
  // Draws alternate between two cells, as in k_vec_tiles.
  __shared__ unsigned drawn[2];
  if (threadIdx.x == 0) drawn[0] = atomicAdd(tile_counter, 1u);
  __syncthreads();
  for (unsigned round = 0;; ++round) {
    const u64 t = drawn[round & 1];
    if (t >= tiles) break;
    if (threadIdx.x == 0) drawn[(round + 1) & 1] = atomicAdd(tile_counter, 1u);
    const u64 begin = t * tile_packs;
    feed_packs<O, In, U, Deal::DynamicTiles>(r, packs, begin + threadIdx.x, min(nvec, begin + tile_packs), blockDim.x,
                                             base);
    __syncthreads();
  }
  r = block_reduce<O>(apply<O>(r, edge));
  if (gridDim.x == 1) {
    if (threadIdx.x == 0) {
      *out = convert<O, In>(r);
      *tile_counter = 0;
    }
    return;
  }
  __shared__ bool is_last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = convert<O, In>(r);
    __threadfence();
    is_last = atomicAdd(counter, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!is_last) return;
  __threadfence();
  r = ident<O, R>();
  for (u64 j = threadIdx.x; j < gridDim.x; j += blockDim.x)
    r = apply<O>(r, convert<O, C>(load_record_cg(partials + j)));
  r = block_reduce<O>(r);
  if (threadIdx.x == 0) {
    *out = convert<O, In>(r);
    *counter = 0;
    *tile_counter = 0;
  }
}

}  // namespace xr::kern
