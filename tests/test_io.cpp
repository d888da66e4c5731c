// Loading inputs: raw, .npy and text, and one clear error for each way a file can be wrong.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "npy_bytes.hpp"
#include "xreduce/xreduce.hpp"

using namespace xr;
using xr_npy_test::bytes_of;
using xr_npy_test::npy_bytes;
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

TEST_CASE("npy and raw round-trip every type (bf16, which has no .npy dtype, raw alone)") {
  for (DType t : all_dtypes) {
    const auto x = generate(t, 1001, Dist::Normal, 9);
    const auto npy = scratch("rt.npy"), raw = scratch("rt.bin");
    save_raw(raw.string(), x.view());
    const auto b = load_file(raw.string(), t);
    CHECK(std::memcmp(b.data(), x.data(), x.bytes()) == 0);
    if (type_info(t).npy.empty()) {
      CHECK_THROWS_AS(save_npy(npy.string(), x.view()), InvalidArgument);
      continue;
    }
    save_npy(npy.string(), x.view());
    const auto a = load_file(npy.string());
    CHECK(a.type() == t);
    CHECK(a.size() == 1001);
    CHECK(std::memcmp(a.data(), x.data(), x.bytes()) == 0);
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

namespace {
// Loading `p` fails with an InputError whose message is one line containing `expect`.
void expect_refused(const fs::path& p, const std::string& expect, std::optional<DType> type = std::nullopt,
                    FileFormat format = FileFormat::Auto) {
  try {
    const HostBuffer x = load_file(p.string(), type, format);
    FAIL("accepted ", p.string(), " (", x.size(), " elements); expected: ", expect);
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK_MESSAGE(what.find(expect) != std::string::npos, what, " lacks: ", expect);
    CHECK_MESSAGE(what.find('\n') == std::string::npos, "not one line: ", what);
    CHECK_MESSAGE(what.size() < 400, "long message: ", what.size(), " bytes");
  }
}
}  // namespace

TEST_CASE("text lines are strict: the whole token parses, control bytes are refused") {
  const auto p = scratch("strict.txt");
  for (const auto& [bytes, type, expect] : std::vector<std::tuple<std::string, DType, std::string>>{
           {std::string("1\0002\n", 4), DType::F64, "line 1: control byte '\\x00'"},
           {std::string("1\0002\n", 4), DType::I32, "line 1: control byte '\\x00'"},
           {"4\n1\x01\n", DType::F64, "line 2: control byte '\\x01'"},
           {"+-5\n", DType::I32, "line 1: cannot parse '+-5' as i32"},
           {"-+5\n", DType::I64, "cannot parse '-+5'"},
           {"+-5\n", DType::F64, "cannot parse '+-5'"},
           {"--5\n", DType::F32, "cannot parse '--5'"},
           {"5 6\n", DType::F64, "cannot parse '5 6'"},
           {"1e999\n", DType::F64, "line 1: 1e999 is out of the f64 range"},
           {"1e39\n", DType::F32, "line 1: 1e39 is out of the f32 range"},
           {"+\n", DType::I32, "cannot parse '+'"}}) {
    write_bytes(p, bytes);
    expect_refused(p, expect, type);
  }
  write_bytes(p, "+5\n-0x1p3\ninf\n-7\n");
  const HostBuffer x = load_file(p.string(), DType::F64);
  REQUIRE(x.size() == 4);
  CHECK(x.as<double>()[0] == 5.0);
  CHECK(x.as<double>()[1] == -8.0);
  write_bytes(p, "+5\n-7\n");
  CHECK(load_file(p.string(), DType::I32).as<std::int32_t>()[0] == 5);
}

TEST_CASE("a text line longer than the limit is an error naming its number; quoted input is cut") {
  const auto p = scratch("long.txt");
  write_bytes(p, "1\n2\n" + std::string(10 << 20, '7') + "\n");
  expect_refused(p, "line 3: longer than " + std::to_string(kMaxTextLine) + " bytes");
  write_bytes(p, "1\n" + std::string(kMaxTextLine - 1, 'x') + "\n");
  expect_refused(p, "line 2: cannot parse 'xxxxxxxx");
}

TEST_CASE(".npy headers are parsed as the Python literal they are") {
  const auto p = scratch("hdr.npy");
  const std::string f8 = bytes_of<double>({1.5, 2.5, 4.0});
  // The text "'descr': '<i8'" inside a key is no descr: the key is unknown.
  write_bytes(p, npy_bytes("{\"'descr': '<i8'\": 0, 'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", f8));
  expect_refused(p, "unknown key");
  for (const auto& [dict, expect] : std::vector<std::pair<std::string, std::string>>{
           {"{'descr': '<f8', 'fortran_order': False, 'shape': [3], }", "shape"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (3 1), }", "shape"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,,1), }", "shape"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (3), }", "shape"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (-3,), }", "shape"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (03,), }", "shape"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': ('3',), }", "shape"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,), 'shape': (3,), }", "'shape' twice"},
           {"{'descr': '<f8', 'shape': (3,), }", "no 'fortran_order'"},
           {"{'descr': '<f8', 'fortran_order': 0, 'shape': (3,), }", "fortran_order"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,), 'extra': 1}", "unknown key 'extra'"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,) } junk", "after the dict"},
           {"{'descr': '<f8',\n 'fortran_order': False,\n 'shape': (3,\n\n", "malformed .npy header"},
           {"{'descr': '<f8'\n\n\n, 'fortran_order': False, 'shape': (3,)}", ""},
           {"{'descr': ['<f8'], 'fortran_order': False, 'shape': (3,)}", "descr"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (18446744073709551616,)}", "shape"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", "too large"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (4,)}", "truncated"}}) {
    write_bytes(p, npy_bytes(dict, f8));
    if (expect.empty()) {  // newlines between tokens are whitespace to Python
      CHECK(load_file(p.string()).size() == 3);
      continue;
    }
    expect_refused(p, expect);
  }
  for (const auto& shape_case : std::vector<std::pair<std::string, std::uint64_t>>{
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", 3},
           {"{\"shape\": (3, 1), \"fortran_order\": True, \"descr\": \"<f8\"}", 3},
           {"{'descr':'<f8','fortran_order':False,'shape':(1,3,)}", 3},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': ()}", 1}}) {
    const std::string& dict = shape_case.first;  // not a structured binding: doctest's macros capture it
    const std::uint64_t n = shape_case.second;
    write_bytes(p, npy_bytes(dict, f8.substr(0, n * 8)));
    const HostBuffer x = load_file(p.string());
    CHECK_MESSAGE(x.size() == n, dict);
    CHECK(x.type() == DType::F64);
    CHECK(x.as<double>()[0] == 1.5);
  }
}

