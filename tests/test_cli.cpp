// reduce_cli as a user runs it: exit codes and the one-line error of every failure path.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "xreduce/xreduce.hpp"

namespace fs = std::filesystem;

namespace {

struct Run {
  int code;
  std::string out;  // stdout and stderr together
};

Run cli(const std::string& args) {
  const std::string cmd = std::string(XR_REDUCE_CLI) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe);
  std::string out;
  std::array<char, 4096> buf{};
  while (std::size_t got = std::fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), got);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string scratch(const std::string& name, const std::string& bytes) {
  fs::create_directories(XR_TEST_TMP);
  const auto p = fs::path(XR_TEST_TMP) / name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}

bool one_error_line(const std::string& out) {
  return out.rfind("reduce_cli: error: ", 0) == 0 && out.find('\n') == out.size() - 1;
}

}  // namespace

TEST_CASE("no arguments: the main job reduces on every available backend and agrees") {
  const Run r = cli("--n 100000");
  CHECK_MESSAGE(r.code == 0, r.out);
  CHECK(r.out.find("omp") != std::string::npos);
  CHECK(r.out.find("agrees") != std::string::npos);
  CHECK(r.out.find(" NO") == std::string::npos);
}

TEST_CASE("--n accepts plain, suffixed, power and scientific counts") {
  for (const auto& [text, n] : std::vector<std::pair<std::string, std::uint64_t>>{
           {"16777216", 16777216}, {"16M", 16777216}, {"2^24", 16777216}, {"1e6", 1000000}, {"64K", 65536}}) {
    const Run r = cli("--backend omp --json --repeat 1 --warmup 0 --n " + text);
    REQUIRE_MESSAGE(r.code == 0, r.out);
    CHECK(nlohmann::json::parse(r.out).at(0).at("n").get<std::uint64_t>() == n);
  }
}

TEST_CASE("--kernel all prints the ladder with its baseline; --kernel list lists rungs") {
  const Run all = cli("--backend omp --kernel all --n 2^16 --type i32");
  CHECK_MESSAGE(all.code == 0, all.out);
  for (const char* word : {"clause", "vector", "stream_read (baseline)", "cumulative", "step"})
    CHECK_MESSAGE(all.out.find(word) != std::string::npos, word);
  const Run list = cli("--backend omp --kernel list");
  CHECK(list.code == 0);
  CHECK(list.out.find("independent lanes") != std::string::npos);
}

TEST_CASE("--list shows every backend and why one is unavailable") {
  const Run r = cli("--list");
  CHECK(r.code == 0);
  for (const char* name : {"cuda", "opencl", "omp"}) CHECK(r.out.find(name) != std::string::npos);
  const Run j = cli("--list --json");
  CHECK(nlohmann::json::parse(j.out).size() == 3);
}

TEST_CASE("JSON results carry the record") {
  const Run r = cli("--backend omp --json --op max --type f64 --n 1000");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out).at(0);
  for (const char* key : {"value", "reference", "agrees", "kernel_ms", "transfer_ms", "bytes_per_s", "launches",
                          "device", "kernel", "rounding_depth"})
    CHECK_MESSAGE(j.contains(key), key);
  CHECK(j.at("agrees").get<bool>());
}

TEST_CASE("usage errors exit 2 with one line") {
  for (const char* args : {"--bogus", "--backend foo", "--op mean", "--type u8", "--n lots", "--n 2^^4",
                           "--backend omp --kernel warp_magic", "--dist gauss", "--repeat 0",
                           "--backend omp --op min --n 0", "--accumulator huge"}) {
    const Run r = cli(args);
    CHECK_MESSAGE(r.code == 2, args, " -> ", r.out);
    CHECK_MESSAGE(one_error_line(r.out), args, " -> ", r.out);
  }
}

