// Column reductions (SegmentKind::Columns): value c is the reduction of in[c + r * stride] over
// the rows r < rows. Device code only; backends/cuda/src/segments/columns.cu launches it. Lanes
// run across columns so that every load of a warp is one run of memory; rows are split into
// bands over blocks, and the block that completes a column tile's ticket combines the bands'
// partials in band order in the same launch (tickets are 0 between launches).
#pragma once

#include <cstdint>

#include "common.cuh"
#include "grid.cuh"  // Pack, load_pack
#include "segments.cuh"  // segment_value, load_ro

namespace xr::kern::seg {

// W consecutive elements: one 16-byte pack (W = 16 / sizeof(In), p aligned) or one element.
template <class In, unsigned W> __device__ __forceinline__ void load_unit(const In* p, In (&v)[W]) {
  if constexpr (W == 1) {
    v[0] = load_ro(p);
  } else {
    static_assert(W == Pack<In>::size);
    const Pack<In> q = load_pack<Deal::BlockSegments>(reinterpret_cast<const Pack<In>*>(p));
#pragma unroll
    for (unsigned k = 0; k < W; ++k) v[k] = q.v[k];
  }
}

// After the last block of a column set is known: partial b of column c at partials[b * cols + c].
// Warp w combines bands [w * B / warps, (w + 1) * B / warps) of 32 columns at a time, 8 loads in
// flight per lane; the warps' results meet in shared memory in warp order, so the bands combine
// in order. `red` holds warps * 32 values.
template <xr::Op O, class Acc>
__device__ __forceinline__ void combine_bands(const Acc* partials, u64 bands, u64 cols, u64 c0, u64 width, u64 rows,
                                              Acc* out, Acc* red) {
  constexpr unsigned kInFlight = 8;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const u64 b0 = bands * warp / warps, b1 = bands * (warp + 1) / warps;
  for (u64 g = 0; g < width; g += 32) {
    const u64 c = c0 + g + lane;
    Acc v = ident<O, Acc>();
    if (g + lane < width) {
      u64 b = b0;
      for (; b + kInFlight <= b1; b += kInFlight) {
        Acc r[kInFlight];
#pragma unroll
        for (unsigned k = 0; k < kInFlight; ++k) r[k] = load_cg(partials + (b + k) * cols + c);
#pragma unroll
        for (unsigned k = 0; k < kInFlight; ++k) v = apply<O>(v, r[k]);
      }
      for (; b < b1; ++b) v = apply<O>(v, load_cg(partials + b * cols + c));
    }
    red[warp * 32 + lane] = v;
    __syncthreads();
    if (threadIdx.x < 32 && g + threadIdx.x < width) {
      Acc t = ident<O, Acc>();
      for (unsigned w = 0; w < warps; ++w) t = apply<O>(t, red[w * 32 + threadIdx.x]);
      out[c0 + g + threadIdx.x] = segment_value<O>(t, rows);
    }
    __syncthreads();
  }
}

// Wide arrays: block b covers column tile b % tiles (32 * W columns: W per lane) and rows band
// b / tiles (band_rows rows); its warps take the band's rows in turn, U rows in flight per
// thread. Dynamic shared memory: blockDim.x * W values of Acc. With W > 1, cols and stride are
// multiples of W and `in` is 16-byte aligned.
template <class In, class Acc, xr::Op O, unsigned W, unsigned U>
__global__ void __launch_bounds__(1024)
    k_columns_wide(const In* __restrict__ in, u64 cols, u64 rows, u64 stride, u64 tiles, u64 band_rows,
                   Acc* __restrict__ out, Acc* __restrict__ partials, unsigned* __restrict__ tickets) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  constexpr unsigned kWidth = 32 * W;
  const u64 tile = blockIdx.x % tiles, band = blockIdx.x / tiles, bands = gridDim.x / tiles;
  const u64 c0 = tile * kWidth, col = c0 + u64(lane) * W;
  const u64 r0 = band * band_rows, r1 = r0 + band_rows < rows ? r0 + band_rows : rows;
  Acc acc[W];
#pragma unroll
  for (unsigned j = 0; j < W; ++j) acc[j] = ident<O, Acc>();
  if (col < cols) {
    const In* p = in + col;
    u64 r = r0 + warp;
    for (; r + u64(U - 1) * warps < r1; r += u64(U) * warps) {
      In v[U][W];
#pragma unroll
      for (unsigned u = 0; u < U; ++u) load_unit<In, W>(p + (r + u64(u) * warps) * stride, v[u]);
#pragma unroll
      for (unsigned u = 0; u < U; ++u)
#pragma unroll
        for (unsigned j = 0; j < W; ++j) acc[j] = apply<O>(acc[j], static_cast<Acc>(v[u][j]));
    }
    for (; r < r1; r += warps) {
      In v[W];
      load_unit<In, W>(p + r * stride, v);
#pragma unroll
      for (unsigned j = 0; j < W; ++j) acc[j] = apply<O>(acc[j], static_cast<Acc>(v[j]));
    }
  }
  // The warps' values of each column, combined in warp order.
  Acc* red = dyn_shared<Acc>();
#pragma unroll
  for (unsigned j = 0; j < W; ++j) red[warp * kWidth + lane * W + j] = acc[j];
  __syncthreads();
  for (unsigned t = threadIdx.x; t < kWidth; t += blockDim.x) {
    Acc v = ident<O, Acc>();
    for (unsigned w = 0; w < warps; ++w) v = apply<O>(v, red[w * kWidth + t]);
    if (c0 + t < cols) {
      if (bands == 1) out[c0 + t] = segment_value<O>(v, rows);
      else partials[band * cols + c0 + t] = v;
    }
  }
  if (bands == 1) return;
  __threadfence();
  __syncthreads();
  __shared__ bool last;
  if (threadIdx.x == 0) last = atomicAdd(tickets + tile, 1u) == bands - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  const u64 width = cols - c0 < kWidth ? cols - c0 : kWidth;
  combine_bands<O>(partials, bands, cols, c0, width, rows, out, red);
  if (threadIdx.x == 0) tickets[tile] = 0;
}