TEST_CASE("errors are one line: control characters escaped, quoted input cut") {
  CHECK(printable("a\nb\tc\x01") == "a\\nb\\tc\\x01");
  CHECK(printable(std::string(200, 'y'), 80) == std::string(80, 'y') + "... (200 bytes)");
  CHECK_THROWS_WITH_AS(parse_dtype("f32\nx"), doctest::Contains("'f32\\nx'"), InvalidArgument);
  CHECK_THROWS_WITH_AS(parse_file_format("a\rb"), doctest::Contains("'a\\rb'"), InvalidArgument);
  CHECK_THROWS_WITH_AS(parse_bytes("1\n2"), doctest::Contains("'1\\n2'"), InvalidArgument);
  CHECK_THROWS_WITH_AS(make_reducer("om\np"), doctest::Contains("'om\\np'"), InvalidArgument);
  const auto p = scratch("nl.npy");
  write_bytes(p, npy_bytes("{'descr': '<x9\n\n',\n 'fortran_order': False, 'shape': (3,), }", ""));
  expect_refused(p, "malformed .npy header");
  expect_refused(p, "'<x9\\n\\n',\\n 'fortran_order'");
}

TEST_CASE("directories, devices and pipes: refused with their name, bounded, or read once") {
  const fs::path dir = scratch("a_directory");
  fs::create_directories(dir);
  expect_refused(dir, dir.string() + ": is a directory", DType::F32);
  CHECK_THROWS_WITH_AS(FileSource(dir.string(), DType::F32), doctest::Contains("is a directory"), InputError);
  // A character device may never end: refused unless the count bounds it.
  expect_refused("/dev/urandom", "/dev/urandom: a character device", DType::I32);
  expect_refused("/dev/zero", "a character device", DType::F64, FileFormat::Text);
  const HostBuffer r = load_file("/dev/zero", DType::I32, FileFormat::Auto, 1000);
  CHECK(r.size() == 1000);
  CHECK(r.as<std::int32_t>()[999] == 0);
  // An endless line of NULs stops at the first one.
  CHECK_THROWS_WITH_AS(load_file("/dev/zero", DType::F64, FileFormat::Text, 10), doctest::Contains("control byte"),
                       InputError);
  // A pipe is read front to back once; the format comes from its first bytes.
  for (const std::string& bytes : {npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2,)}",
                                             bytes_of<std::int32_t>({5, 7})),
                                   bytes_of<std::int32_t>({5, 7})}) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    std::thread writer([&] {
      std::size_t done = 0;
      while (done < bytes.size()) done += static_cast<std::size_t>(::write(fds[1], bytes.data() + done, bytes.size() - done));
      ::close(fds[1]);
    });
    const HostBuffer x = load_stream(fds[0], "pipe", DType::I32);
    writer.join();
    ::close(fds[0]);
    REQUIRE(x.size() == 2);
    CHECK(x.as<std::int32_t>()[1] == 7);
  }
  CHECK_THROWS_WITH_AS(FileSource("/dev/zero", DType::F32), doctest::Contains("not a regular file"), InvalidArgument);
}

