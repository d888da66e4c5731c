// Segmented reductions (xreduce/segments.hpp): one value per segment of the input, a segment being
// a row of a 2-D array or a CSR run cut by offsets. Device code only; backends/cuda/src/
// segment_families.cu and segments/subwarp.cu launch it. Every kernel combines with core's OpFn in
// the accumulator type (f16 and bf16: f32 for sums and products, the input type, compared in f32,
// for min and max), writes empty_value for a segment with no elements, and clamps offsets read
// from device memory to [0, n] (begin to [0, n], end to [begin, n]), so that offsets which
// decrease or run past the input never make a kernel read outside it. A mapped op runs its fold
// over elements of xr::Mapped<T, M> (In), each mapped once as it converts to Acc; partials and
// carried values are of Acc and fold as they are.
#pragma once

#include <cstdint>

#include "common.cuh"
#include "grid.cuh"  // Pack, load_pack, reduce_packs, accumulate_packs, PackSplit

namespace xr::kern::seg {

using i64 = std::int64_t;

struct Range {
  u64 begin, end;
};

// A segment's value: its reduction, or the op's empty value when it has no elements (float sums
// start from -0 so that a sum of -0 terms stays -0, but the empty sum is +0).
template <xr::Op O, class Acc> __device__ __forceinline__ Acc segment_value(Acc acc, u64 length) {
  return length ? acc : empty_value<O, Acc>();
}

// One element through the read-only data cache (__ldg); f16 and bf16 as their 16 bits, an
// element of xr::Mapped<T, M> as its raw T (mapped where it converts to the accumulator).
template <class T> __device__ __forceinline__ T load_ro(const T* p) {
  if constexpr (xr::is_mapped_v<T>) return T{load_ro(&p->raw)};
  else if constexpr (xr::is_half_v<T>) return T::from_bits(__ldg(reinterpret_cast<const unsigned short*>(p)));
  else return __ldg(p);
}

// Rows: segment s is [s * stride, s * stride + length).
struct RowsSource {
  u64 count, length, stride;
  __device__ __forceinline__ u64 size() const { return count; }
  __device__ __forceinline__ u64 segment(u64 k) const { return k; }
  __device__ __forceinline__ Range range(u64 s) const { return {s * stride, s * stride + length}; }
};

// A bin's counter holds two numbers, so that one atomic reserves both: its entries above bit
// kEntryShift and, for the long bin, its chunks below.
constexpr unsigned kEntryShift = 39;
constexpr u64 kChunkMask = (u64{1} << kEntryShift) - 1;

__device__ __forceinline__ u64 clamp_offset(i64 v, u64 lo, u64 hi) {
  return v <= static_cast<i64>(lo) ? lo : (static_cast<u64>(v) > hi ? hi : static_cast<u64>(v));
}

// Offsets: segment s is [offsets[s], offsets[s + 1]), clamped. Entry k is segment k, or with a
// list (a bin of k_classify) segment list[k], the number of entries then in device memory.
struct OffsetsSource {
  const i64* offsets;
  u64 n, count;
  const unsigned* list;
  const u64* entries;
  __device__ __forceinline__ u64 size() const { return entries ? *entries >> kEntryShift : count; }
  __device__ __forceinline__ u64 segment(u64 k) const { return list ? list[k] : k; }
  __device__ __forceinline__ Range range(u64 s) const {
    const u64 b = clamp_offset(__ldg(offsets + s), 0, n);
    return {b, clamp_offset(__ldg(offsets + s + 1), b, n)};
  }
};

// One segment as a lane of k_group sees it: the misaligned head and the tail element by element
// (its "edges", head first), the 16-byte packs between.
template <class In> struct SegmentSplit {
  const In* base;
  u64 packs;
  unsigned head, edges;
  __device__ __forceinline__ void set(const In* in, Range r) {
    base = in + r.begin;
    const PackSplit<In> s(base, r.end - r.begin);
    head = static_cast<unsigned>(s.head);
    packs = s.nvec;
    edges = static_cast<unsigned>(r.end - r.begin - s.nvec * Pack<In>::size);
  }
  __device__ __forceinline__ u64 length() const { return edges + packs * Pack<In>::size; }
  __device__ __forceinline__ In edge(unsigned j) const { return load_ro(base + (j < head ? j : j + packs * Pack<In>::size)); }
  __device__ __forceinline__ const Pack<In>* pack(u64 j) const {
    return reinterpret_cast<const Pack<In>*>(base + head) + j;
  }
};

// subwarp and warp: groups of 2^log_group lanes (1..32) each reduce one segment, U segments per
// group in flight. A warp takes U * (32 >> log_group) consecutive entries per round, so for
// contiguous segments each load instruction of the warp covers one run of memory; lanes read
// the edges one element each and the packs 16 bytes each, then the group combines by shuffles
// and its first lane writes (the groups of a warp write consecutive values). Any grid (the
// warps stride over the rounds); blockDim.x a multiple of 32.
template <class In, class Acc, xr::Op O, class Src, unsigned U>
__global__ void __launch_bounds__(512)
    k_group(const In* __restrict__ in, Src src, Acc* __restrict__ out, unsigned log_group) {
  const unsigned lane = threadIdx.x & 31u, group = 1u << log_group, sub = lane & (group - 1u);
  const unsigned groups = 32u >> log_group;
  const u64 round = u64(groups) * U;
  const u64 total = src.size();
  const u64 warps = (u64(gridDim.x) * blockDim.x) >> 5;
  for (u64 w = (u64(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; w * round < total; w += warps) {
    SegmentSplit<In> seg[U];
    u64 id[U];
    Acc acc[U];
    unsigned edges = 0;
    u64 packs = 0;
#pragma unroll
    for (unsigned u = 0; u < U; ++u) {
      const u64 k = w * round + u * groups + (lane >> log_group);
      id[u] = k < total ? src.segment(k) : ~u64{0};
      seg[u].set(in, k < total ? src.range(id[u]) : Range{0, 0});
      acc[u] = ident<O, Acc>();
      edges = max(edges, seg[u].edges);
      packs = packs > seg[u].packs ? packs : seg[u].packs;
    }
    for (unsigned j = sub; j < edges; j += group) {
      In v[U];
#pragma unroll
      for (unsigned u = 0; u < U; ++u) v[u] = j < seg[u].edges ? seg[u].edge(j) : In{};
#pragma unroll
      for (unsigned u = 0; u < U; ++u)
        if (j < seg[u].edges) acc[u] = apply<O>(acc[u], static_cast<Acc>(v[u]));
    }
    for (u64 j = sub; j < packs; j += group) {
      Pack<In> p[U][1];
#pragma unroll
      for (unsigned u = 0; u < U; ++u)
        if (j < seg[u].packs) p[u][0] = load_pack<Deal::BlockSegments>(seg[u].pack(j));
#pragma unroll
      for (unsigned u = 0; u < U; ++u)
        if (j < seg[u].packs) acc[u] = apply<O>(acc[u], reduce_packs<O, Acc>(p[u]));
    }
#pragma unroll
    for (unsigned u = 0; u < U; ++u) {
      for (unsigned d = group >> 1; d > 0; d >>= 1) acc[u] = apply<O>(acc[u], shfl_down(acc[u], d));
      if (sub == 0 && id[u] != ~u64{0}) out[id[u]] = segment_value<O>(acc[u], seg[u].length());
    }
  }
}

// subwarp on dense rows of 2^log_length <= 16 / sizeof(In) elements from a 16-byte aligned
// input: each thread loads U whole packs of the flat array (coalesced across the grid) and writes
// the values of the rows they hold; rows after the last whole pack are reduced one per thread.
template <class In, class Acc, xr::Op O, unsigned U>
__global__ void __launch_bounds__(1024)
    k_packed_rows(const In* __restrict__ in, u64 rows, unsigned log_length, Acc* __restrict__ out) {
  constexpr unsigned V = Pack<In>::size;
  const unsigned length = 1u << log_length, per_pack = V >> log_length;
  const u64 packs = (rows << log_length) / V;
  const Pack<In>* vin = reinterpret_cast<const Pack<In>*>(in);
  const u64 tid = u64(blockIdx.x) * blockDim.x + threadIdx.x, step = u64(gridDim.x) * blockDim.x;
  for (u64 i = tid; i < packs; i += U * step) {
    Pack<In> p[U];
#pragma unroll
    for (unsigned u = 0; u < U; ++u)
      if (i + u * step < packs) p[u] = load_pack<Deal::BlockSegments>(vin + i + u * step);
#pragma unroll
    for (unsigned u = 0; u < U; ++u) {
      if (i + u * step >= packs) continue;
      Acc* dst = out + (i + u * step) * per_pack;
      Acc acc = ident<O, Acc>();
#pragma unroll
      for (unsigned k = 0; k < V; ++k) {
        acc = apply<O>(acc, static_cast<Acc>(p[u].v[k]));
        if (((k + 1) & (length - 1)) == 0) {
          dst[k >> log_length] = acc;
          acc = ident<O, Acc>();
        }
      }
    }
  }
  for (u64 r = packs * per_pack + tid; r < rows; r += step) {
    Acc acc = ident<O, Acc>();
    for (unsigned k = 0; k < length; ++k) acc = apply<O>(acc, static_cast<Acc>(in[(r << log_length) + k]));
    out[r] = acc;
  }
}

// A block's reduction of `length` elements from `base`: U packs of 16 bytes in flight per thread,
// strided by the block, and the misaligned head and tail one element per thread (fewer than 32).
// Thread 0's result after block_reduce is the range's.
template <xr::Op O, class Acc, class In, unsigned U>
__device__ __forceinline__ Acc block_range(const In* base, u64 length) {
  const PackSplit<In> s(base, length);
  const Acc edge = s.template edge<O, Acc>(base, length, threadIdx.x);
  const Pack<In>* vin = reinterpret_cast<const Pack<In>*>(base + s.head);
  return apply<O>(edge, accumulate_packs<O, Acc, In, U, Deal::BlockSegments>(vin, threadIdx.x, s.nvec, blockDim.x));
}

// block: one block per segment, the blocks striding over the entries. blockDim.x a multiple of 32.
template <class In, class Acc, xr::Op O, class Src, unsigned U>
__global__ void __launch_bounds__(1024) k_block(const In* __restrict__ in, Src src, Acc* __restrict__ out) {
  const u64 total = src.size();
  for (u64 k = blockIdx.x; k < total; k += gridDim.x) {
    const u64 s = src.segment(k);
    const Range r = src.range(s);
    const Acc acc = block_reduce<O>(block_range<O, Acc, In, U>(in + r.begin, r.end - r.begin));
    if (threadIdx.x == 0) out[s] = segment_value<O>(acc, r.end - r.begin);
  }
}

// multiblock: chunk `index` of `count` of segment `segment` ([start, start + length)): elements
// [begin, end); its partial goes to partials[first + index], and tickets[ticket] counts the
// segment's chunks that are done.
struct Chunk {
  u64 segment, ticket, first, index, count, begin, end, start, length;
};

// Chunks of `chunk` elements of every row (at least one per row, so empty rows are written too).
struct RowChunks {
  RowsSource rows;
  u64 chunk, per_row;
  __device__ __forceinline__ void prepare() {}
  __device__ __forceinline__ u64 size() const { return rows.count * per_row; }
  __device__ __forceinline__ u64 seek(u64) const { return 0; }
  __device__ __forceinline__ bool fits(const Chunk&) const { return true; }
  __device__ __forceinline__ Chunk at(u64 c, u64&) const {
    const u64 s = c / per_row, k = c - s * per_row;
    const Range r = rows.range(s);
    const u64 b = r.begin + k * chunk, e = b + chunk < r.end ? b + chunk : r.end;
    return {s, s, s * per_row, k, per_row, b, e > b ? e : b, r.begin, rows.length};
  }
};

// The chunks of an entry of the long bin: ceil(length / chunk), at least 1, at most
// kMaxListChunks (longer segments get longer chunks), so that the chunks of a window of
// kBinWindow segments fit the 39 bits of the bin's counter whatever the offsets.
constexpr u64 kMaxListChunks = u64{1} << 14;
__device__ __forceinline__ u64 list_chunks(u64 length, u64 chunk) {
  const u64 k = length > chunk ? (length + chunk - 1) / chunk : 1;
  return k < kMaxListChunks ? k : kMaxListChunks;
}

// The chunks of the long bin of k_classify: entry p owns chunks [chunk_base[p], chunk_base[p] + K)
// with K = list_chunks(length, chunk), entries in the order of their chunks. Partials have room
// for `capacity` chunks: valid offsets never need more (their segments do not overlap), but
// clamped invalid ones may; a segment whose chunks do not fit is reduced whole by one block.
struct ListChunks {
  OffsetsSource segments;
  const u64* chunk_base;
  u64 chunk, capacity;
  u64 entries = 0, chunks = 0;
  __device__ __forceinline__ void prepare() {
    const u64 packed = *segments.entries;
    entries = packed >> kEntryShift;
    chunks = packed & kChunkMask;
  }
  __device__ __forceinline__ u64 size() const { return chunks; }
  // The entry that owns chunk c (c < chunks): the last with chunk_base <= c.
  __device__ __forceinline__ u64 seek(u64 c) const {
    u64 lo = 0, hi = entries;
    while (hi - lo > 1) {
      const u64 mid = lo + (hi - lo) / 2;
      if (load_cg(chunk_base + mid) <= c) lo = mid;
      else hi = mid;
    }
    return lo;
  }
  __device__ __forceinline__ Chunk at(u64 c, u64& p) const {
    while (p + 1 < entries && load_cg(chunk_base + p + 1) <= c) ++p;
    const u64 s = segments.segment(p), first = load_cg(chunk_base + p);
    const Range r = segments.range(s);
    const u64 length = r.end - r.begin, count = list_chunks(length, chunk);
    const u64 span = count * chunk >= length ? chunk : (length + count - 1) / count;
    const u64 k = c - first, b = r.begin + k * span, e = b + span < r.end ? b + span : r.end;
    return {s, p, first, k, count, b, e > b ? e : b, r.begin, length};
  }
  __device__ __forceinline__ bool fits(const Chunk& ch) const { return ch.first + ch.count <= capacity; }
};

// multiblock: each block takes a contiguous share of the chunks; a segment of one chunk is
// written at once, otherwise each chunk's partial is stored and the block that completes the
// segment's ticket combines its partials in chunk order and resets the ticket (0 between
// launches). One launch, no spinning. blockDim.x a multiple of 32, at least 64.
template <class In, class Acc, xr::Op O, class Chunks, unsigned U>
__global__ void __launch_bounds__(1024) k_multiblock(const In* __restrict__ in, Chunks chunks, Acc* __restrict__ out,
                                                     Acc* __restrict__ partials, unsigned* __restrict__ tickets) {
  chunks.prepare();
  const u64 total = chunks.size();
  const u64 share = total / gridDim.x, extra = total % gridDim.x;
  u64 c = blockIdx.x * share + (blockIdx.x < extra ? blockIdx.x : extra);
  const u64 end = c + share + (blockIdx.x < extra ? 1 : 0);
  if (c >= end) return;
  u64 cursor = chunks.seek(c);
  __shared__ bool last;
  for (; c < end; ++c) {
    const Chunk ch = chunks.at(c, cursor);
    if (ch.count > 1 && !chunks.fits(ch)) {  // no room for its partials: its first chunk takes it whole
      if (ch.index == 0) {
        const Acc whole = block_reduce<O>(block_range<O, Acc, In, U>(in + ch.start, ch.length));
        if (threadIdx.x == 0) out[ch.segment] = segment_value<O>(whole, ch.length);
      }
      continue;
    }
    const Acc acc = block_reduce<O>(block_range<O, Acc, In, U>(in + ch.begin, ch.end - ch.begin));
    if (ch.count == 1) {
      if (threadIdx.x == 0) out[ch.segment] = segment_value<O>(acc, ch.length);
    } else {
      if (threadIdx.x == 0) {
        partials[ch.first + ch.index] = acc;
        __threadfence();
        last = atomicAdd(tickets + ch.ticket, 1u) == ch.count - 1;
      }
      __syncthreads();
      if (last) {
        __threadfence();
        Acc v = ident<O, Acc>();
        for (u64 j = threadIdx.x; j < ch.count; j += blockDim.x) v = apply<O>(v, load_cg(partials + ch.first + j));
        v = block_reduce<O>(v);
        if (threadIdx.x == 0) {
          out[ch.segment] = v;
          tickets[ch.ticket] = 0;
        }
      }
      __syncthreads();
    }
  }
}

// ---- binned: the classification ----

// Bins of k_classify, by length: below limit[0] tiny, below limit[1] short, below limit[2]
// medium, else long. list[b] receives the segment indices of bin b, entries[b] its counter (zero
// before the launch); the long bin's entries also get their first chunk (of `chunk` elements).
struct Bins {
  u64 limit[3];
  unsigned* list[4];
  u64* entries;
  u64* chunk_base;
  u64 chunk;
};
constexpr unsigned kClassifyPerThread = 4;
constexpr unsigned kClassifyBlock = 256;

__device__ __forceinline__ u64 warp_inclusive_sum(u64 v) {
  const unsigned lane = threadIdx.x & 31u;
#pragma unroll
  for (unsigned d = 1; d < 32; d <<= 1) {
    const u64 t = __shfl_up_sync(0xffffffffu, static_cast<unsigned long long>(v), d);
    if (lane >= d) v += t;
  }
  return v;
}

// Each thread classifies K consecutive segments; a block reserves the places of all its segments
// with one atomic per bin, so that entries keep segment order within a block and the long bin's
// entries are in the order of their chunks. count < 2^24; blockDim.x = kClassifyBlock.
template <unsigned K>
__global__ void __launch_bounds__(kClassifyBlock) k_classify(const i64* __restrict__ offsets, u64 n, u64 count, Bins bins) {
  __shared__ u64 warp_total[2][32];
  __shared__ u64 base[5];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const OffsetsSource src{offsets, n, count, nullptr, nullptr};
  for (u64 first = u64(blockIdx.x) * blockDim.x * K; first < count; first += u64(gridDim.x) * blockDim.x * K) {
    const u64 mine = first + u64(threadIdx.x) * K;
    unsigned bin[K];
    u64 chunks[K];
    u64 tally = 0, chunk_sum = 0;  // tally: 16 bits per bin
#pragma unroll
    for (unsigned k = 0; k < K; ++k) {
      bin[k] = 4;
      chunks[k] = 0;
      if (mine + k >= count) continue;
      const Range r = src.range(mine + k);
      const u64 length = r.end - r.begin;
      bin[k] = length < bins.limit[0] ? 0 : length < bins.limit[1] ? 1 : length < bins.limit[2] ? 2 : 3;
      if (bin[k] == 3) chunks[k] = list_chunks(length, bins.chunk);
      tally += u64{1} << (16 * bin[k]);
      chunk_sum += chunks[k];
    }
    // Exclusive prefixes of tally and chunk_sum over the block, in thread order.
    const u64 tally_in = warp_inclusive_sum(tally), chunks_in = warp_inclusive_sum(chunk_sum);
    if (lane == 31) {
      warp_total[0][warp] = tally_in;
      warp_total[1][warp] = chunks_in;
    }
    __syncthreads();
    if (warp == 0) {
      const u64 t = lane < nwarps ? warp_total[0][lane] : 0, c = lane < nwarps ? warp_total[1][lane] : 0;
      const u64 ti = warp_inclusive_sum(t), ci = warp_inclusive_sum(c);
      if (lane < nwarps) {
        warp_total[0][lane] = ti - t;
        warp_total[1][lane] = ci - c;
      }
      if (lane == nwarps - 1) {
        for (unsigned b = 0; b < 4; ++b) {
          const u64 entries = (ti >> (16 * b)) & 0xffffu;
          const u64 add = (entries << kEntryShift) | (b == 3 ? ci : 0);
          const u64 old = entries ? atomicAdd(reinterpret_cast<unsigned long long*>(bins.entries + b), add) : 0;
          base[b] = old >> kEntryShift;
          if (b == 3) base[4] = old & kChunkMask;
        }
      }
    }
    __syncthreads();
    u64 place = warp_total[0][warp] + tally_in - tally;
    u64 chunk_place = base[4] + warp_total[1][warp] + chunks_in - chunk_sum;
#pragma unroll
    for (unsigned k = 0; k < K; ++k) {
      const unsigned b = bin[k];
      if (b == 4) continue;
      const u64 p = base[b] + ((place >> (16 * b)) & 0xffffu);
      bins.list[b][p] = static_cast<unsigned>(mine + k);
      if (b == 3) {
        bins.chunk_base[p] = chunk_place;
        chunk_place += chunks[k];
      }
      place += u64{1} << (16 * b);
    }
    __syncthreads();  // warp_total and base are rewritten by the next round
  }
}

}  // namespace xr::kern::seg
