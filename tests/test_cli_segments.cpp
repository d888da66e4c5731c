// reduce_cli's segmented mode: --shape/--axis, 2-D .npy in both orders, --segments with lengths
// from --seg-len and --seg-dist, --offsets files, --save-result, --json, and its errors.
#include <doctest/doctest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cli_run.hpp"
#include "xreduce/xreduce.hpp"

using namespace xr_cli_test;
using nlohmann::json;

namespace {

json run_json(const std::string& args) {
  const Run r = cli("--backend omp --json --repeat 1 --warmup 0 " + args);
  REQUIRE_MESSAGE(r.code == 0, args, ": ", r.out);
  return json::parse(r.out);
}

// A 2-D .npy of `rows` x `cols` f64 values v(r, c) = 10 r + c, in the given order.
std::string matrix_npy(const std::string& name, std::uint64_t rows, std::uint64_t cols, bool fortran) {
  std::vector<double> v(rows * cols);
  for (std::uint64_t r = 0; r < rows; ++r)
    for (std::uint64_t c = 0; c < cols; ++c) v[fortran ? c * rows + r : r * cols + c] = 10.0 * r + c;
  const auto path = (fs::path(XR_TEST_TMP) / name).string();
  fs::create_directories(XR_TEST_TMP);
  xr::save_npy(path, xr::HostArray::of(std::span<const double>(v)), {rows, cols}, fortran);
  return path;
}

}  // namespace

TEST_CASE("--shape and --axis: rows and columns agree, in both orders and with a stride") {
  for (const std::string extra : {"", "--order fortran", "--stride 40", "--order fortran --stride 9"})
    for (int axis : {0, 1}) {
      const json j = run_json("--shape 7x33 --axis " + std::to_string(axis) + " " + extra);
      REQUIRE(j.size() == 1);
      CHECK(j[0].at("count") == (axis == 1 ? 7 : 33));
      CHECK(j[0].at("agree") == j[0].at("count"));
      CHECK(j[0].at("kernel").get<std::string>().rfind("auto:", 0) == 0);
    }
  const Run table = cli("--backend omp --shape 64x32 --kernel all");
  CHECK_MESSAGE(table.code == 0, table.out);
  for (const std::string word : {"auto:rows", "rows", "64/64", "GB/s"}) CHECK_MESSAGE(table.out.find(word) != std::string::npos, word);
}

TEST_CASE("a 2-D .npy reduces along --axis in C and Fortran order") {
  for (bool fortran : {false, true}) {
    const std::string path = matrix_npy(fortran ? "m_f.npy" : "m_c.npy", 3, 4, fortran);
    const json rows = run_json("--input " + path + " --axis 1");
    CHECK(rows[0].at("count") == 3);
    CHECK(rows[0].at("first_values") == "6 46 86");  // 0+1+2+3, 40+6, 80+6
    const json cols = run_json("--input " + path + " --axis 0");
    CHECK(cols[0].at("count") == 4);
    CHECK(cols[0].at("first_values") == "30 33 36 ...");
  }
  const Run one_d = cli("--backend omp --input " + scratch("v.npy", "") + " --axis 0");
  CHECK(one_d.code == 2);
}

TEST_CASE("--segments from --seg-len and --seg-dist, --offsets files, --save-result") {
  CHECK(run_json("--segments 1000 --seg-len 7")[0].at("agree") == 1000);
  CHECK(run_json("--segments 500 --seg-dist uniform:0:50 --type i32 --op max")[0].at("agree") == 500);
  const json ln = run_json("--segments 300 --seg-dist lognormal:64:4096 --exact");
  CHECK(ln[0].at("agree") == 300);
  CHECK(ln[0].at("exact") == true);
  const std::vector<std::int64_t> offsets{0, 0, 5, 5, 100};
  const auto opath = (fs::path(XR_TEST_TMP) / "offsets.npy").string();
  xr::save_npy(opath, xr::HostArray::of(std::span<const std::int64_t>(offsets)));
  const json o = run_json("--offsets " + opath + " --op min");
  CHECK(o[0].at("count") == 4);
  CHECK(o[0].at("first_values").get<std::string>().rfind("inf ", 0) == 0);  // an empty segment's min
  const auto out = (fs::path(XR_TEST_TMP) / "values.npy").string();
  run_json("--segments 10 --seg-len 3 --type i32 --save-result " + out);
  const xr::HostBuffer saved = xr::load_file(out);
  CHECK(saved.size() == 10);
  CHECK(saved.type() == xr::DType::I64);  // i32 sums come back in i64
}

