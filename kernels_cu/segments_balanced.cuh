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

// The first segment in [lo, hi) that ends at `p` or later (hi where none does): a search by the
// whole warp, 32 ends a step, so 2^20 segments take 4 dependent loads. Every lane returns it.
template <class Src> __device__ __forceinline__ u64 warp_lower_bound(const Src& src, u64 lo, u64 hi, u64 p) {
  const unsigned lane = threadIdx.x & 31u;
  while (hi - lo > 32) {
    const u64 step = (hi - lo + 31) / 32;
    const u64 q = lo + (lane + 1) * step - 1 < hi - 1 ? lo + (lane + 1) * step - 1 : hi - 1;
    const unsigned at_or_after = __ballot_sync(0xffffffffu, src.end(q) >= p);
    if (!at_or_after) return hi;
    const unsigned f = __ffs(at_or_after) - 1;
    const u64 first = lo + f * step;  // one past the probe of lane f - 1
    hi = lo + (f + 1) * step - 1 < hi - 1 ? lo + (f + 1) * step - 1 : hi - 1;
    lo = first;
  }
  const unsigned at_or_after = __ballot_sync(0xffffffffu, lo + lane < hi && src.end(lo + lane) >= p);
  return at_or_after ? lo + __ffs(at_or_after) - 1 : hi;
}

