// reduce_cli as a user runs it: exit codes and the one-line error of every failure path.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "npy_bytes.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/xreduce.hpp"

using namespace xr_cli_test;

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

TEST_CASE("argmax and argmin carry their index, minmax its max; the pair ops refuse --exact") {
  const xr::HostBuffer x = xr::generate(xr::DType::U8, 100003, xr::Dist::Uniform, 9);  // many ties
  const std::string raw = scratch("pairs.u8", "");
  xr::save_raw(raw, x.view());
  for (xr::Op op : xr::pair_ops) {
    const xr::Reference ref = xr::reference_reduce(x.view(), op);
    const Run r = cli("--backend all --json --op " + std::string(xr::to_string(op)) + " --type u8 --input " + raw);
    REQUIRE_MESSAGE(r.code == 0, r.out);
    for (const auto& j : nlohmann::json::parse(r.out)) {
      CHECK(j.at("agrees").get<bool>());
      CHECK(j.at("value").get<std::string>() == ref.value.to_string());
      if (op == xr::Op::MinMax) {
        CHECK(j.at("maximum").get<std::string>() == ref.maximum.to_string());
        CHECK_FALSE(j.contains("index"));
      } else {
        CHECK(j.at("index").get<std::int64_t>() == ref.index);
        CHECK(j.at("reference_index").get<std::int64_t>() == ref.index);
      }
    }
    const Run table = cli("--backend omp --op " + std::string(xr::to_string(op)) + " --type u8 --input " + raw);
    REQUIRE(table.code == 0);
    const std::string shown = op == xr::Op::MinMax ? ref.value.to_string() + " .. " + ref.maximum.to_string()
                                                   : ref.value.to_string() + " at " + std::to_string(ref.index);
    CHECK_MESSAGE(table.out.find(shown) != std::string::npos, table.out);
    const Run exact = cli("--backend omp --exact --op " + std::string(xr::to_string(op)) + " --n 100");
    CHECK(exact.code == 2);
    CHECK(one_error_line(exact.out));
    CHECK_MESSAGE(exact.out.find("exact mode covers sums") != std::string::npos, exact.out);
  }
  const Run empty = cli("--backend omp --op argmax --n 0");
  CHECK(empty.code == 2);
  CHECK(empty.out.find("argmax of an empty input has no value") != std::string::npos);
}

TEST_CASE("OpenMP's vector rung gives the same bits from its portable lane loops as from its AVX2 and AVX-512 ones") {
  // XREDUCE_OMP_PORTABLE turns the AVX2 and AVX-512 copies of the lane loops off, and F16C with
  // them, so that f16 goes through the portable conversion; XREDUCE_OMP_NO_AVX512 turns off the
  // AVX-512 copy alone (on a CPU without them the runs take the copies it has). Float sums keep their lanes and order in every copy. f16 and bf16, whose
  // loops differ most between the copies, take every op; the other types two, turning with the
  // type.
  const std::string ops[] = {"sum", "prod", "max", "argmin", "minmax"};
  const std::string types[] = {"f32", "f64", "f16", "bf16", "i8", "u8", "i32", "u32", "u64", "i64"};
  for (std::size_t k = 0; k < std::size(types); ++k) {
    const bool half = types[k] == "f16" || types[k] == "bf16";
    for (std::size_t m = 0; m < (half ? std::size(ops) : 2); ++m) {
      const std::string& op = ops[(k + 2 * m) % std::size(ops)];
      const std::string args = "--backend omp --kernel vector --threads 2 --repeat 1 --json --dist normal --n 300007 --op " +
                               op + " --type " + types[k];
      const Run fast = cli(args);
      REQUIRE_MESSAGE(fast.code == 0, fast.out);
      const auto a = nlohmann::json::parse(fast.out).at(0);
      CAPTURE(args);
      CHECK(a.at("agrees").get<bool>());
      for (const char* env : {"XREDUCE_OMP_PORTABLE=1", "XREDUCE_OMP_NO_AVX512=1"}) {
        const Run other = shell(std::string(env) + " timeout 60 " + std::string(XR_REDUCE_CLI) + " " + args);
        REQUIRE_MESSAGE(other.code == 0, other.out);
        const auto b = nlohmann::json::parse(other.out).at(0);
        CAPTURE(env);
        CHECK(a.at("value") == b.at("value"));
        CHECK(a.value("index", -2) == b.value("index", -2));
        CHECK(a.value("maximum", std::string()) == b.value("maximum", std::string()));
      }
    }
  }
}

