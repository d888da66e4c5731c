// Rungs 7-13 and auto: a fixed grid that strides over the input (many elements per thread),
// then a block reduction. cascade and shuffle write one partial per block; vector adds
// 128-bit loads; single_pass and auto finish in the same launch (finish.cuh); dynamic_tiles
// draws its share of the input at run time; bulk_copy and bulk_tiles let the copy engine
// stream stages into shared memory (sm_90).
#pragma once

#include <cstdint>

#include "common.cuh"
#include "finish.cuh"
#include "tree.cuh"

namespace xr::kern {

// 7. cascade: grid-stride loop (Brent: many elements per thread, fixed grid), then the
// shared-memory tree of unroll_last_warp. blockDim.x: multiple of 32.
template <class In, class Acc, xr::Op O>
__global__ void k_cascade(const In* __restrict__ in, u64 n, Acc* __restrict__ out) {
  Acc* s = dyn_shared<Acc>();
  Acc acc = ident<O, Acc>();
  const u64 stride = u64(gridDim.x) * blockDim.x;
  for (u64 i = u64(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    acc = apply<O>(acc, static_cast<Acc>(in[i]));
  s[threadIdx.x] = acc;
  __syncthreads();
  seq_tree<O>(s, blockDim.x, 64);
  if (threadIdx.x < 32) {
    const Acc v = last_warp_shared<O>(s, blockDim.x < 64 ? blockDim.x : 64);
    if (threadIdx.x == 0) out[blockIdx.x] = v;
  }
}

// 8. shuffle: the same loop; warp shuffles replace the shared-memory tree inside each warp.
template <class In, class Acc, xr::Op O>
__global__ void k_shuffle(const In* __restrict__ in, u64 n, Acc* __restrict__ out) {
  Acc acc = ident<O, Acc>();
  const u64 stride = u64(gridDim.x) * blockDim.x;
  for (u64 i = u64(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    acc = apply<O>(acc, static_cast<Acc>(in[i]));
  acc = block_reduce<O>(acc);
  if (threadIdx.x == 0) out[blockIdx.x] = acc;
}

// 16 bytes of In, loaded as one 128-bit transaction.
template <class In> struct alignas(16) Pack {
  static constexpr unsigned size = 16 / sizeof(In);
  In v[size];
};

// How the packs of k_vec are dealt out. GridStride: thread t takes packs t, t + grid width,
// ...: a thread's U loads lie a whole grid apart; plain read-only loads, which keep re-reads of
// an L2-resident input fast. BlockSegments: block b takes one contiguous segment of the input
// and its threads stride by the block width inside it, so each block's U loads per iteration
// cover U * blockDim * 16 contiguous bytes (CUB's even-share tiling); its loads stream (no L1
// allocation, 256-byte L2 prefetch), which pays once the input is larger than the L2.
// DynamicTiles: blocks draw fixed tiles from a counter (k_vec_tiles), streaming loads too.
enum class Deal { GridStride, BlockSegments, DynamicTiles };

// One LDG.128. Streaming form measured on an H100 (docs/performance.md, "Streaming loads from
// 64 MB"): a bare segmented sum went from 0.955-0.991x to 0.907-0.988x of CUB's time at n = 2^26..2^30 i32.
template <Deal D, class In> __device__ __forceinline__ Pack<In> load_pack(const Pack<In>* p) {
  int4 raw;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (D != Deal::GridStride) {
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.s32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(raw.x), "=r"(raw.y), "=r"(raw.z), "=r"(raw.w)
                 : "l"(p));
    return bits_as<Pack<In>>(raw);
  }
#endif
  raw = __ldg(reinterpret_cast<const int4*>(p));
  return bits_as<Pack<In>>(raw);
}

// Sums of bytes (i8, u8), by words of four bytes: one __dp4a (a dot product with {1, 1, 1, 1},
// sm_61) adds a word's bytes to a 32-bit sum, where widening each byte to the accumulator
// costs two instructions per byte and the 64-bit adds two more. Exact in 32 bits (at most
// 64 * 16 * 255 per call), so it equals the accumulator's wrapped sum in any width. Each word
// goes through `map` first (the raw word for sums; count_nonzero's, below, sets each nonzero
// byte to 1).
template <class Acc, class Word, class In, unsigned K, class WordMap>
__device__ __forceinline__ Acc sum_byte_packs(const Pack<In> (&r)[K], WordMap map) {
  static_assert(K <= 64, "a 32-bit sum holds 64 packs of bytes");
  constexpr Word kOnes = 0x01010101;
  Word sum = 0;
#pragma unroll
  for (unsigned u = 0; u < K; ++u) {
    const uint4 w = bits_as<uint4>(r[u]);
    const unsigned words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) sum = __dp4a(static_cast<Word>(map(words[k])), kOnes, sum);
  }
  return static_cast<Acc>(sum);
}

// Packs of bytes that count_nonzero (any, all) reads: a 1-byte xr::Mapped of that op.
template <class In> constexpr bool counts_bytes() {
  if constexpr (xr::is_mapped_v<In>)
    return xr::map_of(In::op) == xr::ElementMap::NonZero && sizeof(typename In::raw_type) == 1;
  else
    return false;
}

// Combines the elements of K packs as a balanced tree (shorter rounding chains and more
// instruction-level parallelism than a running sum). Min and max of f16 and bf16 compare in
// float (compute_t): each element is converted once, and the winner, an input, converts back
// exactly. An element of xr::Mapped<T, M> is mapped by that one conversion (map_element in
// Work); the byte sums read raw bytes, so they take plain i8 and u8 alone.
template <xr::Op O, class Acc, class In, unsigned K>
__device__ __forceinline__ Acc reduce_packs(const Pack<In> (&r)[K]) {
  if constexpr (O == xr::Op::Sum && !xr::is_mapped_v<In> && std::is_integral_v<In> && sizeof(In) == 1)
    return sum_byte_packs<Acc, std::conditional_t<std::is_signed_v<In>, int, unsigned>>(r, [](unsigned w) { return w; });
  // count_nonzero of bytes: each nonzero byte of a word as 0x80 (the low seven bits carried into
  // the top one, or'ed with it), their sum over 128. Three integer instructions a word where the
  // element-wise map costs a compare, a select and a 64-bit add a byte. H200, 2^28 u8: 1.08x u8
  // sum's time, against 1.41x element by element and 1.13-1.16x by __vsetne4 (emulated).
  if constexpr (O == xr::Op::Sum && counts_bytes<In>())
    return sum_byte_packs<Acc, unsigned>(r, [](unsigned w) { return (((w & 0x7F7F7F7Fu) + 0x7F7F7F7Fu) | w) & 0x80808080u; }) >> 7;
  using Work = xr::compute_t<Acc>;
  constexpr unsigned V = Pack<In>::size, M = K * V;
  Work t[M];
#pragma unroll
  for (unsigned u = 0; u < K; ++u)
#pragma unroll
    for (unsigned k = 0; k < V; ++k) t[u * V + k] = static_cast<Work>(r[u].v[k]);
#pragma unroll
  for (unsigned w = 1; w < M; w *= 2)
#pragma unroll
    for (unsigned j = 0; j + w < M; j += 2 * w) t[j] = apply<O>(t[j], t[j + w]);
  return Acc(t[0]);
}

// Packs i, i + step, ... below end, U loads in flight, combined into one value.
template <xr::Op O, class Acc, class In, unsigned U, Deal D>
__device__ __forceinline__ Acc accumulate_packs(const Pack<In>* __restrict__ vin, u64 i, u64 end, u64 step) {
  Acc acc = ident<O, Acc>();
  for (; i + (U - 1) * step < end; i += U * step) {
    Pack<In> r[U];
#pragma unroll
    for (unsigned u = 0; u < U; ++u) r[u] = load_pack<D>(vin + i + u * step);
    acc = apply<O>(acc, reduce_packs<O, Acc>(r));
  }
  for (; i < end; i += step) {
    Pack<In> r[1] = {load_pack<D>(vin + i)};
    acc = apply<O>(acc, reduce_packs<O, Acc>(r));
  }
  return acc;
}

// The misaligned head (elements before the first 16-byte boundary, fewer than one pack) and
// the tail (after the last whole pack): what is left for packs, and where the tail starts.
template <class In> struct PackSplit {
  u64 head, nvec, tail_begin;
  __device__ __forceinline__ PackSplit(const In* in, u64 n) {
    const auto addr = reinterpret_cast<std::uintptr_t>(in);
    head = ((16u - (addr & 15u)) & 15u) / sizeof(In);
    if (head > n) head = n;
    nvec = (n - head) / Pack<In>::size;
    tail_begin = head + nvec * Pack<In>::size;
  }
  // The head or tail element that thread `t` takes (t < head: head, then the tail), else id.
  template <xr::Op O, class Acc> __device__ __forceinline__ Acc edge(const In* in, u64 n, u64 t) const {
    if (t < head) return static_cast<Acc>(in[t]);
    if (t - head < n - tail_begin) return static_cast<Acc>(in[tail_begin + (t - head)]);
    return ident<O, Acc>();
  }
};

// The per-thread part of vector/single_pass/auto: 128-bit loads, U per thread per iteration
// (independent, so U loads are in flight before the first is used). The misaligned head
// (before the first 16-byte boundary) and the tail (after the last whole pack) are fewer than
// 2*16/sizeof(In) elements: the first threads take one each.
// The pointer must be aligned to sizeof(In).
template <xr::Op O, class Acc, class In, unsigned U, Deal D = Deal::GridStride>
__device__ __forceinline__ Acc thread_vec_accumulate(const In* __restrict__ in, u64 n) {
  const PackSplit<In> split(in, n);
  const u64 nvec = split.nvec;
  const u64 tid = u64(blockIdx.x) * blockDim.x + threadIdx.x;
  const u64 stride = u64(gridDim.x) * blockDim.x;
  const Acc acc = split.template edge<O, Acc>(in, n, tid);

  const Pack<In>* vin = reinterpret_cast<const Pack<In>*>(in + split.head);
  u64 i = tid, end = nvec, step = stride;
  if constexpr (D == Deal::BlockSegments) {
    const u64 tile = u64(blockDim.x) * U;
    const u64 segment = (nvec + gridDim.x - 1) / gridDim.x;
    const u64 per_block = (segment + tile - 1) / tile * tile;
    const u64 begin = u64(blockIdx.x) * per_block;
    end = begin < nvec ? (nvec - begin < per_block ? nvec : begin + per_block) : begin;
    i = begin + threadIdx.x;
    step = blockDim.x;
  }
  return apply<O>(acc, accumulate_packs<O, Acc, In, U, D>(vin, i, end, step));
}

// 9. vector (LastBlock = false): one partial per block, a second launch finishes.
// 10. single_pass / auto (LastBlock = true): the blocks' partials meet in one block of the
// same launch (finish_blocks: published slots on sm_90+ for grid-stride, a ticket otherwise).
// A grid of one block writes *out directly.
template <class In, class Acc, xr::Op O, unsigned U, bool LastBlock, Deal D = Deal::GridStride>
__global__ void __launch_bounds__(1024)
    k_vec(const In* __restrict__ in, u64 n, Acc* __restrict__ out, FinishState finish) {
  constexpr bool kPublish = D == Deal::GridStride;  // see finish_blocks
  const u64 epoch = LastBlock ? launch_epoch<kPublish>(finish) : 0;
  Acc acc = thread_vec_accumulate<O, Acc, In, U, D>(in, n);
  acc = block_reduce<O>(acc);
  if constexpr (!LastBlock) {
    if (threadIdx.x == 0) out[blockIdx.x] = acc;
  } else if (gridDim.x == 1) {
    if (threadIdx.x == 0) *out = acc;
  } else {
    finish_blocks<O, kPublish>(acc, epoch, out, finish);
  }
}

// 11. dynamic_tiles (and auto from 1 GiB where it does not use the copy engine): blocks draw tiles of tile_packs packs from a
// counter, so SMs that stream faster take more of the input; static segments leave a quarter
// of the SMs idle for the last quarter of the kernel (docs/performance.md, "Tiles from 1 GiB").
// Each tile is summed
// by one block in a fixed order and stored; the last block combines the tile partials in tile
// order, so the result depends neither on which block drew which tile nor on the grid. Tile 0
// also takes the misaligned head and the tail. Tiles: at most the workspace's partials.
template <class In, class Acc, xr::Op O, unsigned U>
__global__ void __launch_bounds__(1024)
    k_vec_tiles(const In* __restrict__ in, u64 n, u64 tile_packs, Acc* __restrict__ out, FinishState finish) {
  const PackSplit<In> split(in, n);
  const u64 tiles = split.nvec ? (split.nvec + tile_packs - 1) / tile_packs : 1;
  const Pack<In>* vin = reinterpret_cast<const Pack<In>*>(in + split.head);
  Acc* partials = static_cast<Acc*>(finish.partials);
  // Draws alternate between two cells: thread 0 writes the next draw into the cell nobody reads
  // in this round, and one barrier a round publishes it.
  __shared__ unsigned drawn[2];
  if (threadIdx.x == 0) drawn[0] = atomicAdd(finish.tile_counter, 1u);
  __syncthreads();
  for (unsigned round = 0;; ++round) {
    const u64 t = drawn[round & 1];
    if (t >= tiles) break;
    if (threadIdx.x == 0) drawn[(round + 1) & 1] = atomicAdd(finish.tile_counter, 1u);  // overlaps the loads
    const u64 begin = t * tile_packs, end = min(split.nvec, begin + tile_packs);
    Acc acc = t == 0 ? split.template edge<O, Acc>(in, n, threadIdx.x) : ident<O, Acc>();
    acc = apply<O>(acc, accumulate_packs<O, Acc, In, U, Deal::DynamicTiles>(vin, begin + threadIdx.x, end, blockDim.x));
    acc = block_reduce<O>(acc);
    if (threadIdx.x == 0) partials[t] = acc;
    __syncthreads();
  }
  ticket_collect<O>(tiles, out, finish);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define XR_BULK_COPY 1
// The copy engine's bulk copies into shared memory (sm_90), completing on an mbarrier.
__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(u64* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bar)) : "memory");
}
// Arms the barrier's phase for `bytes` and copies them from global `src` into shared `dst`
// (both 16-byte aligned, bytes a multiple of 16), streaming: L2 evict-first.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, u64* bar) {
  u64 policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
          smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar)), "l"(policy)
      : "memory");
}
// Completes the barrier's phase with no copy: the stage carries no data.
__device__ __forceinline__ void mbar_arrive(u64* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(u64* bar, unsigned phase) {
  unsigned done;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(smem_addr(bar)), "r"(phase)
                 : "memory");
  } while (!done);
}
#endif

