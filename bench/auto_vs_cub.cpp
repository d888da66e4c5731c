// auto against cub::DeviceReduce on data already on the GPU, n = 2^lo .. 2^hi, per type.
// Each round calls auto once and cub once (alternating which goes first), each timed by the
// backend between CUDA events; rows report medians over the rounds and their ratio.
//
//   xr_bench_auto_vs_cub [--types i32,f32,f64] [--lo 10] [--hi 30] [--op sum] [--grids G1,G2xB2]
//                        [--kernels K1,K2] [--against OP] [--json FILE]
//
// --against OP measures against auto running OP instead of cub running --op (minmax against max:
// the cost of the second extreme); the "cub" columns then hold that baseline.
// --grids adds auto runs with a fixed grid of G blocks, or G blocks of B threads for GxB
// (0x512: auto's own grid at block 512), for tuning the shape the backend chooses; --kernels
// adds runs of the named rungs (tuning auto's choice between layouts). Each adds a column with
// its time ratio to cub, interleaved with the rest. The header line gives the launch floor: an
// empty kernel timed the same way. --json FILE also writes every row, with the header's facts,
// as {"kind": "sweep", ...} for scripts/plot.py.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "json_file.hpp"
#include "xreduce/cuda.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/xreduce.hpp"

cudaError_t time_empty_kernel(int rounds, cudaStream_t stream, std::vector<double>& ms);  // launch_floor.cu
template <class T>
cudaError_t time_cub_arg(bool max, const T* d_in, std::int64_t n, int rounds, std::vector<double>& ms, T& value,
                         std::int64_t& index);  // cub_arg.cu

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "xr_bench_auto_vs_cub: %s: %s\n", what, cudaGetErrorName(e));
    std::exit(2);
  }
}

// The vendor's datasheet DRAM bandwidth (GB/s) of the GPUs xreduce is measured on, by
// device name: H200 (141 GB HBM3e) 4800; H100 SXM5 80GB HBM3 3350. Elsewhere the peak the
// device reports (2 x memory clock x bus width). xreduce aims at 90% of it at n >= 2^28
// (H200: 4.3 TB/s, H100: 3.0 TB/s).
double datasheet_gbps(const cudaDeviceProp& prop) {
  const std::string name = prop.name;
  if (name.find("H200") != std::string::npos) return 4800;
  if (name.find("H100 80GB HBM3") != std::string::npos) return 3350;
  int mem_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, 0) != cudaSuccess ||
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0) != cudaSuccess)
    return 0;
  return 2.0 * mem_khz * 1e3 * (bus_bits / 8.0) / 1e9;
}

int rounds_for(std::uint64_t n) { return n <= (1u << 20) ? 200 : n <= (1u << 26) ? 50 : 15; }

// An extra column: auto with a fixed grid, or another rung.
struct Column {
  std::string label;
  xr::RunOptions options;
};

// What every row of the JSON repeats: the device and its datasheet bandwidth.
struct Device {
  std::string name;
  double peak_gbps = 0;
};