TEST_CASE("a file that reports 0 bytes yet holds data is read to its end; an empty file stays empty") {
  const std::string proc = "/proc/self/cmdline";
  if (fs::exists(proc)) {
    std::ifstream in(proc, std::ios::binary);
    const std::string want{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    REQUIRE(!want.empty());
    const HostBuffer x = load_file(proc, DType::U8);
    REQUIRE(x.size() == want.size());
    CHECK(std::memcmp(x.data(), want.data(), want.size()) == 0);
    const auto opened = open_input(proc, DType::U8);
    CHECK(opened->size() == want.size());
    CHECK(opened->memory() != nullptr);
    CHECK_THROWS_WITH_AS(FileSource(proc, DType::U8), doctest::Contains("reports a size of 0 bytes yet holds data"),
                         InvalidArgument);
    CHECK_THROWS_WITH_AS(inspect_file(proc, DType::U8), doctest::Contains("cannot be read in place"), InvalidArgument);
  } else {
    MESSAGE("skipped the procfs part: this system has no " << proc);
  }
  const auto empty = scratch("empty.bin");
  write_bytes(empty, "");
  CHECK(load_file(empty.string(), DType::U8).size() == 0);
  CHECK(FileSource(empty.string(), DType::U8).size() == 0);
  CHECK(open_input(empty.string(), DType::U8)->memory() == nullptr);
}

TEST_CASE("--n-style bounds: at most the first elements of any input") {
  const auto x = generate(DType::F32, 100, Dist::Uniform, 3);
  const auto npy = scratch("bound.npy"), raw = scratch("bound.bin"), txt = scratch("bound.txt");
  save_npy(npy.string(), x.view());
  save_raw(raw.string(), x.view());
  write_bytes(txt, "1\n2\n3\n4\n");
  CHECK(load_file(npy.string(), std::nullopt, FileFormat::Auto, 10).size() == 10);
  CHECK(load_file(raw.string(), DType::F32, FileFormat::Auto, 1000).size() == 100);
  CHECK(load_file(txt.string(), std::nullopt, FileFormat::Auto, 3).size() == 3);
  FileSource bounded(npy.string(), std::nullopt, FileFormat::Auto, 10);
  CHECK(bounded.size() == 10);
  const auto opened = open_input(txt.string(), DType::I64, FileFormat::Auto, 2);
  CHECK(opened->size() == 2);
  CHECK(opened->memory() != nullptr);
  CHECK(open_input(npy.string())->memory() == nullptr);  // a regular .npy streams from disk
}