// This thread's packs of one shared-memory stage, in a fixed order.
template <xr::Op O, class Acc, class In, u64 StagePacks>
__device__ __forceinline__ Acc reduce_stage(const Pack<In>* stage) {
  Acc acc = ident<O, Acc>();
#pragma unroll 4
  for (unsigned j = threadIdx.x; j < StagePacks; j += blockDim.x) {
    const Pack<In> r[1] = {stage[j]};
    acc = apply<O>(acc, reduce_packs<O, Acc>(r));
  }
  return acc;
}

// 12. bulk_copy (and auto from 64 MB to 1 GiB where the HBM reaches 4 TB/s): each block streams its
// own segment of whole stages through a ring of Stages shared-memory buffers that the copy engine
// fills (cp.async.bulk, one thread issuing, no registers held by loads in flight), and the threads
// reduce from shared memory; a ticket combines the blocks in block order. On an H200 the 16-byte
// loads of the rungs above stall at 4.1-4.3 TB/s where the bulk copies reach 4.4-4.6
// (docs/performance.md, "Bulk copies on the H200"). Packs after the last whole stage, and the misaligned head and tail, go
// through plain loads. Before sm_90 the segment is read with the streaming loads of auto's block
// segments instead.
template <class In, class Acc, xr::Op O, unsigned Stages, unsigned StageBytes>
__global__ void __launch_bounds__(1024)
    k_vec_bulk(const In* __restrict__ in, u64 n, Acc* __restrict__ out, FinishState finish) {
  constexpr u64 kStagePacks = StageBytes / 16;
  const PackSplit<In> split(in, n);
  const Pack<In>* vin = reinterpret_cast<const Pack<In>*>(in + split.head);
  const u64 stages = split.nvec / kStagePacks;
  const u64 tid = u64(blockIdx.x) * blockDim.x + threadIdx.x;
  Acc acc = split.template edge<O, Acc>(in, n, tid);
  acc = apply<O>(acc, accumulate_packs<O, Acc, In, 1, Deal::BlockSegments>(vin, stages * kStagePacks + tid, split.nvec,
                                                                         u64(gridDim.x) * blockDim.x));
  const u64 per_block = (stages + gridDim.x - 1) / gridDim.x;
  const u64 first = min(stages, blockIdx.x * per_block), last = min(stages, first + per_block);
#ifdef XR_BULK_COPY
  // The ring starts 128-byte aligned, as the measured bulk-copy kernel's did (dyn_shared's 16 bytes is
  // the least a bulk copy takes).
  extern __shared__ __align__(128) unsigned char xr_bulk_ring[];
  Pack<In>* ring = reinterpret_cast<Pack<In>*>(xr_bulk_ring);
  __shared__ __align__(8) u64 full[Stages];
  if (threadIdx.x == 0)
    for (unsigned b = 0; b < Stages; ++b) mbar_init(&full[b]);
  __syncthreads();
  if (threadIdx.x == 0)
    for (unsigned b = 0; b < Stages && first + b < last; ++b)
      bulk_load(ring + b * kStagePacks, vin + (first + b) * kStagePacks, StageBytes, &full[b]);
  for (u64 s = first, k = 0; s < last; ++s, ++k) {
    const unsigned b = k % Stages;
    mbar_wait(&full[b], (k / Stages) & 1);
    const Pack<In>* stage = ring + b * kStagePacks;
    acc = apply<O>(acc, reduce_stage<O, Acc, In, kStagePacks>(stage));
    __syncthreads();  // every thread is done with buffer b before it is refilled
    if (threadIdx.x == 0 && s + Stages < last)
      bulk_load(ring + b * kStagePacks, vin + (s + Stages) * kStagePacks, StageBytes, &full[b]);
  }
#else
  acc = apply<O>(acc, accumulate_packs<O, Acc, In, 4, Deal::BlockSegments>(vin, first * kStagePacks + threadIdx.x,
                                                                         last * kStagePacks, blockDim.x));
#endif
  acc = block_reduce<O>(acc);
  if (gridDim.x == 1) {
    if (threadIdx.x == 0) *out = acc;
  } else {
    finish_ticket<O>(acc, out, finish);
  }
}