// Offsets the host has not checked: sets *disorder where they decrease (it is 0 before the launch).
template <class Src> __global__ void k_balanced_order(Src src, unsigned* __restrict__ disorder) {
  const u64 tid = u64(blockIdx.x) * blockDim.x + threadIdx.x, step = u64(gridDim.x) * blockDim.x;
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

// Shared-memory slot of element k of a tile: one element of padding per 128 bytes, so that
// neither the 16-byte packs stored by consecutive threads nor the K consecutive elements each
// thread reads back meet in a bank.
template <class In> __device__ __forceinline__ unsigned padded(unsigned k) { return k + k / (128 / sizeof(In)); }

// k_balanced's dynamic shared memory for tiles of `tile` elements: a bit per element (a segment
// ends just before it), the segment that ends there (relative to the tile's first end), then the
// padded elements.
constexpr std::size_t balanced_marks_bytes(std::size_t tile) { return tile / 32 * 4 + tile * 4; }
constexpr std::size_t balanced_smem_bytes(std::size_t tile, std::size_t elem) {
  return balanced_marks_bytes(tile) + (tile + tile / (128 / elem) + 1) * elem;
}

// balanced: block b reduces the elements [b * T, (b + 1) * T) of the segments laid end to end
// (T = blockDim.x * K), and owns the segment ends at those positions (the last block also the
// end of the input). The elements are loaded (16-byte packs where dense) before the block looks
// for its ends, staged in shared memory, and each thread adds its K consecutive ones, closing a
// segment where a bit marks an end; its first segment takes the threads before it through a block
// segmented scan. Empty segments are written as the ends are marked. The segment open at the
// tile's end leaves its part in carry[b] (key carry_key[b], ~0 for none) for k_balanced_fixup.
// Where `disorder` is set, every block reduces whole segments instead (clamped, as k_block).
// Dynamic shared memory: balanced_smem_bytes(blockDim.x * K, sizeof(In)); U: packs in flight a
// thread on the per-segment path.
template <class In, class Acc, xr::Op O, class Src, unsigned K, unsigned U>
__global__ void __launch_bounds__(256, 6)
    k_balanced(const In* __restrict__ in, Src src, Acc* __restrict__ out, Acc* __restrict__ carry,
               u64* __restrict__ carry_key, const unsigned* __restrict__ disorder) {
  static_assert(32 % K == 0, "a thread's bits lie in one word");
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
  unsigned* segment_at = ends + tile / 32;
  In* vals = reinterpret_cast<In*>(smem + balanced_marks_bytes(tile));
  __shared__ u64 tile_ends[2];
  const u64 p0 = u64(blockIdx.x) * tile;
  if (p0 > src.elements) {  // past the end (the grid counts every element of the input)
    if (threadIdx.x == 0 && carry) carry_key[blockIdx.x] = ~u64{0};
    return;
  }
  const unsigned length = static_cast<unsigned>(src.elements - p0 < tile ? src.elements - p0 : tile);

  // The loads first: they do not depend on the ends.
  const In* base = in + src.first() + p0;
  const PackSplit<In> split(base, length);
  Pack<In> p[P];
  const unsigned e = threadIdx.x, edge_at = static_cast<unsigned>(e < split.head ? e : e + split.nvec * V);
  const bool edge = src.dense() && e < length - split.nvec * V;
  In edge_value{};
  if (src.dense()) {
    const Pack<In>* vin = reinterpret_cast<const Pack<In>*>(base + split.head);
#pragma unroll
    for (unsigned r = 0; r < P; ++r)
      if (threadIdx.x + r * blockDim.x < split.nvec) p[r] = load_pack<Deal::BlockSegments>(vin + threadIdx.x + r * blockDim.x);
    if (edge) edge_value = base[edge_at];
  }
  // The tile's ends: segments [lo, hi) end at positions [p0, p0 + T). The grid has a tile past
  // the last element, so the end of the input lies in one.
  for (unsigned which = threadIdx.x >> 5; which < 2; which += blockDim.x >> 5) {
    const u64 found = warp_lower_bound(src, 0, src.count, which ? p0 + tile : p0);
    if ((threadIdx.x & 31u) == 0) tile_ends[which] = found;
  }
  for (unsigned w = threadIdx.x; w < tile / 32; w += blockDim.x) ends[w] = 0;
  if (src.dense()) {
#pragma unroll
    for (unsigned r = 0; r < P; ++r)
      if (threadIdx.x + r * blockDim.x < split.nvec)
#pragma unroll
        for (unsigned v = 0; v < V; ++v)
          vals[padded<In>(static_cast<unsigned>(split.head) + (threadIdx.x + r * blockDim.x) * V + v)] = p[r].v[v];
    if (edge) vals[padded<In>(edge_at)] = edge_value;
  } else {
    for (unsigned k = threadIdx.x; k < length; k += blockDim.x) vals[padded<In>(k)] = in[src.address(p0 + k)];
  }
  __syncthreads();

  // Mark the end of every non-empty segment; write the empty ones.
  const u64 lo = tile_ends[0], hi = tile_ends[1];
  for (u64 k = lo + threadIdx.x; k < hi; k += blockDim.x) {
    const u64 at = src.end(k), before = k ? src.end(k - 1) : 0;
    if (at == before) {
      out[k] = xr::empty_value<Acc>(O);
    } else {
      const unsigned q = static_cast<unsigned>(at - p0);
      atomicOr(ends + q / 32, 1u << (q % 32));
      segment_at[q] = static_cast<unsigned>(k - lo);
    }
  }
  __syncthreads();

  // This thread's K elements; each marked end closes a segment.
  const unsigned first = threadIdx.x * K;
  const unsigned marks = (ends[first / 32] >> (first % 32)) & (K == 32 ? ~0u : (1u << K) - 1u);
  Acc acc = ident<O, Acc>(), head = ident<O, Acc>();
  unsigned head_at = K;  // where this thread's first end lies (K: none)
#pragma unroll
  for (unsigned i = 0; i < K; ++i) {
    if (marks & (1u << i)) {
      if (head_at == K) {
        head_at = i;
        head = acc;
      } else {
        out[lo + segment_at[first + i]] = acc;
      }
      acc = ident<O, Acc>();
    }
    if (first + i < length) acc = apply<O>(acc, static_cast<Acc>(vals[padded<In>(first + i)]));
  }
  SegmentRun<Acc> total;
  const SegmentRun<Acc> before = block_segmented_scan<O>(SegmentRun<Acc>{acc, head_at != K}, total);
  if (head_at != K) out[lo + segment_at[first + head_at]] = apply<O>(before.value, head);
  if (threadIdx.x == 0 && carry) {
    carry[blockIdx.x] = total.value;
    carry_key[blockIdx.x] = hi < src.count ? hi : ~u64{0};
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