TEST_CASE("file errors exit 2 naming the file and the problem") {
  const std::string odd = scratch("odd.bin", std::string(10, 'x'));
  const std::string txt = scratch("bad.txt", "1\n2\nthree\n");
  const std::string fake = scratch("fake.npy", "not numpy at all");
  std::string npy_bytes;
  {
    const auto x = xr::generate(xr::DType::F32, 64, xr::Dist::Uniform, 1);
    const auto p = (fs::path(XR_TEST_TMP) / "full.npy").string();
    xr::save_npy(p, x.view());
    std::ifstream in(p, std::ios::binary);
    npy_bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string truncated = scratch("short.npy", npy_bytes.substr(0, npy_bytes.size() - 9));
  std::string u2 = npy_bytes;
  u2.replace(u2.find("<f4"), 3, "<u2");
  const std::string badtype = scratch("u2.npy", u2);
  for (const auto& [args, expect] : std::vector<std::pair<std::string, std::string>>{
           {"--input /nonexistent/data.bin --type f32", "cannot open"},
           {"--input " + odd + " --type f64", "not a multiple of the 8-byte f64"},
           {"--input " + odd, "needs an element type"},
           {"--input " + txt, "line 3: cannot parse 'three'"},
           {"--input " + fake, "bad magic"},
           {"--input " + truncated, "truncated"},
           {"--input " + badtype, "unsupported .npy dtype '<u2'"}}) {
    const Run r = cli("--backend omp " + args);
    CHECK_MESSAGE(r.code == 2, args, " -> ", r.out);
    CHECK_MESSAGE(one_error_line(r.out), args, " -> ", r.out);
    CHECK_MESSAGE(r.out.find(expect) != std::string::npos, args, " -> ", r.out);
  }
}

TEST_CASE("a file input is reduced and checked") {
  const std::string txt = scratch("good.txt", "1\n2\n3.5\n");
  const Run r = cli("--backend omp --json --input " + txt);
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK(nlohmann::json::parse(r.out).at(0).at("value").get<std::string>() == "6.5");
}

TEST_CASE("a backend asked for by name but unavailable exits 3") {
  for (const auto& s : xr::backend_statuses()) {
    if (s.usable) continue;
    const Run r = cli("--backend " + s.name + " --n 10");
    CHECK_MESSAGE(r.code == 3, s.name, " -> ", r.out);
    CHECK(one_error_line(r.out));
    CHECK(r.out.find(s.reason) != std::string::npos);
  }
}

TEST_CASE("--exact: bit-for-bit results, named as exact, and refused where it cannot apply") {
  const Run r = cli("--backend omp --json --exact --type f64 --dist cancel --n 100003");
  REQUIRE_MESSAGE(r.code == 0, r.out);
  const auto j = nlohmann::json::parse(r.out).at(0);
  CHECK(j.at("agrees").get<bool>());
  CHECK(j.at("value").get<std::string>() == j.at("reference").get<std::string>());
  CHECK(j.at("kernel").get<std::string>() == "auto:exact");
  for (const char* args : {"--backend omp --exact --op prod --type f32", "--backend omp --exact --kernel clause"}) {
    const Run bad = cli(args);
    CHECK_MESSAGE(bad.code == 2, args, " -> ", bad.out);
    CHECK_MESSAGE(one_error_line(bad.out), args, " -> ", bad.out);
  }
  // Integer sums are exact anyway: --exact changes nothing and is accepted by every kernel.
  CHECK(cli("--backend omp --exact --type i32 --kernel clause --n 1000").code == 0);
}

TEST_CASE("a few hundred MB file streams through every backend in bounded chunks, bit-identical in exact mode") {
  // 80 Mi f32 = 320 MiB plus the .npy header, written by reduce_cli --save.
  const std::string big = (fs::path(XR_TEST_TMP) / "big_stream.npy").string();
  fs::create_directories(XR_TEST_TMP);
  const Run made = cli("--backend omp --n 80M --dist normal --repeat 1 --warmup 0 --save " + big);
  REQUIRE_MESSAGE(made.code == 0, made.out);
  REQUIRE(fs::file_size(big) > (std::uintmax_t{320} << 20));
  const Run r = cli("--backend all --input " + big + " --exact --repeat 1 --warmup 0 --device-mem-limit 48M --json");
  CHECK_MESSAGE(r.code == 0, r.out);
  const auto rows = nlohmann::json::parse(r.out.substr(r.out.find('[')));
  REQUIRE_FALSE(rows.empty());
  for (const auto& row : rows) {
    INFO(row.dump());
    CHECK(row.at("agrees").get<bool>());
    CHECK(row.at("value").get<std::string>() == rows.at(0).at("value").get<std::string>());
    CHECK(row.at("n").get<std::uint64_t>() == (std::uint64_t{80} << 20));
    CHECK(row.at("path").get<std::string>().rfind("stream: ", 0) == 0);
    // Device backends: 3 slots of 16 MiB under the 48 MiB limit; host backends: 64 MiB chunks.
    CHECK(row.at("chunks").get<std::uint64_t>() == (row.at("backend") == "omp" ? 5u : 20u));
  }
  // The file loses its end: the error names the byte where it stops, checked before any reading.
  fs::resize_file(big, fs::file_size(big) - 4096);
  const Run cut = cli("--backend omp --input " + big);
  CHECK(cut.code == 2);
  CHECK_MESSAGE(one_error_line(cut.out), cut.out);
  CHECK_MESSAGE(cut.out.find("truncated: ends at byte " + std::to_string(fs::file_size(big))) != std::string::npos,
                cut.out);
  fs::remove(big);
}

TEST_CASE("--device-mem-limit, --chunk and --host-path are checked") {
  for (const auto& [args, expect] : std::vector<std::pair<std::string, std::string>>{
           {"--device-mem-limit 12Q", "cannot read '12Q' as a size in bytes"},
           {"--device-mem-limit 0", "cannot read '0' as a size in bytes"},
           {"--chunk 0", "--chunk: must be at least 1"},
           {"--chunk x", "--chunk: cannot read 'x'"}}) {
    const Run r = cli("--backend omp --n 1000 " + args);
    CHECK_MESSAGE(r.code == 2, args, " -> ", r.out);
    CHECK_MESSAGE(one_error_line(r.out), args, " -> ", r.out);
    CHECK_MESSAGE(r.out.find(expect) != std::string::npos, args, " -> ", r.out);
  }
  const Run bad = cli("--backend omp --host-path sideways");
  CHECK(bad.code == 2);
}

TEST_CASE("a plain f32 sum that overflows: the record says so and points to --exact") {
  const std::string txt = scratch("overflow.txt", "3.4e38\n3.4e38\n-3.4e38\n");
  const Run j = cli("--backend omp --json --type f32 --repeat 1 --warmup 0 --input " + txt);
  CHECK_MESSAGE(j.code == 1, j.out);
  const auto row = nlohmann::json::parse(j.out).at(0);
  CHECK(row.at("value").get<std::string>() == "inf");
  CHECK_FALSE(row.at("agrees").get<bool>());
  CHECK(row.at("overflow").get<bool>());
  CHECK_FALSE(row.contains("error"));
  CHECK_FALSE(row.contains("bound"));
  CHECK(row.at("detail").get<std::string>().find("--exact") != std::string::npos);
  const Run table = cli("--backend omp --type f32 --repeat 1 --warmup 0 --input " + txt);
  CHECK(table.code == 1);
  CHECK_MESSAGE(table.out.find("overflowed") != std::string::npos, table.out);
  CHECK_MESSAGE(table.out.find("--exact") != std::string::npos, table.out);
  const Run exact = cli("--backend omp --json --type f32 --exact --repeat 1 --warmup 0 --input " + txt);
  CHECK_MESSAGE(exact.code == 0, exact.out);
}