TEST_CASE("argmin, argmax and minmax on rows, columns and segments cross-check against the reference") {
  // The short spellings of the brief: -b and -o.
  for (const std::string op : {"argmin", "argmax", "minmax"}) {
    const Run table = cli("-b omp --shape 7x5 --axis 1 -o " + op);
    CHECK_MESSAGE(table.code == 0, op, ": ", table.out);
    for (const std::string word : {"auto:pairs", "7/7"}) CHECK_MESSAGE(table.out.find(word) != std::string::npos, op, ": ", table.out);
    for (const std::string mode : {"--shape 7x5 --axis 0", "--shape 7x5 --axis 0 --order fortran", "--shape 7x33 --axis 1 --stride 40",
                                   "--segments 300 --seg-dist uniform:0:50", "--segments 40 --seg-len 9 --type i32",
                                   "--segments 40 --seg-dist uniform:0:5 --type f16 --dist special"}) {
      const json j = run_json(mode + " --op " + op + " --kernel all");
      REQUIRE_MESSAGE(j.size() == 2, mode);  // auto and pairs
      for (const auto& run : j) {
        CHECK_MESSAGE(run.at("agree") == run.at("count"), op, " ", mode, ": ", run.dump());
        CHECK_MESSAGE(run.at("value_type") == run.at("type"), op, " ", mode);
      }
    }
  }
  // v(r, c) = 10 r + c: the first of each row and column is the least, the last the greatest.
  const std::string path = matrix_npy("pairs.npy", 3, 4, false);
  CHECK(run_json("--input " + path + " --axis 1 --op argmin")[0].at("first_values") == "0@0 10@0 20@0");
  CHECK(run_json("--input " + path + " --axis 1 --op argmax")[0].at("first_values") == "3@3 13@3 23@3");
  CHECK(run_json("--input " + path + " --axis 0 --op argmax")[0].at("first_values") == "20@2 21@2 22@2 ...");
  CHECK(run_json("--input " + path + " --axis 0 --op minmax")[0].at("first_values") == "0..20 1..21 2..22 ...");
  // Every backend here, rows and segments.
  for (const std::string mode : {"--shape 33x7 --axis 1", "--shape 33x7 --axis 0", "--segments 30 --seg-dist uniform:0:9"}) {
    const Run r = cli("--backend all --op argmax " + mode);
    CHECK_MESSAGE(r.code == 0, mode, ": ", r.out);
  }
}

TEST_CASE("mapped ops on rows, columns and segments cross-check against the reference; streamed files too") {
  for (const std::string op : {"sumsq", "asum", "nansum", "nanmin", "nanmax", "count_nonzero"}) {
    for (const std::string mode : {"--shape 7x5 --axis 0 --dist special", "--shape 7x33 --axis 1 --stride 40",
                                   "--segments 300 --seg-dist uniform:0:50 --type i32 --dist special",
                                   "--segments 40 --seg-len 9 --type f16"}) {
      const json j = run_json(mode + " --op " + op + " --kernel all");
      REQUIRE_MESSAGE(j.size() >= 2, mode);  // auto and the fold strategies
      for (const auto& run : j) CHECK_MESSAGE(run.at("agree") == run.at("count"), op, " ", mode, ": ", run.dump());
    }
  }
  // v(r, c) = 10 r + c, read from a file in chunks of one row: the sum of squares of column 0 is
  // 0 + 100 + 400, of row 1 100 + 121 + 144 + 169.
  const std::string path = matrix_npy("mapped.npy", 3, 4, false);
  CHECK(run_json("--input " + path + " --axis 0 --op sumsq --chunk 32")[0].at("first_values") == "500 563 632 ...");
  CHECK(run_json("--input " + path + " --axis 1 --op count_nonzero --chunk 32")[0].at("first_values") == "3 4 4");
  const Run exact = cli("-b omp --shape 7x5 --op sumsq --exact");
  CHECK(exact.code == 2);
  CHECK_MESSAGE(exact.out.find("no exact mode") != std::string::npos, exact.out);
}