// Narrow arrays (a row of at most 32 units of W elements, stride = units * W): the flat array
// in units, each warp's lanes taking consecutive units, so that a load of a warp covers 32 / units
// whole rows; every step of a lane is a whole number of rows, so each lane keeps one column set
// (lane % units). Block b takes rows band b (band_rows rows); lanes of one column set combine by
// shuffles (units a power of two) or in shared memory, then the warps in order, and the block
// that completes the single ticket combines the bands' values in band order. Dynamic shared
// memory: blockDim.x * W values of Acc. With W > 1, cols is a multiple of W and `in` 16-byte
// aligned.
template <class In, class Acc, xr::Op O, unsigned W, unsigned U>
__global__ void __launch_bounds__(1024)
    k_columns_narrow(const In* __restrict__ in, u64 cols, u64 rows, u64 stride, u64 band_rows, Acc* __restrict__ out,
                     Acc* __restrict__ partials, unsigned* __restrict__ ticket) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const unsigned units = static_cast<unsigned>(stride / W);
  const unsigned used = 32u / units * units;  // lanes of a warp that hold a column set
  const unsigned set = lane % units;
  const bool pow2 = (units & (units - 1)) == 0;
  const u64 r0 = u64(blockIdx.x) * band_rows, r1 = r0 + band_rows < rows ? r0 + band_rows : rows;
  const u64 end = r1 * units, step = u64(used) * warps;
  Acc acc[W];
#pragma unroll
  for (unsigned j = 0; j < W; ++j) acc[j] = ident<O, Acc>();
  if (lane < used && set * W < cols) {
    u64 i = r0 * units + u64(warp) * used + lane;
    for (; i + u64(U - 1) * step < end; i += u64(U) * step) {
      In v[U][W];
#pragma unroll
      for (unsigned u = 0; u < U; ++u) load_unit<In, W>(in + (i + u * step) * W, v[u]);
#pragma unroll
      for (unsigned u = 0; u < U; ++u)
#pragma unroll
        for (unsigned j = 0; j < W; ++j) acc[j] = apply<O>(acc[j], static_cast<Acc>(v[u][j]));
    }
    for (; i < end; i += step) {
      In v[W];
      load_unit<In, W>(in + i * W, v);
#pragma unroll
      for (unsigned j = 0; j < W; ++j) acc[j] = apply<O>(acc[j], static_cast<Acc>(v[j]));
    }
  }
  // Lanes set, set + units, ... of each warp: a shuffle tree where units divides 32, else the
  // shared memory below takes each of them in turn.
  unsigned per_set = used / units;
  if (pow2) {
    for (unsigned d = 16; d >= units; d >>= 1)
#pragma unroll
      for (unsigned j = 0; j < W; ++j) acc[j] = apply<O>(acc[j], shfl_down(acc[j], d));
    per_set = 1;
  }
  Acc* red = dyn_shared<Acc>();
#pragma unroll
  for (unsigned j = 0; j < W; ++j) red[warp * 32 * W + lane * W + j] = acc[j];
  __syncthreads();
  for (u64 c = threadIdx.x; c < cols; c += blockDim.x) {
    const unsigned s = static_cast<unsigned>(c / W), j = static_cast<unsigned>(c % W);
    Acc v = ident<O, Acc>();
    for (unsigned w = 0; w < warps; ++w)
      for (unsigned m = 0; m < per_set; ++m) v = apply<O>(v, red[w * 32 * W + (s + m * units) * W + j]);
    if (gridDim.x == 1) out[c] = segment_value<O>(v, rows);
    else partials[u64(blockIdx.x) * cols + c] = v;
  }
  if (gridDim.x == 1) return;
  __threadfence();
  __syncthreads();
  __shared__ bool last;
  if (threadIdx.x == 0) last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  combine_bands<O>(partials, gridDim.x, cols, 0, cols, rows, out, red);
  if (threadIdx.x == 0) *ticket = 0;
}

}  // namespace xr::kern::seg
