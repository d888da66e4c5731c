// Experiment behind the staging fill of the CUDA host path (not built by CMake):
//   nvcc -O2 -std=c++17 -o /tmp/probe_fill bench/probe_fill.cu -lpthread && /tmp/probe_fill
// The fill copies pageable memory into 2 pinned 64 MiB staging buffers. Measured: the fill
// alone and the staged ring (fill of chunk k+1 while chunk k copies to the device), 1 GiB per
// figure, for plain memcpy and for a copy with non-temporal (streaming) stores, which skip the
// read-for-ownership of the destination lines, by thread count.
#include <cuda_runtime_api.h>
#include <emmintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "probe_util.hpp"

#define CK(x) cuda_or_exit((x), #x)

// dst 64-byte aligned, bytes a multiple of 64 (true here).
static void copy_nt(char* dst, const char* src, size_t bytes) {
  for (size_t i = 0; i < bytes; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
  }
  _mm_sfence();
}

static void fill_staging(char* dst, const char* src, size_t bytes, int threads, bool nt) {
  if (nt) par_copy(dst, src, bytes, threads, copy_nt);
  else par_copy(dst, src, bytes, threads);
}

// Sums 4-byte words (a GPU reading host memory directly where the system allows it).
__global__ void k_touch(const unsigned* p, size_t n, unsigned long long* out) {
  unsigned long long s = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) s += p[i];
  atomicAdd(out, s);
}

int main() {
  const size_t total = size_t(1) << 30, chunk = size_t(64) << 20;
  char* pageable = static_cast<char*>(std::malloc(total));
  for (size_t i = 0; i < total; i += 4096) pageable[i] = char(i >> 12);
  std::memset(pageable, 1, total);
  char *staging = nullptr, *dev = nullptr;
  CK(cudaHostAlloc(reinterpret_cast<void**>(&staging), 2 * chunk, cudaHostAllocDefault));
  std::memset(staging, 0, 2 * chunk);
  CK(cudaMalloc(&dev, total));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t done[2];
  for (auto& e : done) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %u host threads; 1 GiB in 64 MiB chunks, 2 pinned staging buffers; GB/s, median of 5\n",
              prop.name, std::thread::hardware_concurrency());
  {
    std::vector<double> t;
    for (int r = 0; r < 5; ++r) {
      auto t0 = clk::now();
      for (size_t off = 0; off < total; off += chunk)
        CK(cudaMemcpyAsync(dev + off, staging + (off / chunk % 2) * chunk, chunk, cudaMemcpyHostToDevice, s));
      CK(cudaStreamSynchronize(s));
      t.push_back(since(t0));
    }
    std::printf("link (pinned H2D)                : %6.1f\n", total / median(t) / 1e9);
  }
  for (int nt = 0; nt <= 1; ++nt)
    for (int threads : {4, 8, 12, 16}) {
      std::vector<double> fill, ring;
      for (int r = 0; r < 5; ++r) {
        auto t0 = clk::now();
        for (size_t off = 0; off < total; off += chunk)
          fill_staging(staging + (off / chunk % 2) * chunk, pageable + off, chunk, threads, nt);
        fill.push_back(since(t0));
        t0 = clk::now();
        size_t k = 0;
        for (size_t off = 0; off < total; off += chunk, ++k) {
          const int slot = int(k % 2);
          if (k >= 2) CK(cudaEventSynchronize(done[slot]));
          fill_staging(staging + slot * chunk, pageable + off, chunk, threads, nt);
          CK(cudaMemcpyAsync(dev + off, staging + slot * chunk, chunk, cudaMemcpyHostToDevice, s));
          CK(cudaEventRecord(done[slot], s));
        }
        CK(cudaStreamSynchronize(s));
        ring.push_back(since(t0));
      }
      std::printf("%-8s %2d threads: fill %6.1f, staged ring %6.1f\n", nt ? "stream" : "memcpy", threads,
                  total / median(fill) / 1e9, total / median(ring) / 1e9);
    }
  // Pageable memory read by the GPU itself (HMM/ATS), where the device says it can.
  int pageable_access = 0, uses_host_pt = 0;
  CK(cudaDeviceGetAttribute(&pageable_access, cudaDevAttrPageableMemoryAccess, 0));
  CK(cudaDeviceGetAttribute(&uses_host_pt, cudaDevAttrPageableMemoryAccessUsesHostPageTables, 0));
  std::printf("pageableMemoryAccess %d, usesHostPageTables %d\n", pageable_access, uses_host_pt);
  if (pageable_access) {
    unsigned long long* sum;
    CK(cudaMalloc(&sum, 8));
    const size_t bytes = size_t(256) << 20;
    char* fresh = static_cast<char*>(std::malloc(bytes));
    std::memset(fresh, 1, bytes);
    auto t0 = clk::now();
    k_touch<<<1056, 256, 0, s>>>(reinterpret_cast<const unsigned*>(fresh), bytes / 4, sum);
    CK(cudaStreamSynchronize(s));
    const double first = since(t0);
    t0 = clk::now();
    k_touch<<<1056, 256, 0, s>>>(reinterpret_cast<const unsigned*>(fresh), bytes / 4, sum);
    CK(cudaStreamSynchronize(s));
    std::printf("kernel reading 256 MiB of malloc'd memory: first pass %.1f GB/s, second %.1f GB/s\n",
                bytes / first / 1e9, bytes / since(t0) / 1e9);
    char* fresh2 = static_cast<char*>(std::malloc(bytes));
    std::memset(fresh2, 1, bytes);
    t0 = clk::now();
    CK(cudaMemPrefetchAsync(fresh2, bytes, cudaMemLocation{cudaMemLocationTypeDevice, 0}, 0, s));
    CK(cudaStreamSynchronize(s));
    std::printf("cudaMemPrefetchAsync of 256 MiB of malloc'd memory to the device: %.1f GB/s\n",
                bytes / since(t0) / 1e9);
  }
  return 0;
}
