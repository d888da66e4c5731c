// Tuning experiment for auto at large n (not part of the build): the load loop with 4 or 8
// 16-byte loads in flight, with and without the L2::256B prefetch hint, against
// cub::DeviceReduce::Sum, interleaved, CUDA events, median. i32 sum into i64.
//   nvcc -O3 -std=c++17 -arch=sm_90 bench/exp_large_n.cu -o /tmp/exp && /tmp/exp
#include <cub/cub.cuh>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "probe_util.hpp"

#define CK(x) cuda_or_exit((x), #x)

template <bool Hint> __device__ __forceinline__ int4 load16(const int4* p) {
  if constexpr (Hint) {
    int4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.s32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
  } else {
    return __ldg(p);
  }
}

template <int U, bool Hint>
__global__ void __launch_bounds__(256) k_sum(const int4* in, unsigned long long nvec, long long* partials) {
  const unsigned long long tile = 256ull * U;
  const unsigned long long seg = (nvec + gridDim.x - 1) / gridDim.x;
  const unsigned long long per = (seg + tile - 1) / tile * tile;
  const unsigned long long begin = blockIdx.x * per;
  const unsigned long long end = begin < nvec ? min(nvec, begin + per) : begin;
  long long acc = 0;
  unsigned long long i = begin + threadIdx.x;
  for (; i + (U - 1) * 256ull < end; i += U * 256ull) {
    int4 r[U];
#pragma unroll
    for (int u = 0; u < U; ++u) r[u] = load16<Hint>(in + i + u * 256ull);
#pragma unroll
    for (int u = 0; u < U; ++u) acc += (long long)r[u].x + r[u].y + r[u].z + r[u].w;
  }
  for (; i < end; i += 256) {
    int4 r = load16<Hint>(in + i);
    acc += (long long)r.x + r.y + r.z + r.w;
  }
  for (int o = 16; o; o >>= 1) acc += __shfl_down_sync(~0u, acc, o);
  __shared__ long long w[8];
  if ((threadIdx.x & 31) == 0) w[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    long long s = 0;
    for (int k = 0; k < 8; ++k) s += w[k];
    partials[blockIdx.x] = s;
  }
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int grid = sms * 8;
  long long *partials, *out;
  CK(cudaMalloc(&partials, grid * sizeof(long long)));
  CK(cudaMalloc(&out, sizeof(long long)));
  for (int e = 26; e <= 30; ++e) {
    const size_t n = size_t(1) << e;
    int* d;
    CK(cudaMalloc(&d, n * 4));
    std::vector<int> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = int((i * 2654435761u) >> 20) - 2048;
    CK(cudaMemcpy(d, h.data(), n * 4, cudaMemcpyHostToDevice));
    size_t temp_bytes = 0;
    cub::DeviceReduce::Sum(nullptr, temp_bytes, d, out, n);
    void* temp;
    CK(cudaMalloc(&temp, temp_bytes));
    const int4* v = reinterpret_cast<const int4*>(d);
    auto run = [&](int which) {
      switch (which) {
        case 0: cub::DeviceReduce::Sum(temp, temp_bytes, d, out, n); break;
        case 1: k_sum<4, false><<<grid, 256>>>(v, n / 4, partials); break;
        case 2: k_sum<8, false><<<grid, 256>>>(v, n / 4, partials); break;
        case 3: k_sum<4, true><<<grid, 256>>>(v, n / 4, partials); break;
        case 4: k_sum<8, true><<<grid, 256>>>(v, n / 4, partials); break;
      }
    };
    const std::vector<float> med = interleaved_medians(5, 43, 3, run, [](int, int) {});
    std::printf("2^%d i32: cub %.1f us (%.0f GB/s); ratio to cub: U4 %.3f  U8 %.3f  U4+L2::256B %.3f  U8+L2::256B %.3f\n",
                e, med[0] * 1e3, n * 4 / (med[0] * 1e-3) / 1e9, med[1] / med[0], med[2] / med[0], med[3] / med[0],
                med[4] / med[0]);
    cudaFree(temp);
    cudaFree(d);
  }
  return 0;
}