// 13. bulk_tiles (and auto from 1 GiB where the HBM reaches 4 TB/s): bulk_copy's ring, fed with
// tiles of tile_stages stages that blocks draw from a counter (dynamic_tiles' balance). Thread 0
// issues the copies: it walks its current tile and draws the next one a tile ahead, so the ring
// never drains at a tile's end, and tags each ring buffer with its tile (or kNoTile: the block has
// drawn past the last tile). A tile's stages are summed in order into partial t; partial `tiles`
// holds the misaligned head, the tail and the packs after the last whole stage (block 0), and the
// last block combines the tiles + 1 partials in order: the bits depend on n and the block size
// only. Before sm_90 each tile is read with streaming loads.
template <class In, class Acc, xr::Op O, unsigned Stages, unsigned StageBytes>
__global__ void __launch_bounds__(1024)
    k_vec_bulk_tiles(const In* __restrict__ in, u64 n, u64 tile_stages, Acc* __restrict__ out, FinishState finish) {
  constexpr u64 kStagePacks = StageBytes / 16;
  const PackSplit<In> split(in, n);
  const Pack<In>* vin = reinterpret_cast<const Pack<In>*>(in + split.head);
  const u64 stages = split.nvec / kStagePacks;
  const u64 tiles = (stages + tile_stages - 1) / tile_stages;
  Acc* partials = static_cast<Acc*>(finish.partials);
  if (blockIdx.x == 0) {
    Acc edges = split.template edge<O, Acc>(in, n, threadIdx.x);
    edges = apply<O>(edges, accumulate_packs<O, Acc, In, 1, Deal::DynamicTiles>(vin, stages * kStagePacks + threadIdx.x,
                                                                               split.nvec, blockDim.x));
    edges = block_reduce<O>(edges);
    if (threadIdx.x == 0) partials[tiles] = edges;
  }
#ifdef XR_BULK_COPY
  constexpr unsigned kNoTile = ~0u;
  extern __shared__ __align__(128) unsigned char xr_bulk_ring[];
  Pack<In>* ring = reinterpret_cast<Pack<In>*>(xr_bulk_ring);
  __shared__ __align__(8) u64 full[Stages];
  __shared__ unsigned ring_tile[Stages];
  // Thread 0's walk: the tile it is issuing, the next stage of it, and the tile drawn after it.
  unsigned issuing = kNoTile, next_tile = kNoTile;
  u64 issue_stage = 0;
  const auto issue = [&](unsigned b) {
    if (issuing < tiles && issue_stage == min(stages, (u64(issuing) + 1) * tile_stages)) {
      issuing = next_tile;
      issue_stage = u64(issuing) * tile_stages;
      if (issuing < tiles) next_tile = atomicAdd(finish.tile_counter, 1u);
    }
    ring_tile[b] = issuing < tiles ? issuing : kNoTile;
    if (issuing < tiles) {
      bulk_load(ring + b * kStagePacks, vin + issue_stage * kStagePacks, StageBytes, &full[b]);
      ++issue_stage;
    } else {
      mbar_arrive(&full[b]);
    }
  };
  if (threadIdx.x == 0) {
    for (unsigned b = 0; b < Stages; ++b) mbar_init(&full[b]);
    issuing = atomicAdd(finish.tile_counter, 1u);
    issue_stage = u64(issuing) * tile_stages;
    if (issuing < tiles) next_tile = atomicAdd(finish.tile_counter, 1u);
    for (unsigned b = 0; b < Stages; ++b) issue(b);
  }
  __syncthreads();
  Acc acc = ident<O, Acc>();
  unsigned current = kNoTile;
  for (u64 k = 0;; ++k) {
    const unsigned b = k % Stages;
    mbar_wait(&full[b], (k / Stages) & 1);
    const unsigned t = ring_tile[b];
    if (t != current && current != kNoTile) {  // the tile before is complete
      acc = block_reduce<O>(acc);
      if (threadIdx.x == 0) partials[current] = acc;
      acc = ident<O, Acc>();
    }
    if (t == kNoTile) break;
    current = t;
    acc = apply<O>(acc, reduce_stage<O, Acc, In, kStagePacks>(ring + b * kStagePacks));
    __syncthreads();  // every thread is done with buffer b (and its tag) before it is refilled
    if (threadIdx.x == 0) issue(b);
  }
#else
  __shared__ unsigned drawn;
  for (;;) {
    if (threadIdx.x == 0) drawn = atomicAdd(finish.tile_counter, 1u);
    __syncthreads();
    const u64 t = drawn;
    if (t >= tiles) break;
    const u64 begin = t * tile_stages * kStagePacks, end = min(stages, (t + 1) * tile_stages) * kStagePacks;
    Acc acc = accumulate_packs<O, Acc, In, 4, Deal::DynamicTiles>(vin, begin + threadIdx.x, end, blockDim.x);
    acc = block_reduce<O>(acc);
    if (threadIdx.x == 0) partials[t] = acc;
    __syncthreads();
  }
#endif
  ticket_collect<O>(tiles + 1, out, finish);
}

}  // namespace xr::kern
