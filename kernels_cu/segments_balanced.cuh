// balanced: segmented reductions split by work, not by segment (the merge path of CSR SpMV). The
// segments' ends and the elements form one sequence of count + N items, ends placed before the
// elements they follow; every block takes a tile of K items a thread, so a block's work does not
// depend on how lengths vary. Device code only; backends/cuda/src/segments_balanced.cu launches it.
#pragma once

#include <cstdint>

#include "segments.cuh"

namespace xr::kern::seg {

// Rows for the merge path: row i ends after (i + 1) * length elements of the rows laid end to end;
// element j of that sequence lies at (j / length) * stride + j % length.
struct BalancedRows {
  u64 count, length, stride;
  u64 elements = 0;
  __device__ __forceinline__ void prepare() { elements = count * length; }
  __device__ __forceinline__ u64 end(u64 i) const { return (i + 1) * length; }
  __device__ __forceinline__ bool dense() const { return stride == length; }
  __device__ __forceinline__ u64 first() const { return 0; }
  __device__ __forceinline__ u64 address(u64 j) const { return j / length * stride + j % length; }
  __device__ __forceinline__ bool ordered(u64) const { return true; }
  __device__ __forceinline__ Range range(u64 s) const { return {s * stride, s * stride + length}; }
};

// Offsets for the merge path: segment i ends at clamp(offsets[i + 1], base, n) - base, base being
// clamp(offsets[0], 0, n), which for non-decreasing offsets is the segment the other kernels read.
// Offsets that decrease (ordered() false somewhere) take the per-segment path of k_balanced.
struct BalancedOffsets {
  const i64* offsets;
  u64 n, count;
  u64 base = 0, elements = 0;
  __device__ __forceinline__ void prepare() {
    base = clamp_offset(__ldg(offsets), 0, n);
    elements = clamp_offset(__ldg(offsets + count), base, n) - base;
  }
  __device__ __forceinline__ u64 end(u64 i) const { return clamp_offset(__ldg(offsets + i + 1), base, n) - base; }
  __device__ __forceinline__ bool dense() const { return true; }
  __device__ __forceinline__ u64 first() const { return base; }
  __device__ __forceinline__ u64 address(u64 j) const { return base + j; }
  __device__ __forceinline__ bool ordered(u64 i) const { return __ldg(offsets + i + 1) >= __ldg(offsets + i); }
  __device__ __forceinline__ Range range(u64 s) const {
    const u64 b = clamp_offset(__ldg(offsets + s), 0, n);
    return {b, clamp_offset(__ldg(offsets + s + 1), b, n)};
  }
};

// The segments finished before diagonal d of the merge path (ends before elements at a tie).
template <class Src> __device__ __forceinline__ u64 merge_path(const Src& src, u64 d) {
  u64 lo = d > src.elements ? d - src.elements : 0, hi = d < src.count ? d : src.count;
  while (lo < hi) {
    const u64 mid = lo + (hi - lo) / 2;
    if (src.end(mid) <= d - mid - 1) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// Where each tile starts on the merge path (tile t at diagonal t * tile_items, the last at the
// end): split[t] segments finished before it. With `disorder`, offsets that decrease anywhere
// set it to 1 (it is 0 before the launch).
template <class Src>
__global__ void k_balanced_split(Src src, u64 tiles, u64 tile_items, u64* __restrict__ split,
                                 unsigned* __restrict__ disorder) {
  src.prepare();
  const u64 items = src.count + src.elements;
  const u64 tid = u64(blockIdx.x) * blockDim.x + threadIdx.x, step = u64(gridDim.x) * blockDim.x;
  for (u64 t = tid; t <= tiles; t += step) split[t] = merge_path(src, t * tile_items < items ? t * tile_items : items);
  if (disorder)
    for (u64 i = tid; i < src.count; i += step)
      if (!src.ordered(i)) *disorder = 1;
}

// Shuffle up of any trivially copyable type, in 32-bit words (as shfl_down).
template <class T> __device__ __forceinline__ T shfl_up(T v, unsigned delta) {
  constexpr unsigned kWords = (sizeof(T) + 3) / 4;
  unsigned w[kWords] = {};
  __builtin_memcpy(w, &v, sizeof(T));
#pragma unroll
  for (unsigned i = 0; i < kWords; ++i) w[i] = __shfl_up_sync(0xffffffffu, w[i], delta);
  __builtin_memcpy(&v, w, sizeof(T));
  return v;
}

// A run of a segmented scan: `value` combines the items after the last segment end in the run
// (all of them where `ended` is false).
template <class Acc> struct SegmentRun {
  Acc value;
  bool ended;
};
template <xr::Op O, class Acc>
__device__ __forceinline__ SegmentRun<Acc> join(SegmentRun<Acc> earlier, SegmentRun<Acc> later) {
  return {later.ended ? later.value : apply<O>(earlier.value, later.value), earlier.ended || later.ended};
}

// Block-wide exclusive segmented scan of the threads' runs, in thread order; `total` gets the
// whole block's run. blockDim.x a multiple of 32; every thread calls it.
template <xr::Op O, class Acc>
__device__ __forceinline__ SegmentRun<Acc> block_segmented_scan(SegmentRun<Acc> run, SegmentRun<Acc>& total) {
  __shared__ Acc warp_value[32];
  __shared__ bool warp_ended[32];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  SegmentRun<Acc> in = run;
#pragma unroll
  for (unsigned d = 1; d < 32; d <<= 1) {
    const SegmentRun<Acc> up{shfl_up(in.value, d), static_cast<bool>(__shfl_up_sync(0xffffffffu, in.ended, d))};
    if (lane >= d) in = join<O>(up, in);
  }
  if (lane == 31) {
    warp_value[warp] = in.value;
    warp_ended[warp] = in.ended;
  }
  SegmentRun<Acc> before{shfl_up(in.value, 1), static_cast<bool>(__shfl_up_sync(0xffffffffu, in.ended, 1))};
  if (lane == 0) before = {ident<O, Acc>(), false};
  __syncthreads();
  if (warp == 0) {
    SegmentRun<Acc> w = lane < nwarps ? SegmentRun<Acc>{warp_value[lane], warp_ended[lane]}
                                      : SegmentRun<Acc>{ident<O, Acc>(), false};
#pragma unroll
    for (unsigned d = 1; d < 32; d <<= 1) {
      const SegmentRun<Acc> up{shfl_up(w.value, d), static_cast<bool>(__shfl_up_sync(0xffffffffu, w.ended, d))};
      if (lane >= d) w = join<O>(up, w);
    }
    if (lane < nwarps) {
      warp_value[lane] = w.value;
      warp_ended[lane] = w.ended;
    }
  }
  __syncthreads();
  total = {warp_value[nwarps - 1], warp_ended[nwarps - 1]};
  if (warp > 0) before = join<O>(SegmentRun<Acc>{warp_value[warp - 1], warp_ended[warp - 1]}, before);
  __syncthreads();  // the shared arrays may be reused by the next call
  return before;
}

// Shared-memory slot of element k of a tile: one element of padding per 128 bytes, so that the
// threads of a warp, K elements apart, read distinct banks.
template <class In> __device__ __forceinline__ unsigned padded(unsigned k) { return k + k / (128 / sizeof(In)); }

// k_balanced's dynamic shared memory for tiles of `tile` items: a tile's ends (32 bits each,
// relative to its first element) then its padded elements, aligned to one; ends and elements
// together are at most `tile` items, so they share the room of `tile` of the wider.
constexpr std::size_t balanced_smem_bytes(std::size_t tile, std::size_t elem) {
  return tile * (elem > sizeof(unsigned) ? elem : sizeof(unsigned)) + (tile / (128 / elem) + 1) * elem;
}

// balanced: block b reduces the items [b * T, (b + 1) * T) of the merge path, T = blockDim.x * K.
// Its elements go to shared memory (16-byte loads where dense), each thread walks K items from
// its diagonal, writing every segment that ends inside its items after the first; the first
// takes the threads before it through a block segmented scan. The segment open at the end of the
// tile leaves its part in carry[b] (key carry_key[b], ~0 for none) for k_balanced_fixup. Where
// `disorder` is set, every block reduces whole segments instead (clamped, as k_block).
// Dynamic shared memory: balanced_smem_bytes(blockDim.x * K, sizeof(In)); U: packs in flight a
// thread on the per-segment path.
template <class In, class Acc, xr::Op O, class Src, unsigned K, unsigned U>
__global__ void __launch_bounds__(256, 8)
    k_balanced(const In* __restrict__ in, Src src, const u64* __restrict__ split, Acc* __restrict__ out,
               Acc* __restrict__ carry, u64* __restrict__ carry_key, const unsigned* __restrict__ disorder) {
  if (disorder && *disorder) {
    for (u64 s = blockIdx.x; s < src.count; s += gridDim.x) {
      const Range r = src.range(s);
      const Acc acc = block_reduce<O>(block_range<O, Acc, In, U>(in + r.begin, r.end - r.begin));
      if (threadIdx.x == 0) out[s] = segment_value<O>(acc, r.end - r.begin);
    }
    return;
  }
  src.prepare();
  constexpr unsigned V = Pack<In>::size, P = (K + V - 1) / V;
  const unsigned tile = blockDim.x * K;
  unsigned char* smem = dyn_shared<unsigned char>();
  unsigned* ends = reinterpret_cast<unsigned*>(smem);
  __shared__ u64 tile_at[2];
  __shared__ bool first_empty;
  const u64 items = src.count + src.elements;
  const u64 d0 = u64(blockIdx.x) * tile, d1 = d0 + tile < items ? d0 + tile : items;
  if (d0 >= items) {  // a tile past the end (the grid counts every element of the input)
    if (threadIdx.x == 0 && carry) carry_key[blockIdx.x] = ~u64{0};
    return;
  }
  if (threadIdx.x < 2) tile_at[threadIdx.x] = split ? split[blockIdx.x + threadIdx.x] : merge_path(src, threadIdx.x ? d1 : d0);
  __syncthreads();
  const u64 i0 = tile_at[0], i1 = tile_at[1], j0 = d0 - i0, j1 = d1 - i1;
  const unsigned segments = static_cast<unsigned>(i1 - i0), length = static_cast<unsigned>(j1 - j0);
  In* vals = reinterpret_cast<In*>(smem + (segments * sizeof(unsigned) + sizeof(In) - 1) / sizeof(In) * sizeof(In));

  // The tile's elements and the ends of its segments, relative to its first element: every
  // thread's first end (and thread 0's end before the tile) is loaded with the elements, so that
  // the tile waits for one round of loads.
  const unsigned end0 = threadIdx.x < segments ? static_cast<unsigned>(src.end(i0 + threadIdx.x) - j0) : 0;
  const u64 before_tile = threadIdx.x == 0 && segments && i0 ? src.end(i0 - 1) : 0;
  if (src.dense()) {
    const In* base = in + src.first() + j0;
    const PackSplit<In> s(base, length);
    const Pack<In>* vin = reinterpret_cast<const Pack<In>*>(base + s.head);
    Pack<In> p[P];
#pragma unroll
    for (unsigned r = 0; r < P; ++r)
      if (threadIdx.x + r * blockDim.x < s.nvec) p[r] = load_pack<Deal::BlockSegments>(vin + threadIdx.x + r * blockDim.x);
    // The head and the tail: fewer than 2 V elements, at most one a thread.
    const unsigned e = threadIdx.x, k = static_cast<unsigned>(e < s.head ? e : e + s.nvec * V);
    const bool edge = e < length - s.nvec * V;
    In edge_value{};
    if (edge) edge_value = base[k];
#pragma unroll
    for (unsigned r = 0; r < P; ++r)
      if (threadIdx.x + r * blockDim.x < s.nvec)
#pragma unroll
        for (unsigned v = 0; v < V; ++v)
          vals[padded<In>(static_cast<unsigned>(s.head) + (threadIdx.x + r * blockDim.x) * V + v)] = p[r].v[v];
    if (edge) vals[padded<In>(k)] = edge_value;
  } else {
    for (unsigned k = threadIdx.x; k < length; k += blockDim.x) vals[padded<In>(k)] = in[src.address(j0 + k)];
  }
  if (threadIdx.x < segments) ends[threadIdx.x] = end0;
  for (unsigned k = threadIdx.x + blockDim.x; k < segments; k += blockDim.x) ends[k] = static_cast<unsigned>(src.end(i0 + k) - j0);
  if (threadIdx.x == 0) first_empty = segments && end0 + j0 == before_tile;
  __syncthreads();

  // This thread's items: from its diagonal on the tile's merge path.
  const unsigned dt = threadIdx.x * K, tile_items = segments + length;
  unsigned x = 0, y = 0;
  if (dt < tile_items) {
    unsigned lo = dt > length ? dt - length : 0, hi = dt < segments ? dt : segments;
    while (lo < hi) {
      const unsigned mid = (lo + hi) / 2;
      if (ends[mid] <= dt - mid - 1) lo = mid + 1;
      else hi = mid;
    }
    x = lo;
    y = dt - lo;
  }
  const unsigned stop = dt + K < tile_items ? dt + K : tile_items;
  Acc acc = ident<O, Acc>(), head = ident<O, Acc>();
  unsigned first = segments;  // the first segment this thread ends (segments: none)
  for (unsigned item = dt; item < stop; ++item) {
    if (x < segments && y >= ends[x]) {
      const bool empty = x ? ends[x] == ends[x - 1] : first_empty;
      if (first == segments) {
        first = x;
        head = acc;
      } else {
        out[i0 + x] = empty ? xr::empty_value<Acc>(O) : acc;
      }
      acc = ident<O, Acc>();
      ++x;
    } else {
      acc = apply<O>(acc, static_cast<Acc>(vals[padded<In>(y)]));
      ++y;
    }
  }
  SegmentRun<Acc> total;
  const SegmentRun<Acc> before = block_segmented_scan<O>(SegmentRun<Acc>{acc, first != segments}, total);
  if (first != segments) {
    const bool empty = first ? ends[first] == ends[first - 1] : first_empty;
    out[i0 + first] = empty ? xr::empty_value<Acc>(O) : apply<O>(before.value, head);
  }
  if (threadIdx.x == 0 && carry) {
    carry[blockIdx.x] = total.value;
    carry_key[blockIdx.x] = i1 < src.count ? i1 : ~u64{0};
  }
}

// balanced's finish: a warp for each run of tiles that leave a part of the same segment (the
// first tile of the run) combines their parts in tile order into the value the segment's last
// tile wrote. Does nothing where `disorder` is set.
template <class Acc, xr::Op O>
__global__ void k_balanced_fixup(const Acc* __restrict__ carry, const u64* __restrict__ carry_key, u64 tiles,
                                 Acc* __restrict__ out, const unsigned* __restrict__ disorder) {
  if (disorder && *disorder) return;
  const unsigned lane = threadIdx.x & 31u;
  const u64 warps = (u64(gridDim.x) * blockDim.x) >> 5;
  for (u64 t = (u64(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; t < tiles; t += warps) {
    const u64 key = carry_key[t];
    if (key == ~u64{0} || (t > 0 && carry_key[t - 1] == key)) continue;
    Acc acc = ident<O, Acc>();
    for (u64 b = t;; b += 32) {
      const bool mine = b + lane < tiles && carry_key[b + lane] == key;
      if (mine) acc = apply<O>(acc, carry[b + lane]);
      if (__ballot_sync(0xffffffffu, mine) != 0xffffffffu) break;
    }
    acc = warp_reduce<O>(acc);
    if (lane == 0) out[key] = apply<O>(acc, out[key]);
  }
}

}  // namespace xr::kern::seg
