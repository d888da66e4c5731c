// Experiment behind the host path's chunk size, depth and staging strategy (bench/RESULTS.md,
// "Host path: choosing chunk size and depth"). Not built by CMake:
//   nvcc -O2 -std=c++17 -o /tmp/probe bench/probe_h2d.cu -lpthread && /tmp/probe
// Measures on one GPU: pinned and pageable host-to-device copy rates by chunk size, a pinned
// ring of D chunks in flight, multi-threaded memcpy from pageable into pinned memory,
// cudaHostRegister cost, and pread rates from a warm page cache.
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "probe_util.hpp"

#define CK(x) cuda_or_exit((x), #x)

int main() {
  const size_t total = size_t(1) << 30;  // 1 GiB: 2^28 f32
  char* pageable = static_cast<char*>(std::malloc(total));
  std::memset(pageable, 1, total);
  char* pinned = nullptr;
  CK(cudaHostAlloc(reinterpret_cast<void**>(&pinned), total, cudaHostAllocDefault));
  std::memset(pinned, 1, total);
  char* dev = nullptr;
  CK(cudaMalloc(&dev, total));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s, %u host threads\n", prop.name, std::thread::hardware_concurrency());

  // 1. One copy of the whole GiB.
  for (int pin = 1; pin >= 0; --pin) {
    std::vector<double> t;
    for (int r = 0; r < 5; ++r) {
      auto t0 = clk::now();
      CK(cudaMemcpyAsync(dev, pin ? pinned : pageable, total, cudaMemcpyHostToDevice, s));
      CK(cudaStreamSynchronize(s));
      t.push_back(since(t0));
    }
    std::printf("whole 1 GiB %-8s H2D: %6.1f GB/s\n", pin ? "pinned" : "pageable", total / median(t) / 1e9);
  }
  // 2. Pinned chunks back to back, and pageable chunks, by chunk size.
  for (size_t mib : {1, 4, 16, 64, 256}) {
    const size_t chunk = mib << 20;
    for (int pin = 1; pin >= 0; --pin) {
      std::vector<double> t;
      for (int r = 0; r < 3; ++r) {
        auto t0 = clk::now();
        for (size_t off = 0; off < total; off += chunk)
          CK(cudaMemcpyAsync(dev + off, (pin ? pinned : pageable) + off, chunk, cudaMemcpyHostToDevice, s));
        CK(cudaStreamSynchronize(s));
        t.push_back(since(t0));
      }
      std::printf("chunks of %3zu MiB %-8s H2D: %6.1f GB/s\n", mib, pin ? "pinned" : "pageable",
                  total / median(t) / 1e9);
    }
  }
  // 3. Multi-threaded memcpy pageable -> pinned (the staging fill), by threads and chunk.
  for (int threads : {1, 2, 4, 8, 16}) {
    std::vector<double> t;
    for (int r = 0; r < 3; ++r) {
      auto t0 = clk::now();
      for (size_t off = 0; off < total; off += size_t(64) << 20) par_copy(pinned + off, pageable + off, size_t(64) << 20, threads);
      t.push_back(since(t0));
    }
    std::printf("memcpy pageable->pinned, 64 MiB pieces, %2d threads: %6.1f GB/s\n", threads, total / median(t) / 1e9);
  }
  // 4. Staged pipeline: fill pinned ring slot (T threads) while the previous chunks copy.
  for (size_t mib : {8, 32, 64}) {
    for (int depth : {2, 3, 4}) {
      for (int threads : {4, 8}) {
        const size_t chunk = mib << 20;
        std::vector<cudaEvent_t> done(depth);
        for (auto& e : done) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        std::vector<double> t;
        for (int r = 0; r < 3; ++r) {
          auto t0 = clk::now();
          size_t k = 0;
          for (size_t off = 0; off < total; off += chunk, ++k) {
            const int slot = int(k % depth);
            if (k >= size_t(depth)) CK(cudaEventSynchronize(done[slot]));
            par_copy(pinned + slot * chunk, pageable + off, chunk, threads);
            CK(cudaMemcpyAsync(dev + off, pinned + slot * chunk, chunk, cudaMemcpyHostToDevice, s));
            CK(cudaEventRecord(done[slot], s));
          }
          CK(cudaStreamSynchronize(s));
          t.push_back(since(t0));
        }
        std::printf("staged ring: %2zu MiB x %d, %d fill threads: %6.1f GB/s\n", mib, depth, threads,
                    total / median(t) / 1e9);
        for (auto& e : done) cudaEventDestroy(e);
      }
    }
  }
  // 5. Registering the caller's memory.
  {
    std::vector<double> reg, unreg;
    for (int r = 0; r < 3; ++r) {
      auto t0 = clk::now();
      CK(cudaHostRegister(pageable, total, cudaHostRegisterDefault));
      reg.push_back(since(t0));
      auto t1 = clk::now();
      CK(cudaMemcpyAsync(dev, pageable, total, cudaMemcpyHostToDevice, s));
      CK(cudaStreamSynchronize(s));
      const double copy = since(t1);
      auto t2 = clk::now();
      CK(cudaHostUnregister(pageable));
      unreg.push_back(since(t2));
      if (r == 0) std::printf("registered copy: %6.1f GB/s\n", total / copy / 1e9);
    }
    std::printf("cudaHostRegister 1 GiB: %.1f ms, unregister %.1f ms (%.1f GB/s together)\n", median(reg) * 1e3,
                median(unreg) * 1e3, total / (median(reg) + median(unreg)) / 1e9);
  }
  // 6. pread from a warm page cache, by threads.
  {
    const char* path = "/tmp/probe_h2d.bin";
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    for (size_t off = 0; off < total;) off += size_t(write(fd, pageable + off, total - off));
    close(fd);
    fd = open(path, O_RDONLY);
    for (int threads : {1, 2, 4, 8}) {
      std::vector<double> t;
      for (int r = 0; r < 3; ++r) {
        auto t0 = clk::now();
        for (size_t off = 0; off < total; off += size_t(64) << 20) {
          std::vector<std::thread> ts;
          const size_t piece = (size_t(64) << 20) / threads;
          for (int i = 0; i < threads; ++i)
            ts.emplace_back([=] {
              size_t done = 0;
              while (done < piece) done += size_t(pread(fd, pinned + off + i * piece + done, piece - done, off + i * piece + done));
            });
          for (auto& x : ts) x.join();
        }
        t.push_back(since(t0));
      }
      std::printf("pread warm cache into pinned, %d threads: %6.1f GB/s\n", threads, total / median(t) / 1e9);
    }
    close(fd);
    unlink(path);
  }
  return 0;
}
