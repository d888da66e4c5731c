// auto against cub::DeviceReduce on data already on the GPU, n = 2^lo .. 2^hi, per type.
// Each round calls auto once and cub once (alternating which goes first), each timed by the
// backend between CUDA events; rows report medians over the rounds and their ratio.
//
//   xr_bench_auto_vs_cub [--types i32,f32,f64] [--lo 10] [--hi 30] [--op sum]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "xreduce/cuda.hpp"
#include "xreduce/xreduce.hpp"

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "xr_bench_auto_vs_cub: %s: %s\n", what, cudaGetErrorName(e));
    std::exit(2);
  }
}

// The datasheet bandwidth the issue measures against, by device name (GB/s).
double datasheet_gbps(const std::string& name) {
  if (name.find("H200") != std::string::npos) return 4300;
  if (name.find("H100") != std::string::npos) return 3000;
  return 0;
}

int rounds_for(std::uint64_t n) { return n <= (1u << 20) ? 200 : n <= (1u << 26) ? 50 : 15; }

template <class T> void sweep(xr::Op op, int lo, int hi, double peak) {
  const std::uint64_t max_n = std::uint64_t(1) << hi;
  const xr::HostBuffer host = xr::generate(xr::dtype_of<T>, max_n, xr::Dist::Uniform, 1);
  T* dev = nullptr;
  check(cudaMalloc(&dev, max_n * sizeof(T)), "cudaMalloc");
  check(cudaMemcpy(dev, host.data(), max_n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
  for (int e = lo; e <= hi; e += 1) {
    const std::uint64_t n = std::uint64_t(1) << e;
    std::vector<double> t_auto, t_cub;
    xr::Result r_auto, r_cub;
    xr::RunOptions o_auto, o_cub;
    o_auto.kernel = "auto";
    o_cub.kernel = "cub";
    o_auto.warmup = o_cub.warmup = 0;
    for (int w = 0; w < 3; ++w) {
      xr::cu::reduce(dev, n, op, nullptr, o_auto);
      xr::cu::reduce(dev, n, op, nullptr, o_cub);
    }
    const int rounds = rounds_for(n);
    for (int k = 0; k < rounds; ++k) {
      if (k % 2) {
        r_auto = xr::cu::reduce(dev, n, op, nullptr, o_auto);
        r_cub = xr::cu::reduce(dev, n, op, nullptr, o_cub);
      } else {
        r_cub = xr::cu::reduce(dev, n, op, nullptr, o_cub);
        r_auto = xr::cu::reduce(dev, n, op, nullptr, o_auto);
      }
      t_auto.push_back(r_auto.kernel_ms);
      t_cub.push_back(r_cub.kernel_ms);
    }
    const double a = xr::median(t_auto), c = xr::median(t_cub);
    const double gbps_a = n * sizeof(T) / (a * 1e-3) / 1e9, gbps_c = n * sizeof(T) / (c * 1e-3) / 1e9;
    const bool same = xr::is_float(xr::dtype_of<T>)
                          ? std::abs(r_auto.value.to_double() - r_cub.value.to_double()) <=
                                1e-5 * std::max(1.0, std::abs(r_cub.value.to_double()))
                          : r_auto.value.i == r_cub.value.i;
    std::printf("%-4s 2^%-3d %10.2f %10.2f %7.3f %9.1f %9.1f %7s %3d %-5s %s\n",
                std::string(xr::to_string(xr::dtype_of<T>)).c_str(), e, a * 1e3, c * 1e3, a / c, gbps_a, gbps_c,
                peak > 0 ? (std::to_string(static_cast<int>(100 * gbps_a / peak + 0.5)) + "%").c_str() : "-",
                r_auto.launches, same ? "yes" : "NO", r_auto.kernel.c_str());
    std::fflush(stdout);
  }
  cudaFree(dev);
}

}  // namespace

int main(int argc, char** argv) {
  std::string types = "i32,f32,f64", op_name = "sum";
  int lo = 10, hi = 30;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--types") types = value;
    else if (flag == "--lo") lo = std::stoi(value);
    else if (flag == "--hi") hi = std::stoi(value);
    else if (flag == "--op") op_name = value;
    else {
      std::fprintf(stderr, "usage: xr_bench_auto_vs_cub [--types i32,f32,f64] [--lo 10] [--hi 30] [--op sum]\n");
      return 2;
    }
  }
  try {
    const xr::Op op = xr::parse_op(op_name);
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    const double peak = datasheet_gbps(prop.name);
    std::printf("device %s, %d SMs; %s; median us per call; peak %.0f GB/s (datasheet)\n", prop.name,
                prop.multiProcessorCount, std::string(xr::to_string(op)).c_str(), peak);
    std::printf("%-4s %-5s %10s %10s %7s %9s %9s %7s %3s %-5s %s\n", "type", "n", "auto us", "cub us", "ratio",
                "auto GB/s", "cub GB/s", "%peak", "L", "same", "auto ran");
    for (const auto& t : {std::string("i32"), std::string("f32"), std::string("f64"), std::string("i64")}) {
      if (types.find(t) == std::string::npos) continue;
      xr::visit_dtype(xr::parse_dtype(t), [&](auto zero) { sweep<decltype(zero)>(op, lo, hi, peak); });
    }
  } catch (const xr::Error& e) {
    std::fprintf(stderr, "xr_bench_auto_vs_cub: %s\n", e.what());
    return 2;
  }
}
