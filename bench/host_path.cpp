// The streamed host path against the machine's own limits, all measured in one run:
//   link   pinned host-to-device copy rate (cudaMemcpyAsync of the whole input, page-locked)
//   fill   host memcpy rate from pageable into page-locked memory (xr::parallel_copy), the
//          ceiling of any path that starts in pageable memory
//   file   the rate FileSource reads the file from a warm page cache, no device involved
// and the end-to-end rate of: CUDA host-span sums from pageable and from page-locked memory,
// OpenCL on the NVIDIA platform (pageable), and each backend reducing the file.
// The host's copy rate drifts by tens of percent within a minute (docs/performance.md), so the
// measurements run in rounds, each round every limit and every path once, in rotating order;
// a path's ratio is the median over rounds of its rate over its limit in the same round.
//
//   xr_bench_host_path [--n 2^28 as an exponent: --log2n 28] [--repeat 7] [--file /tmp/x.f32]
//                      [--json FILE]
// --json FILE also writes every row as {"kind": "host", ...} for scripts/plot.py.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "json_file.hpp"
#include "xreduce/reference.hpp"
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// One row: a limit (limit empty) or a path measured against the limits named.
struct Measure {
  std::string what, limit, note;
  std::function<double()> rate;  // GB/s of one run
  std::vector<double> rates;     // one per round after the warm-up round
};

}  // namespace

