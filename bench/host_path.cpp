// The streamed host path against the machine's own limits, all measured in one run:
//   link   pinned host-to-device copy rate (cudaMemcpyAsync of the whole input, page-locked)
//   fill   host memcpy rate from pageable into page-locked memory (xr::parallel_copy), the
//          ceiling of any path that starts in pageable memory
//   file   the rate FileSource reads the file from a warm page cache, no device involved
// and the end-to-end rate of: CUDA host-span sums from pageable and from page-locked memory,
// OpenCL on the NVIDIA platform (pageable), and each backend reducing the file.
//
//   xr_bench_host_path [--n 2^28 as an exponent: --log2n 28] [--repeat 7] [--file /tmp/x.f32]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "xreduce/xreduce.hpp"

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "xr_bench_host_path: %s: %s\n", what, cudaGetErrorName(e));
    std::exit(2);
  }
}

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

template <class F> double median_seconds(int repeat, F f) {
  f();  // warm-up
  std::vector<double> t;
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = clock_type::now();
    f();
    t.push_back(seconds_since(t0));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Row {
  std::string what;
  double gbps = 0;
  double ratio = 0;       // to the row's limit
  std::string limit;      // which limit
  std::string note;
};

}  // namespace

int main(int argc, char** argv) {
  int log2n = 28, repeat = 7;
  std::string file = "/tmp/xr_bench_host_path.f32";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--log2n") log2n = std::atoi(argv[i + 1]);
    else if (a == "--repeat") repeat = std::atoi(argv[i + 1]);
    else if (a == "--file") file = argv[i + 1];
  }
  const std::uint64_t n = std::uint64_t(1) << log2n;
  const std::size_t bytes = n * sizeof(float);
  const double gb = double(bytes) / 1e9;
  const xr::HostBuffer pageable = xr::generate(xr::DType::F32, n, xr::Dist::Uniform, 3);
  const xr::Reference ref = xr::reference_reduce(pageable.view(), xr::Op::Sum);
  float* pinned = nullptr;
  check(cudaMallocHost(reinterpret_cast<void**>(&pinned), bytes), "cudaMallocHost");
  std::memcpy(pinned, pageable.data(), bytes);
  void* dev = nullptr;
  check(cudaMalloc(&dev, bytes), "cudaMalloc");
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");

  // The limits.
  const double link = gb / median_seconds(repeat, [&] {
    check(cudaMemcpyAsync(dev, pinned, bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  });
  check(cudaFree(dev), "cudaFree");
  // Host-side limits, into two alternating page-locked 64 MiB buffers like the pipeline's.
  const std::size_t piece = std::size_t(64) << 20;
  unsigned char* stage = nullptr;
  check(cudaMallocHost(reinterpret_cast<void**>(&stage), 2 * piece), "cudaMallocHost");
  const double fill = gb / median_seconds(repeat, [&] {
    for (std::size_t off = 0, k = 0; off < bytes; off += piece, ++k)
      xr::parallel_copy(stage + (k % 2) * piece, static_cast<const unsigned char*>(pageable.view().data) + off,
                        std::min(piece, bytes - off));
  });
  xr::save_raw(file, pageable.view());
  xr::FileSource source(file, xr::DType::F32);
  const std::uint64_t per_read = piece / sizeof(float);
  const double file_rate = gb / median_seconds(repeat, [&] {
    for (std::uint64_t first = 0, k = 0; first < n; first += per_read, ++k)
      source.read(first, std::min(per_read, n - first), stage + (k % 2) * piece);
  });
  check(cudaFreeHost(stage), "cudaFreeHost");

  std::vector<Row> rows;
  rows.push_back({"pinned H2D copy (link)", link, 1.0, "link", "cudaMemcpyAsync, 1 call"});
  rows.push_back({"pageable -> pinned memcpy (fill)", fill, fill / link, "link", "xr::parallel_copy (up to 16 threads), 2 x 64 MiB pinned"});
  rows.push_back({"file read, warm cache", file_rate, file_rate / link, "link", "FileSource::read, 2 x 64 MiB pinned"});

  xr::RunOptions o;
  o.repeat = repeat;
  o.warmup = 1;
  bool all_agree = true;
  auto add = [&](const std::string& what, const xr::Result& r, double limit, const std::string& limit_name) {
    const bool ok = xr::check_result(r, ref).ok;
    all_agree = all_agree && ok;
    const double rate = r.bytes_per_s / 1e9;
    rows.push_back({what, rate, rate / limit, limit_name,
                    std::to_string(r.chunks) + " chunks, kernels " + std::to_string(r.kernel_ms).substr(0, 5) +
                        " ms" + (ok ? "" : ", DISAGREES")});
  };
  const double file_limit = std::min(file_rate, link);
  const std::string file_limit_name = file_rate < link ? "file" : "link";
  {
    auto cuda = xr::make_reducer("cuda");
    add("cuda host span, pinned", cuda->reduce(std::span<const float>(pinned, n), xr::Op::Sum, o), link, "link");
    add("cuda host span, pageable", cuda->reduce(pageable.view(), xr::Op::Sum, o), link, "link");
    rows.back().note += "; " + std::to_string(100 * rows.back().gbps / fill).substr(0, 4) + "% of fill";
    add("cuda file", cuda->reduce(source, xr::Op::Sum, o), file_limit, file_limit_name);
  }
  xr::BackendOptions nvidia;
  nvidia.device = "NVIDIA";
  try {
    auto ocl = xr::make_reducer("opencl", nvidia);
    add("opencl (NVIDIA) host span, pageable", ocl->reduce(pageable.view(), xr::Op::Sum, o), link, "link");
    rows.back().note += "; " + std::to_string(100 * rows.back().gbps / fill).substr(0, 4) + "% of fill";
    add("opencl (NVIDIA) file", ocl->reduce(source, xr::Op::Sum, o), file_limit, file_limit_name);
  } catch (const xr::Error& e) {
    std::printf("opencl on NVIDIA skipped: %s\n", e.what());
  }
  {
    auto omp = xr::make_reducer("omp");
    add("omp file", omp->reduce(source, xr::Op::Sum, o), file_rate, "file");
  }
  check(cudaFreeHost(pinned), "cudaFreeHost");
  std::filesystem::remove(file);

  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("host path, sum of 2^%d f32 (%.2f GB), %s, median of %d after 1 warm-up\n", log2n, gb, prop.name,
              repeat);
  std::printf("%-38s %8s %8s  %s\n", "path", "GB/s", "ratio", "note");
  for (const auto& r : rows)
    std::printf("%-38s %8.1f %7.0f%%  of %s; %s\n", r.what.c_str(), r.gbps, 100 * r.ratio, r.limit.c_str(),
                r.note.c_str());
  return all_agree ? 0 : 1;
}
