// Fuzzing reduce_cli's segmented options: every op in every segmented mode (rows and columns of
// C, Fortran and strided arrays; generated segments of fixed and random lengths; offsets and 2-D
// arrays from files) on every host backend, then seeded random combinations of modes, types,
// strategies, exact mode, accumulators and malformed values. Each run must end within its time
// with exit 0 and every value agreeing with the reference, or exit 2 with one error line.
//
// XR_FUZZ_OPTION_CASES (default 150) sets the random combinations, XR_FUZZ_SEED (default 1) their seed.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "npy_bytes.hpp"
#include "xreduce/xreduce.hpp"

using namespace xr_cli_test;

namespace {

const std::vector<std::string> kOps = {"sum", "prod", "min", "max", "argmin", "argmax", "minmax"};
const std::vector<std::string> kTypes = {"i8", "u8", "i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64"};

// The files the file modes read: a 2-D f32 .npy of each order, a 1-D f64 .npy and its offsets.
struct Files {
  std::string c_matrix, f_matrix, vector, offsets;
};

const Files& files() {
  static const Files f = [] {
    std::vector<float> m(9 * 13);
    for (std::size_t i = 0; i < m.size(); ++i) m[i] = static_cast<float>((i * 37) % 23) - 11.5f;
    std::vector<double> v(40);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 11) % 7) - 3.0;
    const std::vector<std::int64_t> offs{0, 0, 5, 5, 17, 40};
    const auto header = [](const char* descr, const std::string& shape, const char* order) {
      return std::string("{'descr': '") + descr + "', 'fortran_order': " + order + ", 'shape': " + shape + ", }";
    };
    return Files{scratch("fuzz_c.npy", xr_npy_test::npy_bytes(header("<f4", "(9, 13)", "False"),
                                                              xr_npy_test::bytes_of<float>(m))),
                 scratch("fuzz_f.npy", xr_npy_test::npy_bytes(header("<f4", "(13, 9)", "True"),
                                                              xr_npy_test::bytes_of<float>(m))),
                 scratch("fuzz_v.npy", xr_npy_test::npy_bytes(header("<f8", "(40,)", "False"),
                                                              xr_npy_test::bytes_of<double>(v))),
                 scratch("fuzz_o.npy", xr_npy_test::npy_bytes(header("<i8", "(6,)", "False"),
                                                              xr_npy_test::bytes_of<std::int64_t>(offs)))};
  }();
  return f;
}

// The segmented modes, as options.
std::vector<std::string> modes() {
  const Files& f = files();
  return {"--shape 9x13 --axis 1",
          "--shape 9x13 --axis 0",
          "--shape 9x13 --axis 1 --order fortran",
          "--shape 9x13 --axis 0 --order fortran",
          "--shape 9x13 --axis 1 --stride 16",
          "--shape 9x13 --axis 0 --stride 20 --order fortran",
          "--shape 0x7 --axis 1",
          "--shape 5x0 --axis 0 --stride 3",
          "--segments 12 --seg-len 3",
          "--segments 30 --seg-dist uniform:0:9",
          "--segments 20 --seg-dist lognormal:4:40",
          "--segments 0 --seg-len 5",
          "--input '" + f.c_matrix + "' --axis 1",
          "--input '" + f.c_matrix + "' --axis 0",
          "--input '" + f.f_matrix + "' --axis 1",
          "--input '" + f.f_matrix + "' --axis 0",
          "--input '" + f.vector + "' --offsets '" + f.offsets + "'"};
}

constexpr double kSecondsPerRun = 20.0;

// One run: exit 0 with every row's values agreeing, or exit 2 with one error line.
void expect_value_or_one_line(const std::string& args) {
  const auto t0 = std::chrono::steady_clock::now();
  const Run r = shell("timeout 60 " + std::string(XR_REDUCE_CLI) + " " + args + " --json --repeat 1 --warmup 0");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO("reduce_cli ", args, " -> exit ", r.code, " after ", seconds, " s: ", xr::printable(r.out, 600));
  CHECK(seconds < kSecondsPerRun);
  if (r.code == 2) {
    CHECK(one_error_line(r.out));
    return;
  }
  REQUIRE(r.code == 0);
  const auto rows = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE(rows.is_array());
  for (const auto& row : rows) CHECK(row.at("agree").get<std::uint64_t>() == row.at("count").get<std::uint64_t>());
}

