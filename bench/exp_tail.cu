// Experiment for auto at large n (not part of the build): where does the last percent go?
//  1. How unevenly do auto's static block segments finish? One instrumented launch records
//     each block's start and end (globaltimer) and SM.
//  2. Dynamic tiles: blocks draw fixed-size tiles from a global counter, so fast SMs take
//     more of the input and no block waits at the end for a slow one.
//  3. Bulk copies (TMA, cp.async.bulk) into a ring of shared-memory stages per block.
// All against cub::DeviceReduce::Sum, interleaved, CUDA events, medians; i32 sum into i64.
//   nvcc -O3 -std=c++17 -arch=sm_90 bench/exp_tail.cu -o /tmp/exp_tail && /tmp/exp_tail
#include <cub/cub.cuh>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "probe_util.hpp"

#define CK(x) cuda_or_exit((x), #x)

using u64 = unsigned long long;

__device__ __forceinline__ int4 load_stream(const int4* p) {
  int4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.s32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
__device__ __forceinline__ long long sum4(int4 r) { return (long long)r.x + r.y + r.z + r.w; }

__device__ __forceinline__ u64 globaltimer() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned smid() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

// Block reduce of 256 threads, then one atomic per block into *out.
__device__ __forceinline__ void block_add(long long acc, unsigned long long* out) {
  for (int o = 16; o; o >>= 1) acc += __shfl_down_sync(~0u, acc, o);
  __shared__ long long w[32];
  if ((threadIdx.x & 31) == 0) w[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    long long s = 0;
    for (unsigned k = 0; k < blockDim.x / 32; ++k) s += w[k];
    atomicAdd(out, (unsigned long long)s);
  }
}

// [begin, end) of packs, U loads of 16 bytes in flight per thread, block-strided.
template <int U> __device__ __forceinline__ long long sum_range(const int4* in, u64 begin, u64 end) {
  long long acc = 0;
  u64 i = begin + threadIdx.x;
  const u64 step = blockDim.x;
  for (; i + (U - 1) * step < end; i += U * step) {
    int4 r[U];
#pragma unroll
    for (int u = 0; u < U; ++u) r[u] = load_stream(in + i + u * step);
#pragma unroll
    for (int u = 0; u < U; ++u) acc += sum4(r[u]);
  }
  for (; i < end; i += step) acc += sum4(load_stream(in + i));
  return acc;
}

// auto's layout today: one contiguous segment per block, rounded to whole tiles.
template <int U, bool Trace>
__global__ void __launch_bounds__(256) k_static(const int4* in, u64 nvec, unsigned long long* out, u64* trace) {
  const u64 t0 = Trace ? globaltimer() : 0;
  const u64 tile = u64(blockDim.x) * U;
  const u64 seg = (nvec + gridDim.x - 1) / gridDim.x;
  const u64 per = (seg + tile - 1) / tile * tile;
  const u64 begin = blockIdx.x * per;
  const u64 end = begin < nvec ? min(nvec, begin + per) : begin;
  block_add(sum_range<U>(in, begin, end), out);
  if (Trace && threadIdx.x == 0) {
    trace[3 * blockIdx.x] = t0;
    trace[3 * blockIdx.x + 1] = globaltimer();
    trace[3 * blockIdx.x + 2] = smid();
  }
}

// Dynamic tiles: thread 0 draws the next tile while the block sums the current one. The
// counter only grows: launch k subtracts `base`, the draws of all launches before it.
template <int U>
__global__ void __launch_bounds__(256)
    k_dynamic(const int4* in, u64 nvec, u64 tile, unsigned long long* counter, u64 base, unsigned long long* out) {
  __shared__ u64 next;
  if (threadIdx.x == 0) next = atomicAdd(counter, 1ull) - base;
  __syncthreads();
  long long acc = 0;
  for (;;) {
    const u64 t = next;
    __syncthreads();
    if (t * tile >= nvec) break;
    u64 ahead = 0;
    if (threadIdx.x == 0) ahead = atomicAdd(counter, 1ull) - base;
    acc += sum_range<U>(in, t * tile, min(nvec, (t + 1) * tile));
    if (threadIdx.x == 0) next = ahead;
    __syncthreads();
  }
  block_add(acc, out);
}


// Hybrid: each block first sums its own segment of the first `static_packs` packs (a whole
// number of tiles per block), then draws tiles of the rest from the counter. Each drawn tile
// is reduced on its own (a block reduce per tile), as a deterministic library version must.
template <int U>
__global__ void __launch_bounds__(256) k_hybrid(const int4* in, u64 nvec, u64 per_block, u64 tile,
                                                unsigned long long* counter, u64 base, unsigned long long* out) {
  const u64 static_packs = per_block * gridDim.x;
  long long acc = sum_range<U>(in, blockIdx.x * per_block, (blockIdx.x + 1) * per_block);
  block_add(acc, out);
  __shared__ u64 next;
  for (;;) {
    __syncthreads();
    if (threadIdx.x == 0) next = atomicAdd(counter, 1ull) - base;
    __syncthreads();
    const u64 begin = static_packs + next * tile;
    if (begin >= nvec) break;
    block_add(sum_range<U>(in, begin, min(nvec, begin + tile)), out);
  }
}

// ---- bulk copies into shared memory (sm_90) ------------------------------------------------
__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(u64* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect(u64* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(u64* bar, unsigned phase) {
  unsigned done;
  do {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(phase)
        : "memory");
  } while (!done);
}
template <bool EvictFirst>
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, u64* bar) {
  if constexpr (EvictFirst) {
    u64 policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
            smem_addr(dst)),
        "l"(src), "r"(bytes), "r"(smem_addr(bar)), "l"(policy)
        : "memory");
  } else {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(smem_addr(bar))
                 : "memory");
  }
}

