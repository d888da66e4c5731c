// Rung 17, nested (junstar92, "Nested Reduction (Dynamic Parallelism)"), rewritten for
// CUDA 12+ dynamic parallelism (CDP2), which has no device-side cudaDeviceSynchronize. The
// host launches level 0; each level reduces
// chunks of kNestedPerThread * blockDim.x elements to one partial per block, and thread 0 of
// block 0 launches the next level into cudaStreamTailLaunch. A tail launch starts only after
// the whole launching grid has finished, so no block ever reads another block's unfinished
// partial. The level with one block writes *out. Needs separable compilation (-rdc) and
// cudadevrt.
#pragma once

#include "common.cuh"

namespace xr::kern {

inline constexpr unsigned kNestedPerThread = 8;

// Reads in[0..n), writes one partial per block into `mine`; the next level reads `mine` and
// writes `other` (ping-pong: a level's input is dead once the level after it starts).
template <class In, class Acc, xr::Op O>
__global__ void k_nested(const In* __restrict__ in, u64 n, Acc* mine, Acc* other, Acc* out) {
  const u64 chunk = u64(blockDim.x) * kNestedPerThread;
  const u64 begin = u64(blockIdx.x) * chunk;
  const u64 end = begin + chunk < n ? begin + chunk : n;
  Acc acc = ident<O, Acc>();
  for (u64 i = begin + threadIdx.x; i < end; i += blockDim.x) acc = apply<O>(acc, static_cast<Acc>(in[i]));
  acc = block_reduce<O>(acc);
  if (threadIdx.x != 0) return;
  if (gridDim.x == 1) {
    *out = acc;
    return;
  }
  mine[blockIdx.x] = acc;
  if (blockIdx.x == 0) {
    const u64 m = gridDim.x;
    const unsigned blocks = static_cast<unsigned>((m + chunk - 1) / chunk);
    k_nested<Acc, Acc, O><<<blocks, blockDim.x, 0, cudaStreamTailLaunch>>>(mine, m, other, mine, out);
  }
}

}  // namespace xr::kern