template <class T>
void sweep(xr::Op op, const std::optional<xr::Op>& against, int lo, int hi, const Device& device,
           const std::vector<Column>& extra, nlohmann::json& rows) {
  const double peak = device.peak_gbps;
  const std::uint64_t max_n = std::uint64_t(1) << hi;
  const xr::HostBuffer host = xr::generate(xr::dtype_of<T>, max_n, xr::Dist::Uniform, 1);
  T* dev = nullptr;
  check(cudaMalloc(&dev, max_n * sizeof(T)), "cudaMalloc");
  check(cudaMemcpy(dev, host.data(), max_n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
  for (int e = lo; e <= hi; e += 1) {
    const std::uint64_t n = std::uint64_t(1) << e;
    // Variant 0 is cub, 1 is auto with its own grid, then the extra columns.
    std::vector<xr::RunOptions> variants(2);
    variants[0].kernel = against ? "auto" : "cub";
    variants[1].kernel = "auto";
    const auto op_of = [&](std::size_t v) { return v == 0 && against ? *against : op; };
    // argmin and argmax of floats: the cub row leaves them out (CUB's operator< never picks a
    // NaN), so the baseline is the vendor's call itself, timed alike, on this NaN-free data.
    const bool vendor = !against && xr::is_indexed(op) && xr::is_float(xr::dtype_of<T>);
    T vendor_value{};
    std::int64_t vendor_index = -1;
    const auto run = [&](std::size_t v) {
      if (v == 0 && vendor) {
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
          std::vector<double> one;
          check(time_cub_arg(op == xr::Op::ArgMax, dev, static_cast<std::int64_t>(n), 1, one, vendor_value, vendor_index),
                "cub::DeviceReduce::ArgMin/ArgMax");
          xr::Result r;
          r.kernel_ms = one.at(0);
          return r;
        }
        throw xr::InvalidArgument("no vendor argmin/argmax baseline for " + std::string(xr::to_string(xr::dtype_of<T>)));
      }
      return xr::cuda::reduce(dev, n, op_of(v), nullptr, variants[v]);
    };
    for (const auto& c : extra) variants.push_back(c.options);
    std::vector<std::vector<double>> t(variants.size());
    std::vector<xr::Result> last(variants.size());
    for (int w = 0; w < 3; ++w)
      for (std::size_t v = 0; v < variants.size(); ++v) run(v);
    const int rounds = rounds_for(n);
    for (int k = 0; k < rounds; ++k)
      for (std::size_t j = 0; j < variants.size(); ++j) {
        const std::size_t v = (j + k) % variants.size();  // rotate who goes first
        last[v] = run(v);
        t[v].push_back(last[v].kernel_ms);
      }
    const xr::Reference ref = xr::reference_reduce({host.data(), n, xr::dtype_of<T>}, op);
    bool agree = true;
    for (std::size_t v = vendor ? 1 : 0; v < last.size(); ++v)
      agree = agree && xr::check_result(last[v], op_of(v) == op ? ref : xr::reference_reduce({host.data(), n, xr::dtype_of<T>}, op_of(v))).ok;
    if (vendor) agree = agree && xr::Scalar::of(vendor_value).same_bits(ref.value) && vendor_index == ref.index;
    const double c = xr::median(t[0]), a = xr::median(t[1]);
    const double gbps_a = n * sizeof(T) / (a * 1e-3) / 1e9, gbps_c = n * sizeof(T) / (c * 1e-3) / 1e9;
    std::printf("%-4s 2^%-3d %10.2f %10.2f %7.3f %9.1f %9.1f %7s %3d %-5s %-15s",
                std::string(xr::to_string(xr::dtype_of<T>)).c_str(), e, a * 1e3, c * 1e3, a / c, gbps_a, gbps_c,
                peak > 0 ? (std::to_string(static_cast<int>(100 * gbps_a / peak + 0.5)) + "%").c_str() : "-",
                last[1].launches, agree ? "yes" : "NO", last[1].kernel.c_str());
    nlohmann::json row = {{"type", xr::to_string(xr::dtype_of<T>)}, {"log2n", e}, {"n", n}, {"auto_us", a * 1e3},
                          {"cub_us", c * 1e3}, {"ratio", a / c}, {"auto_gbps", gbps_a}, {"cub_gbps", gbps_c},
                          {"sheet_pct", peak > 0 ? nlohmann::json(100 * gbps_a / peak) : nlohmann::json()},
                          {"device", device.name}, {"datasheet_gbps", peak}, {"launches", last[1].launches},
                          {"agree", agree}, {"layout", last[1].kernel}, {"extra", nlohmann::json::object()}};
    for (std::size_t v = 2; v < variants.size(); ++v) {
      std::printf(" %7.3f", xr::median(t[v]) / c);
      row["extra"][extra[v - 2].label] = xr::median(t[v]) / c;
    }
    std::printf("\n");
    rows.push_back(std::move(row));
    std::fflush(stdout);
  }
  cudaFree(dev);
}

}  // namespace

std::vector<std::string> split_commas(const std::string& value) {
  std::vector<std::string> items;
  for (std::size_t at = 0; at < value.size();) {
    const std::size_t comma = value.find(',', at);
    items.push_back(value.substr(at, comma - at));
    at = comma == std::string::npos ? value.size() : comma + 1;
  }
  return items;
}

