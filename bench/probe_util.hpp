// Helpers shared by the hand-built experiments in bench/ (probe_*.cu/.cpp, exp_*.cu): wall
// clock, median, a threaded copy and, in CUDA files, interleaved event timing.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

using clk = std::chrono::steady_clock;
inline double since(clk::time_point t) { return std::chrono::duration<double>(clk::now() - t).count(); }

template <class T> T median(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// copy(dst, src, bytes) over `threads` page-aligned pieces, one thread each.
template <class Copy> void par_copy(char* dst, const char* src, size_t bytes, int threads, Copy copy) {
  std::vector<std::thread> ts;
  const size_t piece = (bytes / threads + 4095) & ~size_t(4095);
  for (int t = 0; t < threads; ++t) {
    const size_t a = std::min(bytes, t * piece), b = std::min(bytes, a + piece);
    if (a < b) ts.emplace_back([=] { copy(dst + a, src + a, b - a); });
  }
  for (auto& t : ts) t.join();
}
inline void par_copy(char* dst, const char* src, size_t bytes, int threads) {
  par_copy(dst, src, bytes, threads, [](char* d, const char* s, size_t n) { std::memcpy(d, s, n); });
}

#ifdef __CUDACC__
inline void cuda_or_exit(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::printf("%s: %s\n", what, cudaGetErrorName(e));
    std::exit(1);
  }
}

// Runs run(v) for every variant v, `rounds` times, rotating which goes first, each between two
// CUDA events on the default stream; after(v, round) follows each run. Returns each variant's
// median ms over the rounds after the first `skip`.
template <class Run, class After>
std::vector<float> interleaved_medians(int variants, int rounds, int skip, Run run, After after) {
  cudaEvent_t a, b;
  cuda_or_exit(cudaEventCreate(&a), "cudaEventCreate");
  cuda_or_exit(cudaEventCreate(&b), "cudaEventCreate");
  std::vector<std::vector<float>> t(variants);
  for (int r = 0; r < rounds; ++r)
    for (int j = 0; j < variants; ++j) {
      const int w = (j + r) % variants;
      cuda_or_exit(cudaEventRecord(a), "cudaEventRecord");
      run(w);
      cuda_or_exit(cudaEventRecord(b), "cudaEventRecord");
      cuda_or_exit(cudaEventSynchronize(b), "cudaEventSynchronize");
      float ms = 0;
      cuda_or_exit(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
      if (r >= skip) t[w].push_back(ms);
      after(w, r);
    }
  cuda_or_exit(cudaGetLastError(), "a launch");
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::vector<float> med;
  for (auto& v : t) med.push_back(median(v));
  return med;
}
#endif