// Static segments of whole stages; thread 0 keeps Stages bulk copies of StageBytes in flight.
// The input is a whole number of stages here (the experiment's sizes are powers of two).
template <int Stages, int StageBytes, bool EvictFirst>
__global__ void __launch_bounds__(256) k_tma(const char* in, u64 bytes, unsigned long long* out) {
  extern __shared__ __align__(128) unsigned char ring[];
  __shared__ __align__(8) u64 full[Stages];
  const u64 tiles = bytes / StageBytes;
  const u64 per = (tiles + gridDim.x - 1) / gridDim.x;
  const u64 t0 = blockIdx.x * per, t1 = min(tiles, t0 + per);
  if (threadIdx.x == 0)
    for (int s = 0; s < Stages; ++s) mbar_init(&full[s], 1);
  __syncthreads();
  if (threadIdx.x == 0)
    for (int s = 0; s < Stages && t0 + s < t1; ++s) {
      mbar_expect(&full[s], StageBytes);
      bulk_load<EvictFirst>(ring + s * StageBytes, in + (t0 + s) * StageBytes, StageBytes, &full[s]);
    }
  long long acc = 0;
  for (u64 t = t0, k = 0; t < t1; ++t, ++k) {
    const int s = k % Stages;
    mbar_wait(&full[s], (k / Stages) & 1);
    const int4* p = reinterpret_cast<const int4*>(ring + s * StageBytes);
#pragma unroll
    for (int j = 0; j < StageBytes / 16 / 256; ++j) acc += sum4(p[threadIdx.x + j * 256]);
    __syncthreads();
    if (threadIdx.x == 0 && t + Stages < t1) {
      mbar_expect(&full[s], StageBytes);
      bulk_load<EvictFirst>(ring + s * StageBytes, in + (t + Stages) * StageBytes, StageBytes, &full[s]);
    }
  }
  block_add(acc, out);
}

struct Variant {
  std::string name;
  std::function<void()> run;
};