int main(int argc, char** argv) {
  std::string types = "i32,f32,f64", op_name = "sum", against_name, json_path;
  int lo = 10, hi = 30;
  std::vector<Column> extra;
  try {
    for (int i = 1; i + 1 < argc; i += 2) {
      const std::string flag = argv[i], value = argv[i + 1];
      if (flag == "--types") types = value;
      else if (flag == "--lo") lo = std::stoi(value);
      else if (flag == "--hi") hi = std::stoi(value);
      else if (flag == "--op") op_name = value;
      else if (flag == "--json") json_path = value;
      else if (flag == "--against") against_name = value;
      else if (flag == "--grids")
        for (const auto& g : split_commas(value)) {  // G (blocks) or GxB (blocks x threads); G = 0: auto's grid
          const std::size_t x = g.find('x');
          Column c{x == std::string::npos ? "g=" + g : g, {}};
          c.options.kernel = "auto";
          c.options.grid_size = std::stoull(g.substr(0, x));
          if (x != std::string::npos) c.options.block_size = static_cast<unsigned>(std::stoul(g.substr(x + 1)));
          extra.push_back(c);
        }
      else if (flag == "--kernels")
        for (const auto& k : split_commas(value)) {
          Column c{k, {}};
          c.options.kernel = k;
          extra.push_back(c);
        }
      else
        throw std::invalid_argument(flag);
    }
    if (argc % 2 == 0) throw std::invalid_argument(argv[argc - 1]);
  } catch (const std::exception&) {
    std::fprintf(stderr,
                 "usage: xr_bench_auto_vs_cub [--types i32,f32,f64] [--lo 10] [--hi 30] [--op sum] [--grids G|GxB,..] "
                 "[--kernels K,..] [--against OP] [--json FILE]\n");
    return 2;
  }
  try {
    const xr::Op op = xr::parse_op(op_name);
    std::optional<xr::Op> against;
    if (!against_name.empty()) against = xr::parse_op(against_name);
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    const Device device{prop.name, datasheet_gbps(prop)};
    const double peak = device.peak_gbps;
    std::printf("device %s, %d SMs; %s; median us per call; datasheet %.0f GB/s (%%sheet: auto's share of it)%s\n",
                prop.name, prop.multiProcessorCount, std::string(xr::to_string(op)).c_str(), peak,
                against ? ("; the cub columns: auto " + std::string(xr::to_string(*against))).c_str()
                : xr::is_indexed(op) ? "; the cub columns of float types: cub::DeviceReduce::ArgMin/ArgMax itself"
                                     : "");
    std::vector<double> floor_ms;
    check(time_empty_kernel(200, nullptr, floor_ms), "timing an empty kernel");
    const double floor_us = xr::median(floor_ms) * 1e3;
    std::printf("launch floor: an empty kernel, timed like one call, %.2f us (median of 200)\n", floor_us);
    std::printf("%-4s %-5s %10s %10s %7s %9s %9s %7s %3s %-5s %-15s", "type", "n", "auto us", "cub us", "ratio",
                "auto GB/s", "cub GB/s", "%sheet", "L", "agree", "auto ran");
    for (const auto& c : extra) std::printf(" %7s", c.label.c_str());
    std::printf("\n");
    nlohmann::json rows = nlohmann::json::array();
    for (std::size_t at = 0; at <= types.size();) {
      const std::size_t comma = std::min(types.find(',', at), types.size());
      const xr::DType t = xr::parse_dtype(types.substr(at, comma - at));
      xr::visit_dtype(t, [&](auto zero) { sweep<decltype(zero)>(op, against, lo, hi, device, extra, rows); });
      at = comma + 1;
    }
    if (!json_path.empty()) {
      const nlohmann::json out = {{"kind", "sweep"}, {"device", device.name}, {"sms", prop.multiProcessorCount},
                                  {"op", xr::to_string(op)}, {"datasheet_gbps", peak}, {"launch_floor_us", floor_us},
                                  {"rows", rows}};
      if (!write_json_file(json_path, out, "xr_bench_auto_vs_cub")) return 2;
    }
  } catch (const xr::Error& e) {
    std::fprintf(stderr, "xr_bench_auto_vs_cub: %s\n", e.what());
    return 2;
  }
}
