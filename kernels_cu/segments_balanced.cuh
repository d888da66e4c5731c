// balanced: segmented reductions split by work, not by segment. The elements of all segments are
// cut into tiles of K elements a thread and the segment ends in each tile are marked, so a block's
// work does not depend on how lengths vary. Device code only; backends/cuda/src/segments/balanced.cu
// launches it.
#pragma once

#include <cstdint>

#include "segments.cuh"

namespace xr::kern::seg {

// Rows for balanced: row i ends after (i + 1) * length elements of the rows laid end to end;
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

// Offsets for balanced: segment i ends at clamp(offsets[i + 1], base, n) - base, base being
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

// One tile's elements on their way to shared memory: the 16-byte packs and the one edge element
// (head or tail) a thread loads where the input is dense; other layouts load as they store.
template <class In, unsigned K> struct BalancedTile {
  static constexpr unsigned V = Pack<In>::size, P = (K + V - 1) / V;
  Pack<In> pack[P];
  In edge_value{};
  unsigned length = 0, head = 0, nvec = 0;  // elements of the tile; its PackSplit
  u64 p0 = 0;

  // Issues the loads of the tile at position p (elements [p, p + tile) of the segments laid end
  // to end, cut at the last).
  template <class Src> __device__ __forceinline__ void load(const In* __restrict__ in, const Src& src, u64 p, unsigned tile) {
    p0 = p;
    length = static_cast<unsigned>(src.elements - p < tile ? src.elements - p : tile);
    if (!src.dense()) return;
    const In* base = in + src.first() + p;
    const PackSplit<In> split(base, length);
    head = static_cast<unsigned>(split.head);
    nvec = static_cast<unsigned>(split.nvec);
    const Pack<In>* vin = reinterpret_cast<const Pack<In>*>(base + head);
#pragma unroll
    for (unsigned r = 0; r < P; ++r)
      if (threadIdx.x + r * blockDim.x < nvec) pack[r] = load_pack<Deal::BlockSegments>(vin + threadIdx.x + r * blockDim.x);
    if (threadIdx.x < length - nvec * V) edge_value = base[edge_at()];
  }
  // Writes the tile to vals (padded), waiting for its loads.
  template <class Src> __device__ __forceinline__ void store(In* vals, const In* __restrict__ in, const Src& src) const {
    if (!src.dense()) {
      for (unsigned k = threadIdx.x; k < length; k += blockDim.x) vals[padded<In>(k)] = in[src.address(p0 + k)];
      return;
    }
#pragma unroll
    for (unsigned r = 0; r < P; ++r)
      if (threadIdx.x + r * blockDim.x < nvec)
#pragma unroll
        for (unsigned v = 0; v < V; ++v) vals[padded<In>(head + (threadIdx.x + r * blockDim.x) * V + v)] = pack[r].v[v];
    if (threadIdx.x < length - nvec * V) vals[padded<In>(edge_at())] = edge_value;
  }
  __device__ __forceinline__ unsigned edge_at() const { return threadIdx.x < head ? threadIdx.x : threadIdx.x + nvec * V; }
};

// balanced: the elements of the segments laid end to end are cut into tiles of T = blockDim.x * K,
// and block b takes a run of consecutive tiles, owning the segment ends at their positions (the
// last tile also the end of the input). A block issues the loads of its next tile before it works
// on the current one, so a tile's loads are in flight while the one before is marked, added and
// scanned. Only a block's first tile searches for its first segment: each tile's last segment
// is where the next starts. A tile is staged in shared memory; the ends that lie in it become
// bits (and the segment of each), found as the block reads the ends from its first segment on;
// each thread adds its K consecutive elements, closing a segment where a bit marks an end; its
// first segment takes the threads before it through a block segmented scan, and the tiles before
// it in the block through the part carried from tile to tile. Empty segments are written as
// the ends are read. The segment open at the end of the block's run leaves its part in carry[b]
// (key carry_key[b], ~0 for none) for k_balanced_fixup. Where `disorder` is set, every block
// reduces whole segments instead (clamped, as k_block). Dynamic shared memory:
// balanced_smem_bytes(blockDim.x * K, sizeof(In)); U: packs in flight a thread on the
// per-segment path.
template <class In, class Acc, xr::Op O, class Src, unsigned K, unsigned U>
__global__ void __launch_bounds__(256, 2)
    k_balanced(const In* __restrict__ in, Src src, u64 tiles, Acc* __restrict__ out, Acc* __restrict__ carry,
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
  const unsigned tile = blockDim.x * K;
  unsigned char* smem = dyn_shared<unsigned char>();
  unsigned* ends = reinterpret_cast<unsigned*>(smem);
  unsigned* segment_at = ends + tile / 32;
  In* vals = reinterpret_cast<In*>(smem + balanced_marks_bytes(tile));
  __shared__ u64 first_segment;
  const u64 t_begin = tiles * blockIdx.x / gridDim.x, t_end = tiles * (blockIdx.x + 1) / gridDim.x;

  BalancedTile<In, K> next;
  if (t_begin < t_end) next.load(in, src, t_begin * tile, tile);
  if (threadIdx.x < 32) {
    const u64 found = warp_lower_bound(src, 0, src.count, t_begin * tile);
    if (threadIdx.x == 0) first_segment = found;
  }
  Acc carried = ident<O, Acc>();
  u64 lo = 0;  // the tile's first segment: the first that ends at its first position or later
  // The end of segment k and of the one before it (k past the last: ~0), read a tile ahead.
  u64 end_at = 0, end_before = 0;
  const auto read_ends = [&](u64 k) {
    end_at = k < src.count ? src.end(k) : ~u64{0};
    end_before = k < src.count && k > 0 ? src.end(k - 1) : 0;
  };
  for (u64 t = t_begin; t < t_end; ++t) {
    const u64 p0 = t * tile;
    const unsigned length = next.length;
    for (unsigned w = threadIdx.x; w < tile / 32; w += blockDim.x) ends[w] = 0;
    next.store(vals, in, src);
    if (t + 1 < t_end) next.load(in, src, p0 + tile, tile);
    __syncthreads();
    if (t == t_begin) {
      lo = first_segment;
      read_ends(lo + threadIdx.x);
    }

    // Mark the end of every non-empty segment that ends in the tile; write the empty ones. The
    // ends from lo on are at p0 or later, and those in the tile come first, so they are counted.
    u64 hi = lo;
    for (u64 k = lo + threadIdx.x;; k += blockDim.x) {
      const bool here = end_at < p0 + tile;
      if (here) {
        if (end_at == end_before) {
          out[k] = empty_value<O, Acc>();
        } else {
          const unsigned q = static_cast<unsigned>(end_at - p0);
          atomicOr(ends + q / 32, 1u << (q % 32));
          segment_at[q] = static_cast<unsigned>(k - lo);
        }
      }
      const unsigned counted = static_cast<unsigned>(__syncthreads_count(here));
      hi += counted;
      if (counted < blockDim.x) break;
      read_ends(k + blockDim.x);
    }
    read_ends(hi + threadIdx.x);  // the next tile's first ends, in flight while this one is added

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
    const u64 head_segment = head_at != K ? lo + segment_at[first + head_at] : 0;
    SegmentRun<Acc> total;
    const SegmentRun<Acc> before = block_segmented_scan<O>(SegmentRun<Acc>{acc, head_at != K}, total);
    if (head_at != K) {
      const Acc value = apply<O>(before.value, head);
      out[head_segment] = before.ended ? value : apply<O>(carried, value);
    }
    carried = total.ended ? total.value : apply<O>(carried, total.value);
    lo = hi;
  }
  if (threadIdx.x == 0 && carry) {
    carry[blockIdx.x] = carried;
    carry_key[blockIdx.x] = t_begin < t_end && lo < src.count ? lo : ~u64{0};
  }
}

// balanced's finish: a warp for each run of blocks that leave a part of the same segment (the
// first block of the run) combines their parts in block order into the value the block holding
// the segment's end wrote. Does nothing where `disorder` is set.
template <class Acc, xr::Op O>
__global__ void k_balanced_fixup(const Acc* __restrict__ carry, const u64* __restrict__ carry_key, u64 parts,
                                 Acc* __restrict__ out, const unsigned* __restrict__ disorder) {
  if (disorder && *disorder) return;
  const unsigned lane = threadIdx.x & 31u;
  const u64 warps = (u64(gridDim.x) * blockDim.x) >> 5;
  for (u64 t = (u64(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; t < parts; t += warps) {
    const u64 key = carry_key[t];
    if (key == ~u64{0} || (t > 0 && carry_key[t - 1] == key)) continue;
    Acc acc = ident<O, Acc>();
    for (u64 b = t;; b += 32) {
      const bool mine = b + lane < parts && carry_key[b + lane] == key;
      if (mine) acc = apply<O>(acc, carry[b + lane]);
      if (__ballot_sync(0xffffffffu, mine) != 0xffffffffu) break;
    }
    acc = warp_reduce<O>(acc);
    if (lane == 0) out[key] = apply<O>(acc, out[key]);
  }
}

}  // namespace xr::kern::seg