TEST_CASE("OpenMP segments give the same bits from the portable folds as from the AVX2 ones") {
  // XREDUCE_OMP_PORTABLE turns the AVX2 copy (32-byte packs) off; both copies put each element
  // into the same lane and fold the lanes in the same order, so every value is the same bits (on
  // a CPU without AVX2 both runs take the portable copy). Lengths of every remainder, empty
  // segments among them; each type with an op, turning with the type.
  const std::string ops[] = {"sum", "max", "prod", "min"};
  const std::string types[] = {"f32", "f64", "f16", "bf16", "i8", "u8", "i32", "u32", "u64"};
  for (std::size_t k = 0; k < std::size(types); ++k)
    for (const std::string& op : {ops[k % std::size(ops)], std::string("sum")}) {
      const auto path = [&](const char* copy) {  // raw bytes: bf16 has no .npy type
        return (fs::path(XR_TEST_TMP) / ("seg_" + types[k] + "_" + op + "_" + copy + ".bin")).string();
      };
      const std::string args = " --backend omp --threads 2 --repeat 1 --warmup 0 --dist normal --segments 3001 "
                               "--seg-dist uniform:0:200 --type " + types[k] + " --op " + op + " --save-result ";
      CAPTURE(args);
      const Run fast = cli(args + path("fast"));
      REQUIRE_MESSAGE(fast.code == 0, fast.out);
      const std::string a = read_file(path("fast"));
      CHECK(a.size() % 3001 == 0);
      CHECK(!a.empty());
      for (const char* env : {"XREDUCE_OMP_PORTABLE=1"}) {
        const Run other = shell(std::string(env) + " timeout 60 " + std::string(XR_REDUCE_CLI) + args + path(env));
        REQUIRE_MESSAGE(other.code == 0, other.out);
        CAPTURE(env);
        CHECK(a == read_file(path(env)));
      }
    }
}

TEST_CASE("segmented errors: one line, exit 2") {
  for (const std::string args :
       {"--shape 3x", "--shape 3x4x5", "--segments 10", "--segments 10 --seg-len 2 --seg-dist uniform:1:2",
        "--segments 4 --seg-dist gamma:2", "--segments 4 --seg-dist uniform:5:1", "--shape 4x4 --axis 2",
        "--shape 4x4 --stride 3", "--shape 4x4 --segments 3 --seg-len 1", "--shape 4x4 --kernel nope",
        "--shape 4x4 --order z", "--shape 4x4 --n 5", "--save-result x.npy", "--segments 3 --seg-len 2 --exact --op prod",
        "--segments 3 --seg-len 2 --type bf16 --op max --save-result v.npy"}) {
    const Run r = cli("--backend omp " + args);
    CHECK_MESSAGE(r.code == 2, args, ": ", r.out);
    CHECK_MESSAGE(one_error_line(r.out), args, ": ", r.out);
  }
  // A pair op on a strategy of the folds, and exact mode for a pair op: one line each.
  for (const std::string args : {"--shape 7x5 --axis 1 --op argmin --kernel rows", "--segments 5 --seg-len 3 --op minmax --exact"}) {
    const Run r = cli("--backend omp " + args);
    CHECK_MESSAGE(r.code == 2, args, ": ", r.out);
    CHECK_MESSAGE(one_error_line(r.out), args, ": ", r.out);
  }
  const auto bad = (fs::path(XR_TEST_TMP) / "bad_offsets.npy").string();
  const std::vector<std::int64_t> decreasing{0, 5, 3};
  xr::save_npy(bad, xr::HostArray::of(std::span<const std::int64_t>(decreasing)));
  const Run r = cli("--backend omp --offsets " + bad);
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.out.find("position 2") != std::string::npos, r.out);
}

TEST_CASE("segmented options that do not apply to the reduction asked for are refused") {
  const std::string npy = matrix_npy("layout.npy", 3, 4, false);
  const auto offsets = (fs::path(XR_TEST_TMP) / "apply_offsets.npy").string();
  const std::vector<std::int64_t> o{0, 2, 5};
  xr::save_npy(offsets, xr::HostArray::of(std::span<const std::int64_t>(o)));
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"--shape 4x4 --seg-len 2", "--seg-len gives the lengths of generated segments"},
           {"--shape 4x4 --seg-dist uniform:1:2", "--seg-dist gives the lengths of generated segments"},
           {"--input " + npy + " --axis 0 --stride 8", "--stride lays out a generated array"},
           {"--input " + npy + " --axis 0 --order fortran", "--order lays out a generated array"},
           {"--segments 3 --seg-len 2 --stride 4", "--stride is for a 2-D array"},
           {"--segments 3 --seg-len 2 --order fortran", "--order is for a 2-D array"},
           {"--segments 3 --seg-len 2 --axis 0", "--axis is for a 2-D array"},
           {"--offsets " + offsets + " --seg-len 2", "--offsets gives them from a file"}}) {
    const Run r = cli("--backend omp " + args);
    CHECK_MESSAGE(r.code == 2, args, ": ", r.out);
    CHECK_MESSAGE(one_error_line(r.out), args, ": ", r.out);
    CHECK_MESSAGE(r.out.find(says) != std::string::npos, args, ": ", r.out);
  }
}

