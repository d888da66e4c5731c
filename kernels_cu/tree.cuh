// Rungs 1-6 of the ladder (Harris's "Optimizing Parallel Reduction in CUDA", as worked through
// in the Chinese notes "Parallel Reduction"): one value per block, a shared-memory tree.
// Every kernel takes (in, n, out) and writes out[blockIdx.x]; the host runs it again on the
// partials until one value remains. Block sizes: any 1..1024 for the first four, multiples of
// 32 for unroll_last_warp, 128/256/512 (template) for unroll_complete. Indices are 64-bit.
#pragma once

#include "common.cuh"

namespace xr::kern {

// Loads element i (or the identity past the end) into the accumulator type.
template <xr::Op O, class In, class Acc> __device__ __forceinline__ Acc load_or_ident(const In* in, u64 i, u64 n) {
  return i < n ? static_cast<Acc>(in[i]) : ident<O, Acc>();
}

// 1. interleaved_divergent: s[tid] += s[tid + st] when tid % (2 st) == 0. Divergent warps,
// slow modulo.
template <class In, class Acc, xr::Op O>
__global__ void k_interleaved_divergent(const In* __restrict__ in, u64 n, Acc* __restrict__ out) {
  Acc* s = dyn_shared<Acc>();
  const unsigned tid = threadIdx.x;
  s[tid] = load_or_ident<O, In, Acc>(in, u64(blockIdx.x) * blockDim.x + tid, n);
  __syncthreads();
  for (unsigned st = 1; st < blockDim.x; st *= 2) {
    if (tid % (2 * st) == 0 && tid + st < blockDim.x) s[tid] = apply<O>(s[tid], s[tid + st]);
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}

// 2. interleaved_strided: thread tid works on index 2*st*tid, so active threads are
// contiguous (no divergence) but the strided indices collide in shared-memory banks.
template <class In, class Acc, xr::Op O>
__global__ void k_interleaved_strided(const In* __restrict__ in, u64 n, Acc* __restrict__ out) {
  Acc* s = dyn_shared<Acc>();
  const unsigned tid = threadIdx.x;
  s[tid] = load_or_ident<O, In, Acc>(in, u64(blockIdx.x) * blockDim.x + tid, n);
  __syncthreads();
  for (unsigned st = 1; st < blockDim.x; st *= 2) {
    const unsigned idx = 2 * st * tid;
    if (idx + st < blockDim.x) s[idx] = apply<O>(s[idx], s[idx + st]);
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}

// Sequential-addressing tree over s[0..count) down to s[0..stop) (stop a power of two, may
// be 1): stride halves from pow2_ceil(count)/2, guarded so any count works.
template <xr::Op O, class Acc> __device__ __forceinline__ void seq_tree(Acc* s, unsigned count, unsigned stop) {
  const unsigned tid = threadIdx.x;
  for (unsigned st = pow2_ceil(count) / 2; st >= stop && st > 0; st >>= 1) {
    if (tid < st && tid + st < count) s[tid] = apply<O>(s[tid], s[tid + st]);
    __syncthreads();
  }
}

// 3. sequential: stride halves from blockDim/2; consecutive threads, conflict-free.
template <class In, class Acc, xr::Op O>
__global__ void k_sequential(const In* __restrict__ in, u64 n, Acc* __restrict__ out) {
  Acc* s = dyn_shared<Acc>();
  const unsigned tid = threadIdx.x;
  s[tid] = load_or_ident<O, In, Acc>(in, u64(blockIdx.x) * blockDim.x + tid, n);
  __syncthreads();
  seq_tree<O>(s, blockDim.x, 1);
  if (tid == 0) out[blockIdx.x] = s[0];
}

// Each thread combines two elements a block apart while loading (blocks cover 2*blockDim).
template <xr::Op O, class In, class Acc> __device__ __forceinline__ Acc load_two(const In* in, u64 n) {
  const u64 i = u64(blockIdx.x) * (2 * u64(blockDim.x)) + threadIdx.x;
  return apply<O>(load_or_ident<O, In, Acc>(in, i, n), load_or_ident<O, In, Acc>(in, i + blockDim.x, n));
}

// 4. first_add: half the blocks, no idle threads in the first step.
template <class In, class Acc, xr::Op O>
__global__ void k_first_add(const In* __restrict__ in, u64 n, Acc* __restrict__ out) {
  Acc* s = dyn_shared<Acc>();
  s[threadIdx.x] = load_two<O, In, Acc>(in, n);
  __syncthreads();
  seq_tree<O>(s, blockDim.x, 1);
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

// The last warp on shared memory without __syncthreads: s[0..count) with count <= 64 valid.
// Race-free on Volta and later: every read of a neighbour is separated from the writes by
// __syncwarp (Harris's volatile-only version relies on lockstep warps, which
// independent thread scheduling no longer guarantees). Called by threads 0..31 only.
template <xr::Op O, class Acc> __device__ __forceinline__ Acc last_warp_shared(Acc* s, unsigned count) {
  const unsigned tid = threadIdx.x;
  Acc v = s[tid];
  if (tid + 32 < count) v = apply<O>(v, s[tid + 32]);
  s[tid] = v;
  __syncwarp();
#pragma unroll
  for (unsigned off = 16; off > 0; off >>= 1) {
    Acc other = tid < off ? s[tid + off] : v;
    __syncwarp();
    if (tid < off) {
      v = apply<O>(v, other);
      s[tid] = v;
    }
    __syncwarp();
  }
  return v;
}

// 5. unroll_last_warp: the tree stops at 64 values; warp 0 finishes with __syncwarp only.
template <class In, class Acc, xr::Op O>
__global__ void k_unroll_last_warp(const In* __restrict__ in, u64 n, Acc* __restrict__ out) {
  Acc* s = dyn_shared<Acc>();
  s[threadIdx.x] = load_two<O, In, Acc>(in, n);
  __syncthreads();
  seq_tree<O>(s, blockDim.x, 64);  // leaves s[0..min(64, blockDim)) valid
  if (threadIdx.x < 32) {
    const Acc v = last_warp_shared<O>(s, blockDim.x < 64 ? blockDim.x : 64);
    if (threadIdx.x == 0) out[blockIdx.x] = v;
  }
}

// 6. unroll_complete: BS is a compile-time constant, every step is unrolled and the dead
// ones vanish.
template <unsigned BS, class In, class Acc, xr::Op O>
__global__ void __launch_bounds__(BS) k_unroll_complete(const In* __restrict__ in, u64 n, Acc* __restrict__ out) {
  static_assert(BS >= 64 && BS <= 1024 && (BS & (BS - 1)) == 0, "BS: power of two in [64, 1024]");
  Acc* s = dyn_shared<Acc>();
  const unsigned tid = threadIdx.x;
  {
    const u64 i = u64(blockIdx.x) * (2 * u64(BS)) + tid;
    s[tid] = apply<O>(load_or_ident<O, In, Acc>(in, i, n), load_or_ident<O, In, Acc>(in, i + BS, n));
  }
  __syncthreads();
  if constexpr (BS >= 1024) { if (tid < 512) s[tid] = apply<O>(s[tid], s[tid + 512]); __syncthreads(); }
  if constexpr (BS >= 512) { if (tid < 256) s[tid] = apply<O>(s[tid], s[tid + 256]); __syncthreads(); }
  if constexpr (BS >= 256) { if (tid < 128) s[tid] = apply<O>(s[tid], s[tid + 128]); __syncthreads(); }
  if constexpr (BS >= 128) { if (tid < 64) s[tid] = apply<O>(s[tid], s[tid + 64]); __syncthreads(); }
  if (tid < 32) {
    const Acc v = last_warp_shared<O>(s, 64);
    if (tid == 0) out[blockIdx.x] = v;
  }
}

}  // namespace xr::kern
