// The one-launch finish of single_pass and auto: every block's partial reaches one block,
// which combines them in block order (so the result does not depend on which block ends
// last). Measured on an H100 (docs/performance.md, "One launch"; f64 sum at 2^12..2^22): the
// ticket finish cost 1.2-2.0 us over a kernel that only stores its partials; the published
// slots 0.2-1.0 us less than the ticket (most at 2^20, 8 MB).
#pragma once

#include "common.cuh"

namespace xr::kern {

// A block's partial as its bit pattern (narrower types zero-extended) and the epoch of the
// launch that wrote it.
struct alignas(16) FinishSlot {
  u64 bits;
  u64 epoch;
};

// What the finish needs from the workspace: the published slots (one per block) and the epoch
// of the last launch that published (advanced on the device, so that a launch replayed from a
// CUDA graph still sees a new epoch); the ticket's partials (one per block, apart from the
// slots, so that no partial is ever read as an epoch) and counter (0 between launches).
struct FinishState {
  FinishSlot* slots;
  u64* epoch;
  void* partials;
  unsigned* counter;
  unsigned* tile_counter;  // dynamic_tiles: the next tile to draw (0 between launches)
};

template <class T> __device__ __forceinline__ u64 to_bits(T v) {
  u64 b = 0;
  __builtin_memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T> __device__ __forceinline__ T from_bits(u64 b) {
  T v;
  __builtin_memcpy(&v, &b, sizeof(T));
  return v;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define XR_PUBLISHED_FINISH 1

// One 128-bit atomic exchange: a reader never sees the epoch without its value.
__device__ __forceinline__ void publish(FinishSlot* s, u64 bits, u64 epoch) {
  asm volatile("{ .reg .b128 d, b; mov.b128 b, {%0, %1}; atom.relaxed.gpu.global.exch.b128 d, [%2], b; }" ::"l"(bits),
               "l"(epoch), "l"(s)
               : "memory");
}

// An atomic 128-bit read (compare-and-swap of {0, 0} with itself): a 16-byte vector load is
// not single-copy atomic in the PTX memory model.
__device__ __forceinline__ FinishSlot read_slot(FinishSlot* s) {
  FinishSlot r;
  asm volatile(
      "{ .reg .b128 d, c; mov.b128 c, {%2, %2}; atom.relaxed.gpu.global.cas.b128 d, [%3], c, c; "
      "mov.b128 {%0, %1}, d; }"
      : "=l"(r.bits), "=l"(r.epoch)
      : "l"(0ull), "l"(s)
      : "memory");
  return r;
}
#endif

// The epoch this launch publishes with (read at kernel start, so that the load overlaps the
// block's work). Only thread 0 of each block uses it.
template <bool Publish> __device__ __forceinline__ u64 launch_epoch(const FinishState& f) {
#ifdef XR_PUBLISHED_FINISH
  if constexpr (Publish) return threadIdx.x == 0 ? *f.epoch + 1 : 0;
#endif
  (void)f;
  return 0;
}

#ifdef XR_PUBLISHED_FINISH
// Each block publishes {partial, epoch} in its slot with one atomic; the last block in the
// grid (dispatched last, so most slots are full when it looks) waits for every slot to carry
// this launch's epoch, 32 ns between reads at first, at most 256 ns later on. No fence, no
// counter.
template <xr::Op O, class Acc>
__device__ __forceinline__ void finish_published(Acc acc, u64 epoch, Acc* out, const FinishState& f) {
  const unsigned collector = gridDim.x - 1;
  if (blockIdx.x != collector) {
    if (threadIdx.x == 0) publish(f.slots + blockIdx.x, to_bits(acc), epoch);
    return;
  }
  __shared__ Acc own;
  __shared__ u64 this_epoch;
  if (threadIdx.x == 0) {
    own = acc;
    this_epoch = epoch;
  }
  __syncthreads();
  Acc v = ident<O, Acc>();
  for (unsigned j = threadIdx.x; j < gridDim.x; j += blockDim.x) {
    if (j == collector) {
      v = apply<O>(v, own);
      continue;
    }
    FinishSlot s = read_slot(f.slots + j);
    for (unsigned pause = 32; s.epoch != this_epoch; pause = pause < 256 ? 2 * pause : pause) {
      __nanosleep(pause);
      s = read_slot(f.slots + j);
    }
    v = apply<O>(v, from_bits<Acc>(s.bits));
  }
  v = block_reduce<O>(v);
  if (threadIdx.x == 0) {
    *out = v;
    *f.epoch = this_epoch;
  }
}
#endif

// The ticket over `count` partials the blocks have stored in f.partials (in the order they
// are to be combined): each block fences and draws a ticket; the block that draws the last one
// combines the partials and resets the counters to 0 for the next launch. Eight loads in flight
// per thread, combined in index order, keep the result independent of who collects.
template <xr::Op O, class Acc> __device__ __forceinline__ void ticket_collect(u64 count, Acc* out, const FinishState& f) {
  const Acc* partials = static_cast<const Acc*>(f.partials);
  __shared__ bool is_last;
  if (threadIdx.x == 0) {
    __threadfence();
    is_last = atomicAdd(f.counter, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!is_last) return;
  __threadfence();
  constexpr unsigned kInFlight = 8;
  Acc v = ident<O, Acc>();
  u64 j = threadIdx.x;
  for (; j + (kInFlight - 1) * blockDim.x < count; j += kInFlight * blockDim.x) {
    Acc r[kInFlight];
#pragma unroll
    for (unsigned k = 0; k < kInFlight; ++k) r[k] = load_cg(partials + j + k * blockDim.x);
#pragma unroll
    for (unsigned k = 0; k < kInFlight; ++k) v = apply<O>(v, r[k]);
  }
  for (; j < count; j += blockDim.x) v = apply<O>(v, load_cg(partials + j));
  v = block_reduce<O>(v);
  if (threadIdx.x == 0) {
    *out = v;
    *f.counter = 0;
    if (f.tile_counter) *f.tile_counter = 0;
  }
}

// A ticket over one partial per block (acc: this block's, valid in thread 0).
template <xr::Op O, class Acc> __device__ __forceinline__ void finish_ticket(Acc acc, Acc* out, const FinishState& f) {
  if (threadIdx.x == 0) static_cast<Acc*>(f.partials)[blockIdx.x] = acc;
  ticket_collect<O>(gridDim.x, out, f);
}

// Combines the blocks' partials (acc: this block's, valid in thread 0) into *out, in block
// order; every thread of every block calls it. gridDim.x > 1. Publish: published slots where
// the device has 128-bit atomics (sm_90+), else the ticket. The ticket never spins, so it
// serves where the finish's microsecond does not matter (inputs streamed from HBM): on an H100
// (docs/performance.md, "One launch"), auto's block segments with the published finish ran at
// 1.003-1.024 of CUB's time at 2^29..2^30 elements, with this ticket at 0.99-1.006.
template <xr::Op O, bool Publish, class Acc>
__device__ __forceinline__ void finish_blocks(Acc acc, u64 epoch, Acc* out, const FinishState& f) {
#ifdef XR_PUBLISHED_FINISH
  if constexpr (Publish) {
    finish_published<O>(acc, epoch, out, f);
    return;
  }
#endif
  (void)epoch;
  finish_ticket<O>(acc, out, f);
}

}  // namespace xr::kern