std::vector<std::string> host_backends() {
  std::vector<std::string> out{"omp"};
  if (xr::backend_status("opencl").usable) out.push_back("opencl");
  return out;
}

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

// A seeded combination: a mode (sometimes broken), an op, a type, a strategy, and options that
// may not apply to it.
std::string random_args(std::mt19937_64& rng, const std::vector<std::string>& backends) {
  const auto pick = [&](const auto& list) { return list[rng() % list.size()]; };
  static const std::vector<std::string> counts = {"0", "1", "3", "17", "2^6", "-1", "1.5", "2^64", "18446744073709551616",
                                                  "", "x", "1e3", "0x10"};
  std::string mode;
  switch (rng() % 4) {
    case 0: mode = pick(modes()); break;
    case 1:
      mode = "--shape " + pick(counts) + "x" + pick(counts) + " --axis " + pick(std::vector<std::string>{"0", "1", "2", "-1"});
      if (rng() % 3 == 0) mode += " --stride " + pick(counts);
      if (rng() % 3 == 0) mode += " --order " + pick(std::vector<std::string>{"c", "fortran", "C", "f"});
      break;
    case 2:
      mode = "--segments " + pick(counts);
      mode += rng() % 2 ? " --seg-len " + pick(counts)
                        : " --seg-dist " + pick(std::vector<std::string>{"uniform:0:5", "uniform:5:0", "uniform:0:2^62",
                                                                         "lognormal:3", "lognormal:3:2", "normal:1",
                                                                         "uniform:-1:3", "lognormal:1e9:2^20"});
      break;
    default:
      mode = pick(modes()) + " " + pick(std::vector<std::string>{"--seg-len 3", "--stride 4", "--order fortran",
                                                                 "--offsets /nonexistent", "--axis 1", "--segments 3",
                                                                 "--n 10", "--share 2", "--chunk 7",
                                                                 "--device-mem-limit 1K"});
  }
  std::string args = "--backend " + pick(backends) + " " + mode + " --op " + pick(kOps);
  if (mode.find("--input") == std::string::npos || rng() % 4 == 0) args += " --type " + pick(kTypes);
  if (rng() % 3 == 0) args += " --kernel " + pick(std::vector<std::string>{"all", "auto", "pairs", "rows", "columns",
                                                                           "serial", "balanced", "nonesuch"});
  if (rng() % 4 == 0) args += " --exact";
  if (rng() % 6 == 0) args += " --accumulator native";
  if (rng() % 8 == 0) args += " --threads " + pick(std::vector<std::string>{"1", "3", "0", "100000"});
  if (rng() % 10 == 0) args += " --seed " + pick(counts);
  return args;
}

}  // namespace

TEST_CASE("every op in every segmented mode, on every host backend: a value or one line") {
  for (const auto& backend : host_backends())
    for (const auto& mode : modes())
      for (const auto& op : kOps) expect_value_or_one_line("--backend " + backend + " " + mode + " --op " + op);
}

TEST_CASE("every type and strategy of one mode of each kind: a value or one line") {
  const std::vector<std::string> kinds = {"--shape 9x13 --axis 0", "--shape 9x13 --axis 1 --stride 16",
                                          "--segments 30 --seg-dist uniform:0:9"};
  // OpenCL builds a program per strategy, op and type: two types there keep the suite's time.
  const std::vector<std::string> opencl_types = {"i8", "f64"};
  for (const auto& backend : host_backends())
    for (const auto& mode : kinds)
      for (const auto& type : backend == "omp" ? kTypes : opencl_types)
        for (const auto& op : kOps)
          expect_value_or_one_line("--backend " + backend + " " + mode + " --type " + type + " --op " + op +
                                   " --kernel all" + (op == "sum" && type[0] == 'f' ? " --exact" : ""));
}

TEST_CASE("seeded combinations of segmented options: a value or one line") {
  std::mt19937_64 rng(env_or("XR_FUZZ_SEED", 1) + 101);
  const auto backends = host_backends();
  for (std::uint64_t i = 0, n = env_or("XR_FUZZ_OPTION_CASES", 150); i < n; ++i)
    expect_value_or_one_line(random_args(rng, backends));
}
