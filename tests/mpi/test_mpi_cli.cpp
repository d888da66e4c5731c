// reduce_cli under mpirun, as a user runs it: the same exact bits for every rank count, MPMD
// backends, a file split by byte ranges, and failures that end every rank with one line.
#include <doctest/doctest.h>

#include <filesystem>
#include <initializer_list>
#include <random>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli_run.hpp"
#include "npy_bytes.hpp"

using namespace xr_cli_test;

namespace {

// mpirun with its rank count and command line(s), stopped after 60 s should anything hang.
Run mpirun(const std::string& ranks_and_args) {
  return shell("timeout 60 " + std::string(XR_MPIEXEC) + " " + ranks_and_args);
}
std::string cli_path() { return XR_REDUCE_CLI; }

nlohmann::json global(const Run& r) {
  const auto start = r.out.find('{');
  REQUIRE_MESSAGE(start != std::string::npos, r.out);
  return nlohmann::json::parse(r.out.substr(start)).at("result");
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("exact sums: the bits of one process on 1, 2, 3 and 4 ranks, generated from the global index") {
  for (const char* type : {"f32", "f64"}) {
    const std::string args = " -b omp --exact --json --repeat 1 --warmup 0 --dist cancel --n 1000003 --type " + std::string(type);
    const Run one = cli(args);
    REQUIRE_MESSAGE(one.code == 0, one.out);
    const std::string want = nlohmann::json::parse(one.out).at(0).at("value").get<std::string>();
    for (int ranks = 1; ranks <= 4; ++ranks) {
      const Run r = mpirun("-n " + std::to_string(ranks) + " " + cli_path() + args);
      REQUIRE_MESSAGE(r.code == 0, r.out);
      const nlohmann::json g = global(r);
      CHECK(g.at("value").get<std::string>() == want);
      CHECK(g.at("agrees").get<bool>());
      CHECK(g.at("ranks").get<int>() == ranks);
    }
  }
}

TEST_CASE("argmin, argmax and minmax: one process's value, global index and max on 1 to 4 ranks") {
  for (const char* op : {"argmin", "argmax", "minmax"}) {
    const std::string args = std::string(" -b omp --json --repeat 1 --warmup 0 --dist normal --n 1000003 --op ") + op;
    const Run one = cli(args);
    REQUIRE_MESSAGE(one.code == 0, one.out);
    const nlohmann::json want = nlohmann::json::parse(one.out).at(0);
    const bool arg = std::string(op) != "minmax";
    for (int ranks = 1; ranks <= 4; ++ranks) {
      const Run r = mpirun("-n " + std::to_string(ranks) + " " + cli_path() + args);
      REQUIRE_MESSAGE(r.code == 0, r.out);
      const nlohmann::json g = global(r);
      CHECK(g.at("value").get<std::string>() == want.at("value").get<std::string>());
      if (arg) CHECK(g.at("index").get<std::int64_t>() == want.at("index").get<std::int64_t>());
      else CHECK(g.at("maximum").get<std::string>() == want.at("maximum").get<std::string>());
      CHECK(g.at("agrees").get<bool>());
    }
  }
}

TEST_CASE("MPMD: OpenMP and OpenCL ranks, one of them holding nothing, agree with the distributed reference") {
  const std::string common = " --n 300007 --repeat 2 --warmup 1 --json";
  for (const char* op : {"sum --exact", "max", "min --type i64", "prod --type i32 --dist exact_product"}) {
    const Run r = mpirun("-n 1 " + cli_path() + " -b omp --share 0 --op " + op + common + " : -n 2 " + cli_path() +
                         " -b opencl --op " + op + common);
    REQUIRE_MESSAGE(r.code == 0, r.out);
    const nlohmann::json all = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    CHECK(all.at("ranks").at(0).at("n").get<int>() == 0);
    CHECK(all.at("ranks").at(1).at("backend").get<std::string>() == "opencl");
    CHECK(all.at("result").at("agrees").get<bool>());
  }
}

TEST_CASE("--input: each rank streams its byte range of a .npy or raw file") {
  const std::string npy = scratch("mpi_input.npy", "");
  REQUIRE(cli("-b omp --n 200003 --type f64 --dist normal --save " + npy).code == 0);
  const Run one = cli("-b omp --exact --json --input " + npy);
  REQUIRE_MESSAGE(one.code == 0, one.out);
  const Run r = mpirun("-n 3 " + cli_path() + " -b omp --exact --json --input " + npy);
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK(global(r).at("value") == nlohmann::json::parse(one.out).at(0).at("value"));
  const std::string raw = scratch("mpi_input.bin", "");
  REQUIRE(cli("-b omp --n 100000 --type i32 --save " + raw).code == 0);
  const Run ints = mpirun("-n 2 " + cli_path() + " -b omp --json --input " + raw + " --type i32 --op max");
  CHECK_MESSAGE(ints.code == 0, ints.out);
}

TEST_CASE("a rank's failure ends every rank with one line, exit 2, and nothing hangs") {
  // A file no rank can open.
  const Run missing = mpirun("-n 2 " + cli_path() + " -b omp --input /nonexistent/x.npy");
  CHECK(missing.code == 2);
  CHECK_MESSAGE(count(missing.out, "reduce_cli: error: rank 0 of 2") == 1, missing.out);
  CHECK(missing.out.find("cannot open") != std::string::npos);
  // A file only one rank's command line names wrongly (MPMD).
  const Run one_bad = mpirun("-n 1 " + cli_path() + " -b omp --n 1000 : -n 1 " + cli_path() + " -b omp --n 1000 --op nope");
  CHECK(one_bad.code == 2);
  CHECK_MESSAGE(count(one_bad.out, "reduce_cli: error: rank 1 of 2") == 1, one_bad.out);
  // Ranks asked for different reductions.
  const Run differ = mpirun("-n 1 " + cli_path() + " -b omp --n 1000 : -n 1 " + cli_path() + " -b omp --n 1001");
  CHECK(differ.code == 2);
  CHECK_MESSAGE(differ.out.find("different reductions") != std::string::npos, differ.out);
  // A backend one rank does not have.
  const Run gone = mpirun("-n 2 " + cli_path() + " -b cuda --n 1000");
  CHECK((gone.code == 3 || gone.code == 0));
  // Text files, standard input and the ladder are for one process.
  const std::string text = scratch("mpi_input.txt", "1\n2\n3\n");
  for (const std::string& args : {"--input " + text, std::string("--input -"), std::string("--kernel all")}) {
    const Run r = mpirun("-n 2 " + cli_path() + " -b omp " + args + " </dev/null");
    CHECK_MESSAGE(r.code == 2, args << ": " << r.out);
    CHECK_MESSAGE(count(r.out, "reduce_cli: error: ") == 1, r.out);
  }
}

TEST_CASE("a rank that prints and exits (--help) or is refused ends every rank at once, MPMD too") {
  // Each run is stopped after 30 s: a rank left waiting for one that has gone shows as exit 124.
  const auto quick = [](const std::string& ranks_and_args) {
    return shell("timeout 30 " + std::string(XR_MPIEXEC) + " " + ranks_and_args);
  };
  const std::string job = cli_path() + " -b omp --n 1000 --repeat 1 --warmup 0";
  const std::string help_heading = "reduce_cli: reduce an array";
  const std::string nothing_runs = "no rank reduces anything";
  // --help on one rank, first or last: that rank prints the help once, every rank exits 0.
  for (const std::string& ranks : {"-n 1 " + cli_path() + " --help : -n 1 " + job,
                                   "-n 2 " + job + " : -n 1 " + cli_path() + " --help"}) {
    CAPTURE(ranks);
    const Run r = quick(ranks);
    CHECK_MESSAGE(r.code == 0, r.out);
    CHECK_MESSAGE(count(r.out, help_heading) == 1, r.out);
    CHECK_MESSAGE(count(r.out, nothing_runs) == 1, r.out);
  }
  // --help on every rank: printed once, and no rank was asked for a reduction.
  const Run all = quick("-n 2 " + cli_path() + " --help");
  CHECK_MESSAGE(all.code == 0, all.out);
  CHECK_MESSAGE(count(all.out, help_heading) == 1, all.out);
  CHECK_MESSAGE(count(all.out, nothing_runs) == 0, all.out);
  // A command-line error, --list, and `check` (one process only) on one rank: one line, exit 2.
  for (const std::string& other : {std::string("--bogus"), std::string("--list"), std::string("check --sizes 1")}) {
    CAPTURE(other);
    const Run r = quick("-n 1 " + job + " : -n 1 " + cli_path() + " " + other);
    CHECK_MESSAGE(r.code == 2, r.out);
    CHECK_MESSAGE(count(r.out, "reduce_cli: error: ") == 1, r.out);
    CHECK_MESSAGE(count(r.out, "reduce_cli: error: rank 1 of 2") == 1, r.out);
  }
}

// One process's --save-result bytes and the same job's under mpirun, on each rank count of
// `rank_counts` (3 ranks: the last holds nothing): the values must be the same bytes, and agree.
void check_segmented_bits(const std::string& args, std::initializer_list<int> rank_counts = {2, 3}) {
  CAPTURE(args);
  const std::string one_path = scratch("mpi_seg_one.bin", ""), many_path = scratch("mpi_seg_many.bin", "");
  const Run one = cli("-b omp --repeat 1 --warmup 0 " + args + " --save-result " + one_path);
  REQUIRE_MESSAGE(one.code == 0, one.out);
  const std::string want = read_file(one_path);
  for (const int ranks : rank_counts) {
    const std::string job = cli_path() + " -b omp --repeat 1 --warmup 0 --json " + args + " --save-result " + many_path;
    // 3 ranks: the last holds nothing (an MPMD line, --share 0), so a part may be empty.
    const std::string line = ranks == 3 ? "-n 2 " + job + " : -n 1 " + job + " --share 0"
                                        : "-n " + std::to_string(ranks) + " " + job;
    std::filesystem::remove(many_path);
    const Run r = mpirun(line);
    REQUIRE_MESSAGE(r.code == 0, ranks << " ranks: " << r.out);
    const nlohmann::json g = global(r);
    CHECK(g.at("agrees").get<bool>());
    CHECK(g.at("ranks").get<int>() == ranks);
    CHECK_MESSAGE(read_file(many_path) == want, ranks << " ranks: the values differ from one process's");
  }
}

TEST_CASE("rows and columns of a 2-D array split by rows over 1 to 4 ranks: one process's values") {
  for (const char* order : {"c", "fortran"})
    for (const char* axis : {"0", "1"}) {
      const std::string layout = std::string(" --shape 37x13 --order ") + order + " --axis " + axis;
      check_segmented_bits("--op sum --exact --type f32 --dist cancel" + layout);
      check_segmented_bits("--op argmax --type f64 --dist normal" + layout);
    }
  check_segmented_bits("--op mean --type i32 --shape 37x13 --axis 0", {1, 2, 3, 4});
  check_segmented_bits("--op minmax --type u8 --shape 5x300 --axis 0");
  check_segmented_bits("--op all --type i8 --shape 300x3 --axis 1");
  // A .npy file in either order (values with ties, for argmin and argmax): each rank reads its rows.
  for (const bool fortran : {false, true}) {
    constexpr int kRows = 41, kCols = 7;
    std::vector<double> v(kRows * kCols);
    for (int r = 0; r < kRows; ++r)
      for (int c = 0; c < kCols; ++c) v[fortran ? c * kRows + r : r * kCols + c] = (r * 7 + c * 3) % 11 - 5.0;
    const std::string npy = scratch(fortran ? "mpi_matrix_f.npy" : "mpi_matrix_c.npy",
                                    xr_npy_test::npy_bytes(std::string("{'descr': '<f8', 'fortran_order': ") +
                                                               (fortran ? "True" : "False") + ", 'shape': (41, 7), }",
                                                           xr_npy_test::bytes_of<double>(v)));
    for (const char* axis : {"0", "1"}) check_segmented_bits("--op argmin --input " + npy + " --axis " + axis);
    check_segmented_bits("--op sum --exact --input " + npy + " --axis 0");
  }
}

TEST_CASE("CSR segments over 1 to 4 ranks, spanning ranks and empty: one process's values") {
  check_segmented_bits("--op sum --exact --type f64 --dist wide --segments 200 --seg-dist uniform:0:40", {1, 2, 3, 4});
  check_segmented_bits("--op argmin --type f32 --dist normal --segments 61 --seg-len 17");
  check_segmented_bits("--op nanmax --type f16 --segments 90 --seg-dist uniform:0:9");
  check_segmented_bits("--op count_nonzero --type u8 --segments 3 --seg-len 1000");
  // Offsets and data from files.
  const std::string data = scratch("mpi_seg_data.npy", "");
  REQUIRE(cli("-b omp --n 1000 --type f32 --dist normal --save " + data).code == 0);
  const std::string offsets =
      scratch("mpi_seg_offsets.bin", xr_npy_test::bytes_of<std::int64_t>({0, 0, 10, 500, 501, 999, 1000}));
  check_segmented_bits("--op max --input " + data + " --offsets " + offsets);
}

TEST_CASE("segmented options under mpirun: what does not apply is refused on every rank, with one line") {
  const std::pair<std::string, std::string> cases[] = {
      {"--shape 4x4 --stride 8", "--stride lays out one process's array"},
      {"--stride 8", "--stride shapes a segmented reduction"},
      {"--seg-len 2", "--seg-len shapes a segmented reduction"},
      {"--save-result /dev/null", "--save-result writes the values of a segmented reduction"},
      {"--shape 4x4 --n 16", "takes its size from --shape"},
      {"--shape 4x4 --segments 3 --seg-len 2", "two different reductions"},
      {"--segments 3 --seg-len 2 --input -", "standard input cannot be split"},
      {"--shape 4x4 --kernel all", "--kernel all is for one process"},
  };
  for (const auto& [args, message] : cases) {
    const Run r = mpirun("-n 2 " + cli_path() + " -b omp " + args + " </dev/null");
    CHECK_MESSAGE(r.code == 2, args << ": " << r.out);
    CHECK_MESSAGE(count(r.out, "reduce_cli: error: ") == 1, r.out);
    CHECK_MESSAGE(r.out.find(message) != std::string::npos, args << ": " << r.out);
  }
}

TEST_CASE("--share needs mpirun") {
  const Run r = cli("-b omp --n 100 --share 2");
  CHECK(r.code == 2);
  CHECK(one_error_line(r.out));
}

TEST_CASE("seeded combinations of options on 1-3 ranks and MPMD: the result, or one line, and nothing hangs") {
  std::mt19937_64 rng(11);
  const auto pick = [&](const std::vector<std::string>& list) { return list[rng() % list.size()]; };
  const std::vector<std::string> values = {
      "--n 0", "--n 1", "--n 17", "--n 100003", "--n -1", "--n 2^64", "--n x", "--type f16", "--type bf16",
      "--type u8", "--type i64", "--type nope", "--op argmin", "--op minmax", "--op prod", "--op max", "--op nope",
      "--exact", "--accumulator native", "--kernel vector", "--kernel clause", "--kernel nonesuch", "--dist cancel",
      "--dist normal", "--dist nope", "--share 0", "--share 3", "--share -1", "--chunk 1000", "--chunk 0",
      "--threads 1", "--repeat 0", "--seed 7", "--axis 1", "--shape 4x4", "--segments 3 --seg-len 2",
      "--input /nonexistent", "--device 9", "--save-result /tmp/x.npy", "--json"};
  int values_given = 0, refusals = 0;
  for (int i = 0; i < 24; ++i) {
    std::string args = " -b omp --repeat 1 --warmup 0";
    for (int k = 1 + static_cast<int>(rng() % 3); k > 0; --k) args += " " + pick(values);
    const int ranks = 1 + static_cast<int>(rng() % 3);
    const std::string line = rng() % 4 == 0 ? "-n 1 " + cli_path() + args + " : -n " + std::to_string(ranks) + " " +
                                                  cli_path() + args + " " + pick(values)
                                            : "-n " + std::to_string(ranks) + " " + cli_path() + args;
    CAPTURE(line);
    const Run r = shell("timeout 30 " + std::string(XR_MPIEXEC) + " " + line);
    CHECK_MESSAGE((r.code == 0 || r.code == 2), r.out);  // 124: a rank waited for one that had gone
    if (r.code == 2) CHECK_MESSAGE(count(r.out, "reduce_cli: error: ") == 1, r.out);
    if (r.code == 0) CHECK_MESSAGE(r.out.find("error") == std::string::npos, r.out);
    values_given += r.code == 0;
    refusals += r.code == 2;
  }
  CHECK(values_given >= 4);  // the seed gives both kinds: the cases test something
  CHECK(refusals >= 4);
}