int main(int argc, char** argv) {
  const int lo = argc > 1 ? std::atoi(argv[1]) : 27, hi = argc > 2 ? std::atoi(argv[2]) : 30;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 25;
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s, %d SMs, L2 %d MB\n", prop.name, sms, prop.l2CacheSize >> 20);
  unsigned long long *out, *counter;
  u64* trace;
  CK(cudaMalloc(&out, 8));
  CK(cudaMalloc(&counter, 8));
  CK(cudaMemset(counter, 0, 8));
  CK(cudaMalloc(&trace, 3 * 8 * 65536));
  u64 base = 0;

  auto tma_setup = [](auto kernel, int smem) {
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 256, smem));
    return per_sm;
  };
  const int tma4x16 = tma_setup(k_tma<4, 16384, false>, 4 * 16384);
  const int tma4x16e = tma_setup(k_tma<4, 16384, true>, 4 * 16384);
  const int tma8x8 = tma_setup(k_tma<8, 8192, false>, 8 * 8192);
  const int tma6x32 = tma_setup(k_tma<6, 32768, false>, 6 * 32768);
  std::printf("tma blocks/SM: 4x16K %d, 8x8K %d, 6x32K %d\n", tma4x16, tma8x8, tma6x32);

  for (int e = lo; e <= hi; ++e) {
    const u64 n = u64(1) << e, nvec = n / 4;
    int* d;
    CK(cudaMalloc(&d, n * 4));
    std::vector<int> h(n);
    long long want = 0;
    for (u64 i = 0; i < n; ++i) {
      h[i] = int((i * 2654435761u) >> 20) - 2048;
      want += h[i];
    }
    CK(cudaMemcpy(d, h.data(), n * 4, cudaMemcpyHostToDevice));
    size_t temp_bytes = 0;
    long long* cub_out;
    CK(cudaMalloc(&cub_out, 8));
    cub::DeviceReduce::Sum(nullptr, temp_bytes, d, cub_out, n);
    void* temp;
    CK(cudaMalloc(&temp, temp_bytes));
    const int4* v = reinterpret_cast<const int4*>(d);
    const int g8 = sms * 8;
    auto dyn = [&](u64 tile_packs, int grid) {
      return [=, &base] {
        k_dynamic<4><<<grid, 256>>>(v, nvec, tile_packs, counter, base, out);
        base += (nvec + tile_packs - 1) / tile_packs + grid;
      };
    };
    // Static share: `num/den` of the input in whole tiles per block; the rest in drawn tiles.
    auto hybrid = [&](u64 tile_packs, int grid, int num, int den) {
      const u64 per_block = nvec * num / den / grid / tile_packs * tile_packs;
      const u64 rest = nvec - per_block * grid;
      return [=, &base] {
        k_hybrid<4><<<grid, 256>>>(v, nvec, per_block, tile_packs, counter, base, out);
        base += (rest + tile_packs - 1) / tile_packs + grid;
      };
    };
    std::vector<Variant> vs = {
        {"cub", [&] { cub::DeviceReduce::Sum(temp, temp_bytes, d, cub_out, n); }},
        {"static", [&] { k_static<4, false><<<g8, 256>>>(v, nvec, out, trace); }},
        {"dyn 256K g4", dyn(16384, sms * 4)},
        {"hyb 7/8 16K", hybrid(1024, g8, 7, 8)},
        {"hyb 7/8 64K", hybrid(4096, g8, 7, 8)},
        {"hyb 3/4 16K", hybrid(1024, g8, 3, 4)},
        {"hyb 3/4 64K", hybrid(4096, g8, 3, 4)},
        {"hyb 3/4 64K g4", hybrid(4096, sms * 4, 3, 4)},
        {"hyb 1/2 64K", hybrid(4096, g8, 1, 2)},
        {"tma 4x16K ef", [&] { k_tma<4, 16384, true><<<sms * tma4x16e, 256, 4 * 16384>>>((const char*)d, n * 4, out); }},
    };
    // Correctness: every variant once from a zeroed accumulator.
    for (size_t j = 1; j < vs.size(); ++j) {
      CK(cudaMemset(out, 0, 8));
      vs[j].run();
      CK(cudaDeviceSynchronize());
      long long got = 0;
      CK(cudaMemcpy(&got, out, 8, cudaMemcpyDeviceToHost));
      if (got != want) std::printf("WRONG %s at 2^%d: %lld != %lld\n", vs[j].name.c_str(), e, got, want);
    }
    // Tail of the static segments: one traced launch.
    k_static<4, true><<<g8, 256>>>(v, nvec, out, trace);
    CK(cudaDeviceSynchronize());
    std::vector<u64> tr(3 * g8);
    CK(cudaMemcpy(tr.data(), trace, tr.size() * 8, cudaMemcpyDeviceToHost));
    u64 first = ~0ull, last = 0;
    std::vector<double> ends;
    std::vector<double> sm_end(sms, 0);
    for (int b = 0; b < g8; ++b) {
      first = std::min(first, tr[3 * b]);
      last = std::max(last, tr[3 * b + 1]);
    }
    for (int b = 0; b < g8; ++b) {
      const double t = double(tr[3 * b + 1] - first) / double(last - first);
      ends.push_back(t);
      sm_end[tr[3 * b + 2] % sms] = std::max(sm_end[tr[3 * b + 2] % sms], t);
    }
    std::sort(ends.begin(), ends.end());
    std::sort(sm_end.begin(), sm_end.end());
    std::printf("2^%d static trace: span %.1f us; block ends at %% of span: min %.1f p10 %.1f p50 %.1f p90 %.1f; "
                "SM last-block ends: min %.1f p50 %.1f\n",
                e, (last - first) / 1e3, 100 * ends[0], 100 * ends[g8 / 10], 100 * ends[g8 / 2], 100 * ends[g8 * 9 / 10],
                100 * sm_end[0], 100 * sm_end[sms / 2]);

    const auto med = interleaved_medians(int(vs.size()), rounds + 3, 3, [&](int w) { vs[w].run(); }, [](int, int) {});
    std::printf("2^%d i32 (%.2f GB): cub %.1f us = %.0f GB/s; ratio to cub:", e, n * 4 / 1e9, med[0] * 1e3,
                n * 4 / (med[0] * 1e-3) / 1e9);
    for (size_t j = 1; j < vs.size(); ++j) std::printf("  %s %.3f", vs[j].name.c_str(), med[j] / med[0]);
    std::printf("\n");
    cudaFree(temp);
    cudaFree(cub_out);
    cudaFree(d);
  }
  return 0;
}