TEST_CASE("usage errors exit 2 with one line") {
  for (const char* args : {"--bogus", "--backend foo", "--op median", "--type u16", "--n lots", "--n 2^^4",
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

TEST_CASE("every integer type reads from raw and .npy files, and its value prints exactly") {
  std::string u8_npy;
  for (xr::DType t : {xr::DType::I8, xr::DType::U8, xr::DType::U32, xr::DType::U64}) {
    const std::string name(xr::to_string(t));
    CAPTURE(name);
    xr::HostBuffer x = xr::generate(t, 1001, xr::Dist::Special, 3);
    if (t == xr::DType::U64) x.as<std::uint64_t>()[7] = ~std::uint64_t{0};  // the max prints as 2^64 - 1
    const std::string raw = scratch(name + ".bin", ""), npy = scratch(name + ".npy", "");
    xr::save_raw(raw, x.view());
    xr::save_npy(npy, x.view());
    if (t == xr::DType::U8) u8_npy = npy;
    for (xr::Op op : {xr::Op::Sum, xr::Op::Max}) {
      const std::string want = xr::reference_reduce(x.view(), op).value.to_string();
      for (const std::string& args : {"--input " + raw + " --type " + name, "--input " + npy}) {
        const Run r = cli("--backend omp --json --op " + std::string(xr::to_string(op)) + " " + args);
        REQUIRE_MESSAGE(r.code == 0, r.out);
        const auto j = nlohmann::json::parse(r.out).at(0);
        CHECK(j.at("type").get<std::string>() == name);
        CHECK(j.at("value").get<std::string>() == want);
        CHECK(j.at("agrees").get<bool>());
      }
    }
  }
  const Run wrong = cli("--backend omp --input " + u8_npy + " --type i8");
  CHECK(wrong.code == 2);
  CHECK(wrong.out.find("disagrees with the file's dtype") != std::string::npos);
}

TEST_CASE("f16 reads from raw and .npy files, bf16 from raw files; exact sums; bad combinations") {
  for (xr::DType t : {xr::DType::F16, xr::DType::BF16}) {
    const std::string name(xr::to_string(t));
    CAPTURE(name);
    const xr::HostBuffer x = xr::generate(t, 1001, xr::Dist::Normal, 3);
    const std::string raw = scratch(name + ".bin", "");
    xr::save_raw(raw, x.view());
    std::vector<std::string> inputs{"--input " + raw + " --type " + name};
    if (t == xr::DType::F16) {
      const std::string npy = scratch(name + ".npy", "");
      xr::save_npy(npy, x.view());
      inputs.push_back("--input " + npy);
    } else {
      CHECK_THROWS_WITH_AS(xr::save_npy(scratch(name + ".npy", ""), x.view()), doctest::Contains("has no .npy dtype"),
                           xr::InvalidArgument);
    }
    for (xr::Op op : {xr::Op::Sum, xr::Op::Max})
      for (const std::string& args : inputs) {
        const std::string want = xr::reference_reduce(x.view(), op).value.to_string();
        const Run r = cli("--backend omp --json --exact --op " + std::string(xr::to_string(op)) + " " + args);
        REQUIRE_MESSAGE(r.code == 0, r.out);
        const auto j = nlohmann::json::parse(r.out).at(0);
        CHECK(j.at("type").get<std::string>() == name);
        CHECK(j.at("value").get<std::string>() == want);  // sums: f32 and exact, so the very bits
        CHECK(j.at("agrees").get<bool>());
      }
    const Run native = cli("--backend omp --type " + name + " --accumulator native --n 100");
    CHECK(native.code == 2);
    CHECK(one_error_line(native.out));
    CHECK(native.out.find("does not apply to " + name) != std::string::npos);
  }
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

namespace {
std::string value_of(const Run& r) {
  return nlohmann::json::parse(r.out).at(0).at("value").get<std::string>();
}
const std::string kCli = std::string("timeout 60 ") + XR_REDUCE_CLI + " --backend omp --repeat 1 --warmup 0 ";
}  // namespace

TEST_CASE("pipes, FIFOs and standard input are read once; the format comes from their first bytes") {
  const auto x = xr::generate(xr::DType::I32, 1000, xr::Dist::Uniform, 4);
  const std::string npy = scratch("piped.npy", "");
  xr::save_npy(npy, x.view());
  const std::string expect = xr::reference_reduce(x.view(), xr::Op::Sum).value.to_string();
  const Run in = shell("cat " + npy + " | " + kCli + "--json --input -");
  REQUIRE_MESSAGE(in.code == 0, in.out);
  CHECK(value_of(in) == expect);
  const std::string fifo = (fs::path(XR_TEST_TMP) / "data.fifo").string();
  fs::remove(fifo);
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  const Run f = shell("(cat " + npy + " > " + fifo + " &); " + kCli + "--json --input " + fifo);
  CHECK_MESSAGE(f.code == 0, f.out);
  if (f.code == 0) CHECK(value_of(f) == expect);
  const Run text = shell("printf '1\\n2\\n3.5\\n' | " + kCli + "--json --format text --input -");
  REQUIRE_MESSAGE(text.code == 0, text.out);
  CHECK(value_of(text) == "6.5");
  const Run raw = shell("cat " + npy + " | " + kCli + "--input - --format raw");
  CHECK(raw.code == 2);
  CHECK_MESSAGE(one_error_line(raw.out), raw.out);
  CHECK(raw.out.find("stdin: raw binary input needs an element type") != std::string::npos);
  fs::remove(fifo);
}

TEST_CASE("devices are refused unless --n bounds them; directories are refused with their name") {
  for (const auto& [args, expect] : std::vector<std::pair<std::string, std::string>>{
           {"--input /dev/urandom --type i32", "/dev/urandom: a character device, which may never end"},
           {"--input /dev/zero --format text", "/dev/zero: a character device"},
           {"--input /dev/zero --format text --n 5", "line 1: control byte '\\x00'"},
           {"--input " + std::string(XR_TEST_TMP) + " --type f32", std::string(XR_TEST_TMP) + ": is a directory"}}) {
    const Run r = shell(kCli + args);
    CHECK_MESSAGE(r.code == 2, args, " -> ", r.out);
    CHECK_MESSAGE(one_error_line(r.out), args, " -> ", r.out);
    CHECK_MESSAGE(r.out.find(expect) != std::string::npos, args, " -> ", r.out);
  }
  const Run bounded = shell(kCli + "--json --input /dev/urandom --type i32 --n 1000");
  REQUIRE_MESSAGE(bounded.code == 0, bounded.out);
  CHECK(nlohmann::json::parse(bounded.out).at(0).at("n").get<std::uint64_t>() == 1000);
}

TEST_CASE("a file that reports 0 bytes yet holds data is read to its end, as a pipe is") {
  if (!fs::exists("/proc/self/cmdline")) {
    MESSAGE("skipped: this system has no /proc/self/cmdline");
    return;
  }
  // reduce_cli's own command line: its arguments, each ended by a NUL.
  const std::vector<std::string> argv = {XR_REDUCE_CLI, "--backend", "omp", "--repeat", "1", "--warmup", "0",
                                         "--json", "--input", "/proc/self/cmdline", "--type", "u8"};
  std::uint64_t sum = 0, bytes = 0;
  for (const auto& arg : argv) {
    for (const char c : arg) sum += static_cast<unsigned char>(c);
    bytes += arg.size() + 1;
  }
  const Run r = shell(kCli + "--json --input /proc/self/cmdline --type u8");
  REQUIRE_MESSAGE(r.code == 0, r.out);
  const nlohmann::json j = nlohmann::json::parse(r.out).at(0);
  CHECK(j.at("n").get<std::uint64_t>() == bytes);
  CHECK(j.at("value").get<std::string>() == std::to_string(sum));
}

TEST_CASE("malformed text and .npy inputs exit 2 with one short line, never with a wrong value") {
  const std::string f8 = xr_npy_test::bytes_of<double>({1.5, 2.5, 4.0});
  const std::vector<std::pair<std::string, std::string>> cases = {
      {scratch("nul.txt", std::string("1\0002\n", 4)), "line 1: control byte '\\x00'"},
      {scratch("plusminus.txt", "+-5\n") + " --type i32", "line 1: cannot parse '+-5' as i32"},
      {scratch("descr_in_key.npy",
               xr_npy_test::npy_bytes("{\"'descr': '<i8'\": 0, 'descr': '<f8', 'fortran_order': False, 'shape': (3,)}", f8)),
       "unknown key"},
      {scratch("list_shape.npy", xr_npy_test::npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': [3]}", f8)),
       "shape"},
      {scratch("space_shape.npy", xr_npy_test::npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (3 1)}", f8)),
       "shape"},
      {scratch("comma_shape.npy", xr_npy_test::npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (3,,1)}", f8)),
       "shape"},
      {scratch("newlines.npy", xr_npy_test::npy_bytes("{'descr': '<f8',\n\n 'fortran_order': Maybe,\n 'shape': (3,)}", f8)),
       "fortran_order"},
      {scratch("long_line.txt", "1\n" + std::string(10 << 20, '9') + "\n"), "line 2: longer than 4096 bytes"},
      {scratch("bad_token.txt", "1\n" + std::string(4000, 'z') + "\n"), "line 2: cannot parse 'zzzz"}};
  for (const auto& [args, expect] : cases) {
    const Run r = shell(kCli + "--input " + args);
    CHECK_MESSAGE(r.code == 2, args, " -> ", r.out.substr(0, 300));
    CHECK_MESSAGE(one_error_line(r.out), args, " -> ", r.out.substr(0, 300));
    CHECK_MESSAGE(r.out.size() < 400, args, " -> ", r.out.size(), " bytes");
    CHECK_MESSAGE(r.out.find(expect) != std::string::npos, args, " -> ", r.out.substr(0, 300));
  }
}
