// reduce_cli's segmented reductions of files in bounded memory: rows, columns (C and Fortran order)
// and CSR segments of a .npy several times larger than the chunk stream from disk on every backend
// here, each value checked against the streamed reference, and the process's peak resident memory
// stays far below the file's size.
#include <doctest/doctest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "xreduce/xreduce.hpp"

using namespace xr_cli_test;
using nlohmann::json;

TEST_CASE("segmented reductions of a file 32 times the chunk stay within a few chunks of memory") {
  // 4096 x 8192 f32: 128 MiB, in chunks of 2^20 elements (4 MiB).
  constexpr std::uint64_t rows = 4096, cols = 8192, n = rows * cols, chunk = std::uint64_t{1} << 20;
  constexpr std::uint64_t file_kib = n * 4 / 1024;
  fs::create_directories(XR_TEST_TMP);
  const std::string c_path = (fs::path(XR_TEST_TMP) / "big_c.npy").string();
  const std::string f_path = (fs::path(XR_TEST_TMP) / "big_f.npy").string();
  const std::string o_path = (fs::path(XR_TEST_TMP) / "big_offsets.npy").string();
  {
    const xr::HostBuffer data = xr::generate(xr::DType::F32, n, xr::Dist::Uniform, 5);
    xr::save_npy(c_path, data.view(), {rows, cols}, false);
    xr::save_npy(f_path, data.view(), {rows, cols}, true);
    // Segments of 0 to 16383 elements, and one of 3 chunks, over the whole file.
    std::vector<std::int64_t> offsets{0};
    std::uint64_t state = 1;
    while (static_cast<std::uint64_t>(offsets.back()) < n) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      std::uint64_t len = (state >> 33) % 16384;
      if (offsets.size() == 1000) len = 3 * chunk;
      offsets.push_back(static_cast<std::int64_t>(std::min(n, static_cast<std::uint64_t>(offsets.back()) + len)));
    }
    xr::save_npy(o_path, xr::HostArray::of(std::span<const std::int64_t>(offsets)));
  }
  struct Mode {
    std::string name, big, small;  // the file's run, and the same run on a tiny generated input
  };
  const std::vector<Mode> modes = {
      {"rows", "--input " + c_path + " --axis 1", "--shape 64x128 --axis 1"},
      {"columns", "--input " + c_path + " --axis 0", "--shape 64x128 --axis 0"},
      {"Fortran columns", "--input " + f_path + " --axis 1", "--shape 64x128 --axis 1 --order fortran"},
      {"offsets", "--input " + c_path + " --offsets " + o_path, "--segments 100 --seg-len 10"},
  };
  const std::string out = (fs::path(XR_TEST_TMP) / "out.txt").string();
  for (const std::string backend : {"omp", "opencl"}) {
    if (!xr::backend_status(backend).usable) {
      MESSAGE(backend, ": not usable here, skipped");
      continue;
    }
    for (const auto& m : modes) {
      const std::string common = "--backend " + backend + " --json --repeat 1 --warmup 0 ";
      // The process's own memory (the runtime, the backend's device and its kernels): a tiny input.
      const Measured base = cli_peak_rss(common + m.small, out);
      REQUIRE_MESSAGE(base.run.code == 0, base.run.out);
      const Measured big = cli_peak_rss(common + "--chunk " + std::to_string(chunk) + " " + m.big, out);
      REQUIRE_MESSAGE(big.run.code == 0, backend, " ", m.name, ": ", big.run.out);
      const json j = json::parse(big.run.out);
      REQUIRE(j.size() == 1);
      CHECK_MESSAGE(j[0].at("agree") == j[0].at("count"), backend, " ", m.name, ": ", j[0].dump());
      CHECK_MESSAGE(j[0].at("jobs").get<std::uint64_t>() > 1, backend, " ", m.name, ": one job read the whole file");
      // Loading the file would take 128 MiB on its own; a few 4 MiB chunks and the values (at most
      // 8192 x 8 bytes, and 64 KiB of offsets) stay well under a quarter of it.
      const std::uint64_t bound = base.peak_rss_kib + file_kib / 4;
      MESSAGE(backend, " ", m.name, ": peak RSS ", big.peak_rss_kib / 1024, " MiB (tiny input: ", base.peak_rss_kib / 1024,
              " MiB; bound ", bound / 1024, " MiB; file ", file_kib / 1024, " MiB)");
      CHECK_MESSAGE(big.peak_rss_kib < bound, backend, " ", m.name, ": peak RSS ", big.peak_rss_kib, " KiB, bound ", bound,
                    " KiB");
    }
  }
  for (const auto& path : {c_path, f_path, o_path}) fs::remove(path);  // 256 MiB of them
}