int main(int argc, char** argv) {
  int log2n = 28, repeat = 7;
  std::string file = "/tmp/xr_bench_host_path.f32", json_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--log2n") log2n = std::atoi(argv[i + 1]);
    else if (a == "--repeat") repeat = std::atoi(argv[i + 1]);
    else if (a == "--file") file = argv[i + 1];
    else if (a == "--json") json_path = argv[i + 1];
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
  // Host-side limits go into two alternating page-locked 64 MiB buffers, like the pipeline's.
  const std::size_t piece = std::size_t(64) << 20;
  unsigned char* stage = nullptr;
  check(cudaMallocHost(reinterpret_cast<void**>(&stage), 2 * piece), "cudaMallocHost");
  xr::save_raw(file, pageable.view());
  xr::FileSource source(file, xr::DType::F32);
  const std::uint64_t per_read = piece / sizeof(float);

  auto timed = [&](auto f) {
    const auto t0 = clock_type::now();
    f();
    return gb / seconds_since(t0);
  };
  std::vector<Measure> ms;
  ms.push_back({"pinned H2D copy (link)", "", "cudaMemcpyAsync, 1 call", [&] {
                  return timed([&] {
                    check(cudaMemcpyAsync(dev, pinned, bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
                    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
                  });
                }});
  ms.push_back({"pageable -> pinned memcpy (fill)", "", "xr::parallel_copy (up to 16 threads), 2 x 64 MiB pinned", [&] {
                  return timed([&] {
                    for (std::size_t off = 0, k = 0; off < bytes; off += piece, ++k)
                      xr::parallel_copy(stage + (k % 2) * piece,
                                        static_cast<const unsigned char*>(pageable.view().data) + off,
                                        std::min(piece, bytes - off));
                  });
                }});
  ms.push_back({"file read, warm cache", "", "FileSource::read, 2 x 64 MiB pinned", [&] {
                  return timed([&] {
                    for (std::uint64_t first = 0, k = 0; first < n; first += per_read, ++k)
                      source.read(first, std::min(per_read, n - first), stage + (k % 2) * piece);
                  });
                }});
  const std::size_t kLink = 0, kFill = 1, kFile = 2;

  xr::RunOptions once;
  once.repeat = 1;
  once.warmup = 0;
  bool all_agree = true;
  auto path = [&](const std::string& what, const std::string& limit, auto reduce) {
    ms.push_back({what, limit, "", [&, reduce, at = ms.size()] {
                    const xr::Result r = reduce();
                    const bool ok = xr::check_result(r, ref).ok;
                    all_agree = all_agree && ok;
                    ms[at].note = std::to_string(r.chunks) + " chunks" + (ok ? "" : ", DISAGREES");
                    return r.bytes_per_s / 1e9;
                  }});
  };
  auto cuda = xr::make_reducer("cuda");
  path("cuda host span, pinned", "link", [&] { return cuda->reduce(std::span<const float>(pinned, n), xr::Op::Sum, once); });
  path("cuda host span, pageable", "link", [&] { return cuda->reduce(pageable.view(), xr::Op::Sum, once); });
  path("cuda file", "file", [&] { return cuda->reduce(source, xr::Op::Sum, once); });
  std::unique_ptr<xr::Reducer> ocl;
  xr::BackendOptions nvidia;
  nvidia.device = "NVIDIA";
  try {
    ocl = xr::make_reducer("opencl", nvidia);
    path("opencl (NVIDIA) host span, pageable", "link", [&] { return ocl->reduce(pageable.view(), xr::Op::Sum, once); });
    path("opencl (NVIDIA) file", "file", [&] { return ocl->reduce(source, xr::Op::Sum, once); });
  } catch (const xr::Error& e) {
    std::printf("opencl on NVIDIA skipped: %s\n", e.what());
  }
  auto omp = xr::make_reducer("omp");
  path("omp file", "file only", [&] { return omp->reduce(source, xr::Op::Sum, once); });

  // Round 0 warms up (allocations, page cache, program builds); the others count.
  for (int round = 0; round <= repeat; ++round)
    for (std::size_t j = 0; j < ms.size(); ++j) {
      Measure& m = ms[(j + round) % ms.size()];
      const double rate = m.rate();
      if (round > 0) m.rates.push_back(rate);
    }
  check(cudaFreeHost(stage), "cudaFreeHost");
  check(cudaFree(dev), "cudaFree");
  check(cudaFreeHost(pinned), "cudaFreeHost");
  std::filesystem::remove(file);

  // A path's limit in round r: the link; the slower of file and link ("file"); the file alone.
  auto limit_in_round = [&](const std::string& limit, std::size_t r) {
    const double link = ms[kLink].rates[r], file_rate = ms[kFile].rates[r];
    return limit == "link" ? link : limit == "file" ? std::min(file_rate, link) : file_rate;
  };
  auto ratio_to = [&](const Measure& m, auto limit_of_round) {
    std::vector<double> q;
    for (std::size_t r = 0; r < m.rates.size(); ++r) q.push_back(m.rates[r] / limit_of_round(r));
    return median(q);
  };

  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("host path, sum of 2^%d f32 (%.2f GB), %s; %d rounds after 1 warm-up, each limit and path once a "
              "round; medians\n",
              log2n, gb, prop.name, repeat);
  std::printf("%-38s %8s %8s  %s\n", "path", "GB/s", "ratio", "note (ratio: median over rounds of rate / limit)");
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& m : ms) {
    const double rate = median(m.rates);
    nlohmann::json row = {{"what", m.what}, {"limit", m.limit}, {"gbps", rate}};
    if (m.limit.empty()) {
      const double r = ratio_to(m, [&](std::size_t k) { return ms[kLink].rates[k]; });
      std::printf("%-38s %8.1f %7.0f%%  of link; %s\n", m.what.c_str(), rate, 100 * r, m.note.c_str());
      row.update({{"ratio", r}, {"ratio_of", "link"}, {"note", m.note}});
      rows.push_back(std::move(row));
      continue;
    }
    const double r = ratio_to(m, [&](std::size_t k) { return limit_in_round(m.limit, k); });
    std::string note = m.note;
    if (m.what.find("pageable") != std::string::npos) {
      const double of_fill = ratio_to(m, [&](std::size_t k) { return ms[kFill].rates[k]; });
      note += "; " + std::to_string(static_cast<int>(100 * of_fill + 0.5)) + "% of fill";
      row["fill_ratio"] = of_fill;
    }
    const char* of = m.limit == "link" ? "link" : m.limit == "file" ? "min(file, link)" : "file";
    std::printf("%-38s %8.1f %7.0f%%  of %s; %s\n", m.what.c_str(), rate, 100 * r, of, note.c_str());
    row.update({{"ratio", r}, {"ratio_of", of}, {"note", note}});
    rows.push_back(std::move(row));
  }
  if (!json_path.empty()) {
    const nlohmann::json out = {{"kind", "host"}, {"device", prop.name}, {"log2n", log2n}, {"gb", gb},
                                {"rounds", repeat}, {"rows", rows}};
    if (!write_json_file(json_path, out, "xr_bench_host_path")) return 2;
  }
  return all_agree ? 0 : 1;
}
