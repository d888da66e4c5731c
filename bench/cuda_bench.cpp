// auto against CUB (and optionally the whole ladder) on data already on the GPU, timed with
// CUDA events one call at a time (median of --repeat after --warmup), ratios from one run.
//
//   xr_cuda_bench                       auto vs cub, sum, i32/f32/f64, n = 2^10, 2^12, ..., 2^30
//   xr_cuda_bench --ladder 22 28        every rung, i32 sum, n = 2^22 and 2^28
//   options: --repeat R (default 20) --warmup W (default 5) --max-log2 L (default 30)
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "xreduce/cuda.hpp"
#include "xreduce/xreduce.hpp"

namespace {

struct Args {
  int repeat = 20, warmup = 5, max_log2 = 30;
  std::vector<int> ladder;
};

template <class T> struct Dev {
  T* p = nullptr;
  explicit Dev(std::uint64_t n) {
    const cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(T));
    if (e != cudaSuccess) throw std::runtime_error(std::string("cudaMalloc: ") + cudaGetErrorName(e));
    cudaMemset(p, 0, n * sizeof(T));  // zeros: the value does not change the timing
  }
  ~Dev() { cudaFree(p); }
};

template <class T> xr::Result time_one(const T* p, std::uint64_t n, const std::string& kernel, const Args& a) {
  xr::RunOptions o;
  o.kernel = kernel;
  o.repeat = a.repeat;
  o.warmup = a.warmup;
  return xr::cu::reduce(p, n, xr::Op::Sum, nullptr, o);
}

template <class T> void auto_vs_cub(const char* type, const Args& a) {
  std::printf("\n%s sum: auto vs cub\n%6s %12s %12s %8s %10s %10s %s\n", type, "log2n", "auto_us", "cub_us",
              "ratio", "auto_GB/s", "cub_GB/s", "check");
  Dev<T> d(std::uint64_t(1) << a.max_log2);
  for (int k = 10; k <= a.max_log2; k += 2) {
    const std::uint64_t n = std::uint64_t(1) << k;
    const auto au = time_one(d.p, n, "auto", a);
    const auto cb = time_one(d.p, n, "cub", a);
    const double ratio = au.kernel_ms / cb.kernel_ms;
    const char* verdict = ratio <= 1.0 ? ((k >= 14 && k <= 20 && ratio > 0.70) ? "> 0.70 (goal 2^14..2^20)" : "ok")
                                       : "SLOWER than cub";
    std::printf("%6d %12.2f %12.2f %8.3f %10.1f %10.1f %s\n", k, au.kernel_ms * 1e3, cb.kernel_ms * 1e3, ratio,
                au.bytes_per_s / 1e9, cb.bytes_per_s / 1e9, verdict);
  }
}

void ladder(int log2n, const Args& a) {
  const std::uint64_t n = std::uint64_t(1) << log2n;
  Dev<std::int32_t> d(n);
  std::printf("\nladder: i32 sum, n = 2^%d (%.0f MB)\n%-22s %10s %10s %8s %8s %4s %s\n", log2n, n * 4 / 1e6, "rung",
              "time_us", "GB/s", "step", "cumul", "L", "finish");
  double first = 0, prev = 0, cub = 0;
  for (const auto& k : xr::cu::kernels()) {
    Args b = a;
    if (k.name == "atomic_global" || k.name == "atomic_shared") {
      b.repeat = 3;  // serialised atomics: slow at 2^28
      b.warmup = 1;
    }
    const auto r = time_one(d.p, n, k.name, b);
    const double t = r.kernel_ms;
    if (first == 0) first = prev = t;
    if (k.name == "cub") cub = t;
    std::printf("%-22s %10.1f %10.1f %8.2f %8.2f %4d %s\n", r.kernel.c_str(), t * 1e3, r.bytes_per_s / 1e9,
                prev / t, first / t, r.launches, r.finish.c_str());
    if (k.kind == xr::KernelKind::Rung) prev = t;
  }
  if (cub > 0) std::printf("(step: against the previous rung; cumul: against the first rung)\n");
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto next = [&]() -> int {
      if (i + 1 >= argc) { std::fprintf(stderr, "xr_cuda_bench: %s needs a value\n", s.c_str()); std::exit(2); }
      return std::atoi(argv[++i]);
    };
    if (s == "--repeat") a.repeat = next();
    else if (s == "--warmup") a.warmup = next();
    else if (s == "--max-log2") a.max_log2 = next();
    else if (s == "--ladder") {
      while (i + 1 < argc && argv[i + 1][0] != '-') a.ladder.push_back(std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: xr_cuda_bench [--ladder L...] [--repeat R] [--warmup W] [--max-log2 L]\n");
      return 2;
    }
  }
  try {
    const auto st = xr::backend_status("cuda");
    if (!st.usable) {
      std::printf("SKIP cuda: %s\n", st.reason.c_str());
      return 77;
    }
    std::printf("device: %s (%s), repeat %d, warmup %d, CUDA events, one call at a time\n",
                st.devices[0].name.c_str(), st.devices[0].detail.c_str(), a.repeat, a.warmup);
    if (!a.ladder.empty()) {
      for (int k : a.ladder) ladder(k, a);
      return 0;
    }
    auto_vs_cub<std::int32_t>("i32", a);
    auto_vs_cub<float>("f32", a);
    auto_vs_cub<double>("f64", a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xr_cuda_bench: %s\n", e.what());
    return 3;
  }
  return 0;
}