TEST_CASE("rows of no columns give the identity whatever their stride") {
  const json dense = run_json("--shape 5x0 --axis 1");
  for (const std::string extra : {"--stride 0", "--stride 3", "--stride 3 --exact", "--stride 3 --op prod"}) {
    const json j = run_json("--shape 5x0 --axis 1 " + extra);
    CHECK_MESSAGE(j[0].at("count") == 5, extra);
    CHECK_MESSAGE(j[0].at("agree") == 5, extra);
    if (extra.find("prod") == std::string::npos) CHECK(j[0].at("first_values") == dense[0].at("first_values"));
    else CHECK(j[0].at("first_values") == "1 1 1 ...");
  }
}

TEST_CASE("generated segments whose total length passes 2^63 - 1 are refused by that total") {
  for (const std::string args : {"--segments 64 --seg-dist uniform:0:2^62", "--segments 3 --seg-len 2^62"}) {
    const Run r = cli("--backend omp " + args);
    CHECK_MESSAGE(r.code == 2, args, ": ", r.out);
    CHECK_MESSAGE(one_error_line(r.out), args, ": ", r.out);
    CHECK_MESSAGE(r.out.find("total length passes 2^63 - 1") != std::string::npos, args, ": ", r.out);
    CHECK_MESSAGE(r.out.find("offsets") == std::string::npos, args, ": ", r.out);
  }
  const Run big = cli("--backend omp --segments 2 --seg-len 2^61");
  CHECK(big.code == 2);
  CHECK_MESSAGE(big.out.find("half of this machine's memory") != std::string::npos, big.out);
}

TEST_CASE("files stream in chunks: every op on rows, columns (C and Fortran) and offsets agrees") {
  // 300 x 500 f64 files, in chunks of 1000 elements: a row is half a chunk, a column spans every
  // chunk, and one segment is 40 chunks long. Each op's values equal those of one whole chunk.
  std::vector<double> v(300 * 500);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 7919) % 1013) - 500.25;
  const auto c_path = (fs::path(XR_TEST_TMP) / "stream_c.npy").string();
  const auto f_path = (fs::path(XR_TEST_TMP) / "stream_f.npy").string();
  const auto o_path = (fs::path(XR_TEST_TMP) / "stream_offsets.npy").string();
  xr::save_npy(c_path, xr::HostArray::of(std::span<const double>(v)), {300, 500}, false);
  xr::save_npy(f_path, xr::HostArray::of(std::span<const double>(v)), {300, 500}, true);
  const std::vector<std::int64_t> offsets{0, 0, 999, 1001, 1001, 41001, 41500, 150000};
  xr::save_npy(o_path, xr::HostArray::of(std::span<const std::int64_t>(offsets)));
  const std::vector<std::string> modes = {"--input " + c_path + " --axis 1", "--input " + c_path + " --axis 0",
                                          "--input " + f_path + " --axis 1", "--input " + f_path + " --axis 0",
                                          "--input " + c_path + " --offsets " + o_path};
  for (const std::string op : {"sum", "prod", "min", "max", "argmin", "argmax", "minmax"})
    for (const auto& mode : modes) {
      const auto saved = [&](const char* how) { return (fs::path(XR_TEST_TMP) / ("stream_" + op + "_" + how + ".npy")).string(); };
      const json chunked = run_json(mode + " --op " + op + " --chunk 1000 --save-result " + saved("chunked"));
      CHECK_MESSAGE(chunked[0].at("agree") == chunked[0].at("count"), op, " ", mode, ": ", chunked.dump());
      CHECK_MESSAGE(chunked[0].at("jobs").get<int>() > 1, op, " ", mode);
      const json whole = run_json(mode + " --op " + op + " --save-result " + saved("whole"));
      CHECK(whole[0].at("agree") == whole[0].at("count"));
      if (op != "sum" && op != "prod") CHECK_MESSAGE(read_file(saved("chunked")) == read_file(saved("whole")), op, " ", mode);
    }
  // Exact sums of a file in chunks, and OpenCL on each layout (when usable here).
  for (const auto& mode : modes) {
    const json exact = run_json(mode + " --exact --chunk 1000");
    CHECK_MESSAGE(exact[0].at("agree") == exact[0].at("count"), mode, ": ", exact.dump());
    if (!xr::backend_status("opencl").usable) continue;
    for (const std::string op : {"sum", "argmax"}) {
      const Run r = cli("--backend opencl --json --repeat 1 --warmup 0 --chunk 1000 --op " + op + " " + mode);
      REQUIRE_MESSAGE(r.code == 0, mode, ": ", r.out);
      const json j = json::parse(r.out);
      CHECK_MESSAGE(j[0].at("agree") == j[0].at("count"), op, " ", mode, ": ", j.dump());
    }
  }
}
