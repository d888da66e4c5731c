// Rungs 11-13 (Bederian and Wolovick, "Curso de CUDA, parte 3"): the result is combined
// atomically into *out, which holds the identity beforehand. Native atomics for sums and
// integer min/max of 4 and 8 bytes; a CAS loop for products, float min/max and 1-byte
// accumulators (see atomic_combine).
// Float sums become order-dependent.
#pragma once

#include "common.cuh"

namespace xr::kern {

// 14. atomic_global: every element is one atomic on the same address (grid-stride loop).
template <class In, class Acc, xr::Op O>
__global__ void k_atomic_global(const In* __restrict__ in, u64 n, Acc* out) {
  const u64 stride = u64(gridDim.x) * blockDim.x;
  for (u64 i = u64(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    atomic_combine<O>(out, static_cast<Acc>(in[i]));
}

// 15. atomic_shared: every element is one shared-memory atomic on a per-block accumulator;
// one global atomic per block.
template <class In, class Acc, xr::Op O>
__global__ void k_atomic_shared(const In* __restrict__ in, u64 n, Acc* out) {
  __shared__ Acc block_acc;
  if (threadIdx.x == 0) block_acc = ident<O, Acc>();
  __syncthreads();
  const u64 stride = u64(gridDim.x) * blockDim.x;
  for (u64 i = u64(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    atomic_combine<O>(&block_acc, static_cast<Acc>(in[i]));
  __syncthreads();
  if (threadIdx.x == 0) atomic_combine<O>(out, block_acc);
}

// 16. tree_atomic: a register accumulator per thread, a shuffle tree per block, one global
// atomic per block. blockDim.x: multiple of 32.
template <class In, class Acc, xr::Op O>
__global__ void k_tree_atomic(const In* __restrict__ in, u64 n, Acc* out) {
  Acc acc = ident<O, Acc>();
  const u64 stride = u64(gridDim.x) * blockDim.x;
  for (u64 i = u64(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    acc = apply<O>(acc, static_cast<Acc>(in[i]));
  acc = block_reduce<O>(acc);
  if (threadIdx.x == 0) atomic_combine<O>(out, acc);
}

}  // namespace xr::kern
