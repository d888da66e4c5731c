// Fuzzing the file readers: a deterministic corpus of malformed .npy, raw and text inputs, and a
// seeded mutator that derives more from well-formed ones. Every case, read from a file and from
// a pipe, must give a value or an xr::Error whose message is one short line, within a time
// limit; through reduce_cli, exit 0 with a value or exit 2 with one line.
//
// XR_FUZZ_CASES (default 1500) sets the mutated cases, XR_FUZZ_SEED (default 1) their seed.
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cli_run.hpp"
#include "npy_bytes.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/xreduce.hpp"

using namespace xr;
using namespace xr_cli_test;
using xr_npy_test::npy_bytes;

namespace {

// A pipe's writer whose reader stopped early gets EPIPE rather than the signal.
const bool kPipeSignalIgnored = [] {
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}();

struct Case {
  std::string name;           // a file name: its extension takes part in format detection
  std::string bytes;
  std::optional<DType> type;  // --type
  FileFormat format = FileFormat::Auto;
};

const char* format_word(FileFormat f) {
  return f == FileFormat::Raw ? "raw" : f == FileFormat::Npy ? "npy" : f == FileFormat::Text ? "text" : "auto";
}

std::string describe(const Case& c) {
  return c.name + " (" + std::to_string(c.bytes.size()) + " bytes, format " + format_word(c.format) + ", type " +
         (c.type ? std::string(to_string(*c.type)) : "none") + "): '" + printable(c.bytes, 120) + "'";
}

std::string header_of(const char* descr, const std::string& shape, const char* order = "False") {
  return std::string("{'descr': '") + descr + "', 'fortran_order': " + order + ", 'shape': " + shape + ", }";
}

// Well-formed inputs the mutator starts from.
std::vector<Case> seeds() {
  std::vector<Case> out;
  const std::string f8 = xr_npy_test::bytes_of<double>({1.5, -2.25, 1e300, 4.0});
  const std::string i4 = xr_npy_test::bytes_of<std::int32_t>({7, -3, 2147483647, 0});
  out.push_back({"seed_f8.npy", npy_bytes(header_of("<f8", "(4,)"), f8), std::nullopt, FileFormat::Auto});
  out.push_back({"seed_i4.npy", npy_bytes(header_of("<i4", "(2, 2)", "True"), i4), std::nullopt, FileFormat::Auto});
  out.push_back({"seed_i4.bin", i4, DType::I32, FileFormat::Auto});
  out.push_back({"seed_f8.raw", f8, DType::F64, FileFormat::Raw});
  out.push_back({"seed.txt", "# values\n1.5\n-2\n\n  3e2 \r\ninf\n0x1p3\n", std::nullopt, FileFormat::Auto});
  out.push_back({"seed_i64.txt", "1\n-9223372036854775808\n+42\n", DType::I64, FileFormat::Text});
  return out;
}

// The deterministic corpus: every way of being wrong that the readers name.
std::vector<Case> corpus() {
  std::vector<Case> out;
  const std::string f8 = xr_npy_test::bytes_of<double>({1.5, 2.5, 4.0});
  // .npy: cut at every byte of its preamble, header and first element.
  const std::string good = npy_bytes(header_of("<f8", "(3,)"), f8);
  for (std::size_t cut = 0; cut < 64 + 9; ++cut) out.push_back({"cut.npy", good.substr(0, cut), std::nullopt, FileFormat::Auto});
  // Versions and header lengths.
  for (int version : {0, 2, 3, 4, 255}) {
    std::string v = good;
    v[6] = static_cast<char>(version);
    out.push_back({"version.npy", v, std::nullopt, FileFormat::Auto});
  }
  for (unsigned len : {0u, 1u, 53u, 55u, 0xffffu}) {
    std::string v = good;
    v[8] = static_cast<char>(len & 0xff);
    v[9] = static_cast<char>(len >> 8);
    out.push_back({"header_len.npy", v, std::nullopt, FileFormat::Auto});
  }
  {
    std::string v2 = "\x93NUMPY";
    v2 += std::string("\x02\x00\xff\xff\xff\x7f", 6);
    out.push_back({"v2_huge_header.npy", v2 + "{}", std::nullopt, FileFormat::Auto});
  }
  // Header dicts.
  for (const std::string& dict : std::vector<std::string>{
           header_of("<f8", "[3]"), header_of("<f8", "(3 1)"), header_of("<f8", "(3,,1)"), header_of("<f8", "(3)"),
           header_of("<f8", "(-3,)"), header_of("<f8", "(03,)"), header_of("<f8", "('3',)"), header_of("<f8", "(3L,)"),
           header_of("<f8", "(18446744073709551616,)"), header_of("<f8", "(4294967296, 4294967296)"),
           header_of("<f8", "(0, 18446744073709551615)"), header_of("<f8", "(1,3)"), header_of("<f8", "()"),
           header_of("<f8", "(3,"), header_of("<f8", "("), header_of(">f8", "(3,)"), header_of("|u1", "(3,)"),
           header_of("<f16", "(3,)"), header_of("", "(3,)"), header_of("<f8", "(3,)", "0"),
           header_of("<f8", "(3,)", "Tru"), header_of("<f8\\x00", "(3,)"),
           "{\"'descr': '<i8'\": 0, 'descr': '<f8', 'fortran_order': False, 'shape': (3,)}",
           "{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (3,)}",
           "{'descr': '<f8', 'shape': (3,)}", "{'fortran_order': False, 'shape': (3,)}", "{'descr': '<f8'}",
           "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), 'extra': 1}",
           "{'descr': '<f8', 'fortran_order': False, 'shape': (3,)} trailing", "{}", "", "{", "}", "[]",
           "{'descr' '<f8', 'fortran_order': False, 'shape': (3,)}",
           "{'descr': '<f8' 'fortran_order': False, 'shape': (3,)}",
           "{'descr': '<f8', 'fortran_order': False, 'shape': (3,),,}",
           "{descr: '<f8', fortran_order: False, shape: (3,)}",
           "{'descr': '<f8\n', 'fortran_order': False, 'shape': (3,)}",
           "{'descr': \"<f8', 'fortran_order': False, 'shape': (3,)}",
           std::string("{'descr': '<f8', 'fortran_order': False, 'shape': (3,)}\0\0", 58),
           "{'descr': '<f8', 'fortran_order': False, 'shape': (\xff\xfe,)}",
           "{'descr': '<f8',\n\n 'fortran_order': False,\n 'shape': (3,\n)\n}"})
    out.push_back({"dict.npy", npy_bytes(dict, f8), std::nullopt, FileFormat::Auto});
  out.push_back({"extra.npy", good + "xx", std::nullopt, FileFormat::Auto});
  out.push_back({"disagree.npy", good, DType::I64, FileFormat::Auto});
  out.push_back({"not_npy.npy", "hello, world", std::nullopt, FileFormat::Auto});
  out.push_back({"forced.bin", "plain bytes", std::nullopt, FileFormat::Npy});
  // Raw: every size up to 17 bytes, as i32 and f64, and without a type.
  for (std::size_t size = 0; size <= 17; ++size)
    for (DType t : {DType::I32, DType::F64}) out.push_back({"raw.bin", std::string(size, '\x5a'), t, FileFormat::Auto});
  out.push_back({"untyped.bin", std::string(16, '\0'), std::nullopt, FileFormat::Auto});
  // Text: control bytes, signs, ranges, lengths.
  for (int c = 0; c < 32; ++c)
    if (c != '\n') out.push_back({"control.txt", "1\n2" + std::string(1, static_cast<char>(c)) + "3\n", std::nullopt, FileFormat::Auto});
  out.push_back({"del.txt", "1\x7f\n", std::nullopt, FileFormat::Auto});
  for (const char* token : {"+-5", "-+5", "++5", "--5", "+", "-", ".", "e5", "1e", "1e+", "0x", "0x1p", "1,5", "1 2",
                            "1e999", "-1e999", "1e-999", "3.5e38", "nan(abc)", "infinity", "-inf", "0x1p1024",
                            "1_000", "١", "\xef\xbb\xbf" "1", "\xff", "9223372036854775808", "-9223372036854775809",
                            "2147483648", "-2147483649", "00012", "+0", "-0"}) {
    for (DType t : {DType::I32, DType::I64, DType::F32, DType::F64})
      out.push_back({"token.txt", std::string(token) + "\n", t, FileFormat::Auto});
  }
  for (std::size_t len : {kMaxTextLine - 1, kMaxTextLine, kMaxTextLine + 1, std::size_t{1} << 20})
    out.push_back({"long.txt", "1\n" + std::string(len, '1') + "\n", std::nullopt, FileFormat::Auto});
  out.push_back({"spaces.txt", "1\n" + std::string(kMaxTextLine + 5, ' ') + "\n", std::nullopt, FileFormat::Auto});
  out.push_back({"empty.txt", "", std::nullopt, FileFormat::Auto});
  out.push_back({"comments.txt", "# only\n#\n", std::nullopt, FileFormat::Auto});
  out.push_back({"no_newline.txt", "1\n2", std::nullopt, FileFormat::Auto});
  out.push_back({"crlf.txt", "1\r\n2\r\n", std::nullopt, FileFormat::Auto});
  out.push_back({"npy_as_text.bin", good, std::nullopt, FileFormat::Text});
  out.push_back({"binary.txt", std::string("\x93NUMPY\x01\x00", 8), std::nullopt, FileFormat::Text});
  return out;
}

// A seeded mutation of one of `bases`: byte flips, insertions of bytes that matter to the
// parsers, deletions, duplications, truncations and splices.
Case mutate(const std::vector<Case>& bases, std::mt19937_64& rng) {
  static const std::vector<std::string> tokens = {"(", ")", ",", "'", "\"", ":", "{", "}", "\n", std::string(1, '\0'),
                                                  "-", "+", "e", "9999999999999999999999", "0", " ", "#", "\r",
                                                  "'descr': '<i8', ", "'shape': (", "True", "\x93NUMPY"};
  Case c = bases[rng() % bases.size()];
  const auto pick = [&](std::size_t n) { return n ? static_cast<std::size_t>(rng() % n) : 0; };
  const int steps = 1 + static_cast<int>(rng() % 4);
  for (int s = 0; s < steps; ++s) {
    std::string& b = c.bytes;
    switch (rng() % 7) {
      case 0:
        if (!b.empty()) b[pick(b.size())] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1: b.insert(pick(b.size() + 1), tokens[pick(tokens.size())]); break;
      case 2:
        if (!b.empty()) b.erase(pick(b.size()), 1 + pick(8));
        break;
      case 3:
        if (!b.empty()) {
          const std::size_t at = pick(b.size());
          b.insert(at, b.substr(at, 1 + pick(16)));
        }
        break;
      case 4: b.resize(pick(b.size() + 1)); break;
      case 5: {
        const std::string& other = bases[pick(bases.size())].bytes;
        b = b.substr(0, pick(b.size() + 1)) + other.substr(pick(other.size() + 1));
        break;
      }
      default:
        if (!b.empty()) b[pick(b.size())] = static_cast<char>(rng());
    }
  }
  if (rng() % 5 == 0) c.type = static_cast<DType>(rng() % 4);
  return c;
}

std::vector<Case> mutated(std::size_t count, std::uint64_t seed) {
  std::vector<Case> bases = seeds();
  for (auto& c : corpus())
    if (c.bytes.size() < 4096) bases.push_back(std::move(c));
  std::mt19937_64 rng(seed);
  std::vector<Case> out;
  for (std::size_t i = 0; i < count; ++i) out.push_back(mutate(bases, rng));
  return out;
}

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

fs::path case_path(const Case& c) {
  const fs::path dir = fs::path(XR_TEST_TMP) / "fuzz";
  fs::create_directories(dir);
  return dir / c.name;
}

constexpr double kSecondsPerCase = 5.0;

// One way of reading: a value, or an xr::Error in one short line; anything else fails.
template <class Read> void expect_value_or_one_line(const Case& c, const char* how, Read read) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    const std::uint64_t n = read();
    (void)n;
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK_MESSAGE(what.find('\n') == std::string::npos, how, " ", describe(c), ": not one line: ", printable(what, 400));
    CHECK_MESSAGE(what.size() < 700, how, " ", describe(c), ": ", what.size(), "-byte message");
  } catch (const std::exception& e) {
    FAIL_CHECK(how, " ", describe(c), ": not an xr::Error: ", e.what());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK_MESSAGE(seconds < kSecondsPerCase, how, " ", describe(c), ": took ", seconds, " s");
}

