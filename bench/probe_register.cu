// Experiment for the pageable host path (not part of the build): can registering the
// caller's memory chunk by chunk, on several threads, ahead of the copies, beat the staging
// fill (a CPU memcpy into pinned buffers) that bounds today's pageable path?
//   nvcc -O2 -std=c++17 -arch=sm_90 -o /tmp/probe_register bench/probe_register.cu -lpthread
// Prints the link (pinned H2D), the fill, cudaHostRegister/Unregister rates by thread count,
// and a register-ahead pipeline end to end, for 4 KiB pages and for transparent huge pages.
#include <cuda_runtime_api.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "probe_util.hpp"

#define CK(x) cuda_or_exit((x), #x)

static const size_t kTotal = size_t(1) << 30;

char* alloc_pageable(bool huge) {
  void* p = nullptr;
  if (posix_memalign(&p, size_t(2) << 20, kTotal)) std::exit(1);
  madvise(p, kTotal, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  std::memset(p, 1, kTotal);
  return static_cast<char*>(p);
}

// Registers [0, kTotal) in `chunk` pieces from `threads` threads; then unregisters them the
// same way. Returns {register s, unregister s}.
std::pair<double, double> register_all(char* buf, size_t chunk, int threads, unsigned flags) {
  const size_t chunks = kTotal / chunk;
  std::atomic<size_t> next{0};
  auto t0 = clk::now();
  {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&] {
        for (size_t k; (k = next++) < chunks;) CK(cudaHostRegister(buf + k * chunk, chunk, flags));
      });
    for (auto& t : ts) t.join();
  }
  const double reg = since(t0);
  next = 0;
  t0 = clk::now();
  {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&] {
        for (size_t k; (k = next++) < chunks;) CK(cudaHostUnregister(buf + k * chunk));
      });
    for (auto& t : ts) t.join();
  }
  return {reg, since(t0)};
}

// The pipeline: `threads` workers register chunks in order, at most `ahead` chunks before the
// last one unregistered; the main thread copies each registered chunk to the device; one
// thread unregisters each chunk once its copy is done. Returns seconds for the whole GiB.
double register_pipeline(char* buf, char* dev, cudaStream_t s, size_t chunk, int threads, int ahead) {
  const size_t chunks = kTotal / chunk;
  std::vector<std::atomic<int>> ready(chunks), copied(chunks);
  std::vector<cudaEvent_t> ev(chunks);
  for (auto& e : ev) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  std::atomic<size_t> next{0}, released{0};
  auto t0 = clk::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      for (size_t k; (k = next++) < chunks;) {
        while (k >= released + ahead) std::this_thread::yield();
        CK(cudaHostRegister(buf + k * chunk, chunk, cudaHostRegisterDefault));
        ready[k] = 1;
      }
    });
  std::thread unreg([&] {
    for (size_t k = 0; k < chunks; ++k) {
      while (!copied[k]) std::this_thread::yield();
      CK(cudaEventSynchronize(ev[k]));
      CK(cudaHostUnregister(buf + k * chunk));
      ++released;
    }
  });
  for (size_t k = 0; k < chunks; ++k) {
    while (!ready[k]) std::this_thread::yield();
    CK(cudaMemcpyAsync(dev + k * chunk, buf + k * chunk, chunk, cudaMemcpyHostToDevice, s));
    CK(cudaEventRecord(ev[k], s));
    copied[k] = 1;
  }
  for (auto& t : ts) t.join();
  unreg.join();
  CK(cudaStreamSynchronize(s));
  const double sec = since(t0);
  for (auto& e : ev) cudaEventDestroy(e);
  return sec;
}

int main() {
  std::string thp;
  std::getline(std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"), thp);
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s; %u host threads; THP: %s\n", prop.name, std::thread::hardware_concurrency(), thp.c_str());
  char *pinned, *dev;
  CK(cudaHostAlloc(reinterpret_cast<void**>(&pinned), kTotal, cudaHostAllocDefault));
  std::memset(pinned, 1, kTotal);
  CK(cudaMalloc(&dev, kTotal));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto gbs = [](double sec) { return kTotal / sec / 1e9; };

  auto link = [&] {
    std::vector<double> t;
    for (int r = 0; r < 5; ++r) {
      auto t0 = clk::now();
      for (size_t off = 0; off < kTotal; off += size_t(64) << 20)
        CK(cudaMemcpyAsync(dev + off, pinned + off, size_t(64) << 20, cudaMemcpyHostToDevice, s));
      CK(cudaStreamSynchronize(s));
      t.push_back(since(t0));
    }
    return gbs(median(t));
  };
  std::printf("link (pinned H2D, 64 MiB chunks): %.1f GB/s\n", link());

  for (int huge = 0; huge <= 1; ++huge) {
    char* buf = alloc_pageable(huge);
    std::printf("== %s pages\n", huge ? "huge (MADV_HUGEPAGE)" : "4 KiB (MADV_NOHUGEPAGE)");
    {
      std::vector<double> t;
      for (int r = 0; r < 3; ++r) {
        auto t0 = clk::now();
        par_copy(pinned, buf, kTotal, 16);
        t.push_back(since(t0));
      }
      std::printf("fill: memcpy into pinned, 16 threads: %.1f GB/s\n", gbs(median(t)));
    }
    {
      auto t0 = clk::now();
      CK(cudaMemcpyAsync(dev, buf, kTotal, cudaMemcpyHostToDevice, s));
      CK(cudaStreamSynchronize(s));
      std::printf("pageable H2D through the driver, one call: %.1f GB/s\n", gbs(since(t0)));
    }
    for (unsigned flags : {unsigned(cudaHostRegisterDefault), unsigned(cudaHostRegisterReadOnly)}) {
      auto [reg, unreg] = register_all(buf, kTotal, 1, flags);
      std::printf("register whole GiB (flags %u): register %.1f ms (%.1f GB/s), unregister %.1f ms\n", flags,
                  reg * 1e3, gbs(reg), unreg * 1e3);
    }
    for (size_t mib : {16, 64}) {
      for (int threads : {1, 2, 4, 8, 16}) {
        auto [reg, unreg] = register_all(buf, mib << 20, threads, cudaHostRegisterDefault);
        std::printf("register %3zu MiB chunks, %2d threads: register %.1f GB/s, unregister %.1f GB/s\n", mib,
                    threads, gbs(reg), gbs(unreg));
      }
    }
    for (size_t mib : {16, 64}) {
      for (int threads : {2, 4, 8}) {
        for (int ahead : {4, 8}) {
          std::vector<double> t;
          for (int r = 0; r < 3; ++r) t.push_back(register_pipeline(buf, dev, s, mib << 20, threads, ahead));
          std::printf("register-ahead pipeline %3zu MiB chunks, %d threads, %d ahead: %.1f GB/s\n", mib, threads,
                      ahead, gbs(median(t)));
        }
      }
    }
    std::printf("link again: %.1f GB/s\n", link());
    std::free(buf);
  }
  return 0;
}
