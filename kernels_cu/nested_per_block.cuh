// Rung 18, nested_per_block: the first recursive form of "Nested Reduction (Dynamic
// Parallelism)" (junstar92, after Professional CUDA C Programming): every block launches its
// own chain of child grids, each a single block that halves the block's values in place,
// rather than one launcher per level over the whole grid (nested.cuh). Written for CUDA 12+
// dynamic parallelism (CDP2), which has no device-side cudaDeviceSynchronize:
//  - the host launches the top grid; each block folds a grid-stride share of the input into
//    one value per thread, writes them to its own segment of `work` and halves them once;
//    after __syncthreads() (the child sees what its launching thread saw; the source's form
//    without the barrier is a race), thread 0 launches the block's first child into
//    cudaStreamFireAndForget, so a block's chain starts as soon as that block is done,
//    whatever the other blocks are doing;
//  - every child halves its segment again and launches the next child into
//    cudaStreamTailLaunch, which starts only after the launching grid has finished: no child
//    reads a value that is still being written. The last child writes the block's result;
//  - block 0 tail-launches the finish, k_nested over the per-block results. A grid's tail
//    launch starts only after the grid and all the work it launched into other streams has
//    completed, and a grid completes only with the grids it launched (its tail launch
//    included), so the finish starts after every chain's last child; the top grid never
//    reads a child's result.
// A child launch that fails (the device's pending-launch buffer is full) is replaced by the
// same halvings in the launching thread: the same operations in the same order, so the same
// bits. A failed finish launch traps: the call then fails with a device error instead of
// leaving *out unwritten. Needs separable compilation (-rdc) and cudadevrt.
#pragma once

#include "common.cuh"
#include "nested.cuh"

namespace xr::kern {

// One halving of m values: the first floor(m / 2) combine with the ceil(m / 2) above them.
__device__ __forceinline__ unsigned halving_keep(unsigned m) { return (m + 1) / 2; }

// The halvings of seg[0..m) down to one value, in one thread and in the children's order.
template <class Acc, xr::Op O> __device__ void halve_in_thread(Acc* seg, unsigned m, Acc* result) {
  for (; m > 1; m = halving_keep(m)) {
    const unsigned keep = halving_keep(m);
    for (unsigned t = 0; t + keep < m; ++t) seg[t] = apply<O>(load_cg(seg + t), load_cg(seg + t + keep));
  }
  *result = load_cg(seg);
}

template <class Acc, xr::Op O> __global__ void k_halve(Acc* seg, unsigned m, Acc* result);

// Launches the child that halves seg[0..m) (m >= 2) into `stream`; where the launch fails,
// halves them here. The caller's block must be past a __syncthreads() after its last write
// to seg.
template <class Acc, xr::Op O>
__device__ void launch_halving(Acc* seg, unsigned m, Acc* result, cudaStream_t stream) {
  k_halve<Acc, O><<<1, m / 2, 0, stream>>>(seg, m, result);
  if (cudaGetLastError() != cudaSuccess) halve_in_thread<Acc, O>(seg, m, result);
}

// A child of one block of floor(m / 2) threads: seg[t] = seg[t] op seg[t + ceil(m / 2)].
// seg was written by other grids: loads bypass L1.
template <class Acc, xr::Op O> __global__ void k_halve(Acc* seg, unsigned m, Acc* result) {
  const unsigned keep = halving_keep(m), t = threadIdx.x;
  const Acc v = apply<O>(load_cg(seg + t), load_cg(seg + t + keep));
  if (keep == 1) {
    *result = v;
    return;
  }
  seg[t] = v;
  __syncthreads();
  if (t == 0) launch_halving<Acc, O>(seg, keep, result, cudaStreamTailLaunch);
}

// The top grid (launched by the host). `work` holds gridDim.x * blockDim.x values; `partials`
// gridDim.x. With one block, its chain writes *out and there is no finish. The finish runs
// k_nested with blockDim.x threads (a multiple of 32) and uses `work` as its ping-pong
// buffers: every chain is done with it by then.
template <class In, class Acc, xr::Op O>
__global__ void k_nested_per_block(const In* __restrict__ in, u64 n, Acc* work, Acc* partials, Acc* out) {
  const unsigned t = threadIdx.x, block = blockDim.x;
  Acc acc = ident<O, Acc>();
  const u64 stride = u64(gridDim.x) * block;
  for (u64 i = u64(blockIdx.x) * block + t; i < n; i += stride) acc = apply<O>(acc, static_cast<Acc>(in[i]));
  Acc* seg = work + u64(blockIdx.x) * block;
  Acc* result = gridDim.x == 1 ? out : partials + blockIdx.x;
  seg[t] = acc;
  __syncthreads();
  const unsigned keep = halving_keep(block);
  if (t + keep < block) seg[t] = apply<O>(seg[t], seg[t + keep]);
  __syncthreads();
  if (t != 0) return;
  if (blockIdx.x == 0 && gridDim.x > 1) {
    const u64 chunk = u64(block) * kNestedPerThread;
    const unsigned blocks = static_cast<unsigned>((gridDim.x + chunk - 1) / chunk);
    k_nested<Acc, Acc, O><<<blocks, block, 0, cudaStreamTailLaunch>>>(partials, gridDim.x, work, work + blocks, out);
    if (cudaGetLastError() != cudaSuccess) __trap();
  }
  if (keep == 1) {
    *result = seg[0];
    return;
  }
  __threadfence();  // the block's writes, seen by this thread through the barrier, reach the device scope
  launch_halving<Acc, O>(seg, keep, result, cudaStreamFireAndForget);
}

}  // namespace xr::kern