// Reads the case from a pipe through load_stream; a writer thread feeds it.
std::uint64_t through_pipe(const Case& c) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::thread writer([&] {
    std::size_t done = 0;
    while (done < c.bytes.size()) {
      const ssize_t put = ::write(fds[1], c.bytes.data() + done, c.bytes.size() - done);
      if (put <= 0) break;  // the reader stopped early
      done += static_cast<std::size_t>(put);
    }
    ::close(fds[1]);
  });
  struct Finish {
    std::thread& writer;
    int fd;
    ~Finish() {
      ::close(fd);  // a writer still blocked gets EPIPE
      writer.join();
    }
  } finish{writer, fds[0]};
  return load_stream(fds[0], c.name, c.type, c.format).size();
}

void check_in_process(const Case& c) {
  const fs::path p = case_path(c);
  std::ofstream(p, std::ios::binary | std::ios::trunc) << c.bytes;
  expect_value_or_one_line(c, "load_file", [&] { return load_file(p.string(), c.type, c.format).size(); });
  expect_value_or_one_line(c, "load_stream", [&] { return through_pipe(c); });
  expect_value_or_one_line(c, "open_input", [&] {
    auto source = open_input(p.string(), c.type, c.format);
    if (source->size() == 0) return std::uint64_t{0};
    return reference_reduce(*source, Op::Sum, Accumulator::Wide, 64).n;  // reads every element, 64 bytes a chunk
  });
}

