// Loading inputs: raw, .npy and text, and one clear error for each way a file can be wrong.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "xreduce/xreduce.hpp"

using namespace xr;
namespace fs = std::filesystem;

namespace {
fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / "xreduce_test_io";
  fs::create_directories(dir);
  return dir / name;
}
void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}
}  // namespace

TEST_CASE("npy and raw round-trip every type") {
  for (DType t : all_dtypes) {
    const auto x = generate(t, 1001, Dist::Normal, 9);
    const auto npy = scratch("rt.npy"), raw = scratch("rt.bin");
    save_npy(npy.string(), x.view());
    save_raw(raw.string(), x.view());
    const auto a = load_file(npy.string());
    const auto b = load_file(raw.string(), t);
    CHECK(a.type() == t);
    CHECK(a.size() == 1001);
    CHECK(std::memcmp(a.data(), x.data(), x.bytes()) == 0);
    CHECK(std::memcmp(b.data(), x.data(), x.bytes()) == 0);
  }
}

TEST_CASE("text input: one number a line, comments and blank lines skipped") {
  const auto p = scratch("v.txt");
  write_bytes(p, "# values\n1.5\n\n  -2.25 \ninf\n");
  const auto x = load_file(p.string());
  REQUIRE(x.size() == 3);
  CHECK(x.type() == DType::F64);
  CHECK(x.as<double>()[1] == -2.25);
  const auto q = scratch("i.txt");
  write_bytes(q, "1\n+2\n-3\n");
  CHECK(load_file(q.string(), DType::I32).as<std::int32_t>()[1] == 2);
}

TEST_CASE("file errors name the file and the problem") {
  CHECK_THROWS_WITH_AS(load_file("/nonexistent/x.bin", DType::F32), doctest::Contains("/nonexistent/x.bin: cannot open"),
                       InputError);
  const auto raw = scratch("odd.bin");
  write_bytes(raw, std::string(10, 'x'));
  CHECK_THROWS_WITH_AS(load_file(raw.string(), DType::F32), doctest::Contains("not a multiple of the 4-byte f32"),
                       InputError);
  CHECK_THROWS_WITH_AS(load_file(raw.string()), doctest::Contains("needs an element type"), InputError);

  const auto x = generate(DType::F32, 100, Dist::Uniform, 1);
  const auto npy = scratch("t.npy");
  save_npy(npy.string(), x.view());
  fs::resize_file(npy, fs::file_size(npy) - 10);
  // 128-byte header + 400 bytes of data, cut 10 bytes short.
  CHECK_THROWS_WITH_AS(load_file(npy.string()),
                       doctest::Contains("truncated: ends at byte 518; the header says 100 elements, which need bytes "
                                         "128 to 528"),
                       InputError);

  save_npy(npy.string(), x.view());
  CHECK_THROWS_WITH_AS(load_file(npy.string(), DType::I32), doctest::Contains("disagrees with the file's dtype"),
                       InputError);

  std::string bytes;
  {
    std::ifstream in(npy, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes.replace(bytes.find("<f4"), 3, "<u2");
  const auto u2 = scratch("u2.npy");
  write_bytes(u2, bytes);
  CHECK_THROWS_WITH_AS(load_file(u2.string()), doctest::Contains("unsupported .npy dtype '<u2'"), InputError);

  const auto notnpy = scratch("fake.npy");
  write_bytes(notnpy, "hello world");
  CHECK_THROWS_WITH_AS(load_file(notnpy.string()), doctest::Contains("bad magic"), InputError);

  const auto txt = scratch("bad.txt");
  write_bytes(txt, "1\n2\nthree\n");
  CHECK_THROWS_WITH_AS(load_file(txt.string()), doctest::Contains("line 3: cannot parse 'three'"), InputError);
  write_bytes(txt, "1\n3000000000\n");
  CHECK_THROWS_WITH_AS(load_file(txt.string(), DType::I32), doctest::Contains("line 2"), InputError);
}