void check_cli(const Case& c, const std::string& backend) {
  const fs::path p = case_path(c);
  std::ofstream(p, std::ios::binary | std::ios::trunc) << c.bytes;
  std::string args = "--backend " + backend + " --json --repeat 1 --warmup 0 --format " + format_word(c.format) +
                     " --input '" + p.string() + "'";
  if (c.type) args += " --type " + std::string(to_string(*c.type));
  const Run r = shell("timeout 30 " + std::string(XR_REDUCE_CLI) + " " + args);
  INFO(backend, " ", describe(c), " -> exit ", r.code, ": ", printable(r.out, 400));
  if (r.code == 2) {
    CHECK(one_error_line(r.out));
    return;
  }
  // A value; 1 where a plain float sum differs from the exact reference beyond its bound
  // (1e300 + ... overflows, NaN and inf differ): still a value, with the record saying why.
  REQUIRE((r.code == 0 || r.code == 1));
  const auto rows = nlohmann::json::parse(r.out);
  REQUIRE(rows.size() == 1);
  CHECK(rows.at(0).contains("value"));
}

}  // namespace

TEST_CASE("the deterministic corpus: a value or one line, from a file and from a pipe") {
  const auto cases = corpus();
  MESSAGE(cases.size(), " corpus cases");
  for (const auto& c : cases) check_in_process(c);
}

TEST_CASE("seeded mutations: a value or one line, from a file and from a pipe") {
  const auto cases = mutated(env_or("XR_FUZZ_CASES", 1500), env_or("XR_FUZZ_SEED", 1));
  for (const auto& c : cases) check_in_process(c);
}

TEST_CASE("reduce_cli on the corpus and some mutations: exit 0 with a value or exit 2 with one line") {
  auto cases = corpus();
  for (auto& c : cases)  // a megabyte line once is enough (the long-line cases stay in process)
    if (c.bytes.size() > (64u << 10)) c.bytes.resize(64u << 10);
  for (auto& c : mutated(100, env_or("XR_FUZZ_SEED", 1) + 7)) cases.push_back(std::move(c));
  for (const auto& c : cases) check_cli(c, "omp");
  if (!backend_status("opencl").usable) return;
  for (std::size_t i = 0; i < cases.size(); i += 12) check_cli(cases[i], "opencl");
}
