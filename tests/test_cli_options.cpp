// Every reduce_cli option with empty, malformed and out-of-range values: each is refused with
// exit 2 and one line (naming the limit where a number is too large), never a crash or a
// silently ignored value.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "cli_run.hpp"
#include "xreduce/xreduce.hpp"

using namespace xr_cli_test;

namespace {

const std::string kBase = "--backend omp ";  // refused values stop before 2^24 elements are generated

struct Refusal {
  std::string option;
  std::vector<std::string> values;  // shell words
  std::string says;                 // in the message, where the value is out of range
};

void expect_refused(const std::string& args, const std::string& says) {
  const Run r = cli(args);
  CHECK_MESSAGE(r.code == 2, args, " -> ", r.out);
  CHECK_MESSAGE(one_error_line(r.out), args, " -> ", r.out);
  CHECK_MESSAGE(r.out.find(says) != std::string::npos, args, " -> ", r.out, " lacks: ", says);
}

}  // namespace

TEST_CASE("every option refuses an empty value") {
  for (const char* option : {"--backend", "--op", "--type", "--n", "--dist", "--seed", "--input", "--format", "--kernel",
                             "--accumulator", "--repeat", "--warmup", "--block", "--grid", "--coarsening", "--threads",
                             "--platform", "--device", "--device-mem-limit", "--chunk", "--host-path", "--save"})
    expect_refused(kBase + option + " ''", option);
}

TEST_CASE("numeric options refuse signs, fractions, overflow and values beyond their limit") {
  const std::string threads_above = std::to_string(xr::max_threads() + 1);
  const std::vector<Refusal> refusals = {
      {"--repeat", {"0", "-1", "1.5", "1e3", "+5", "' 5'", "1000001", "2147483648", "18446744073709551616"}, "--repeat"},
      {"--warmup", {"-1", "0x10", "1000001", "99999999999999999999"}, "--warmup"},
      {"--seed", {"-1", "1e3", "+5", "18446744073709551616", "0x2a"}, "--seed"},
      {"--block", {"-1", "65537", "4294967296", "18446744073709551616", "0x40"}, "--block"},
      {"--grid", {"-1", "2147483648", "18446744073709551616", "1e9"}, "--grid"},
      {"--coarsening", {"-1", "65537", "4294967295"}, "--coarsening"},
      {"--threads", {"-1", threads_above, "100000", "2147483648", "4294967296"}, "--threads"},
      {"--platform", {"-5", "-1", "2147483648", "x"}, "--platform"},
      {"--n", {"-1", "' 5'", "5x", "nan", "inf", "1.5", "2^64", "1e20", "2^2^2", "0x10", "2^60"}, "--n"},
      {"--chunk", {"0", "-1", "2^62", "2^64", "x"}, "chunk"},
      {"--device-mem-limit", {"0", "-1", "1e300", "2000T", "12Q", "nan"}, "--device-mem-limit"},
  };
  for (const auto& r : refusals)
    for (const auto& value : r.values) expect_refused(kBase + r.option + " " + value, r.says);
  // Above a limit, the message names it.
  for (const char* args : {"--threads 100000", "--block 65537", "--grid 2147483648", "--coarsening 65537",
                           "--repeat 1000001", "--device-mem-limit 2000T"})
    expect_refused(kBase + args, "limit");
}

TEST_CASE("named values outside their sets are refused") {
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"--backend gpu", "--backend"},
           {"--op median", "unknown op 'median'"},
           {"--type u16", "u16"},
           {"--dist gauss", "gauss"},
           {"--format csv", "unknown file format 'csv'"},
           {"--kernel bogus", "unknown omp kernel 'bogus'"},
           {"--accumulator huge", "--accumulator"},
           {"--host-path sideways", "--host-path"},
           {"--input /nonexistent/x.bin --type f32", "cannot open"},
           {"--save /nonexistent/dir/x.npy", "cannot open"},
           {"--type \"$(printf 'f32\\nx')\"", "unknown type 'f32\\nx'"},
           {"--kernel \"$(printf 'a\\tb')\"", "kernel 'a\\tb'"}})
    expect_refused(kBase + args, says);
}

TEST_CASE("the largest accepted values run, or a device refuses them with one line") {
  for (const std::string& args :
       {"--threads " + std::to_string(xr::max_threads()), std::string("--grid 2147483647"), std::string("--block 65536"),
        std::string("--coarsening 65536 --kernel coarse"), std::string("--seed 18446744073709551615"),
        std::string("--chunk 1"), std::string("--device-mem-limit 1024T")}) {
    const Run r = cli("--backend all --n 1000 --repeat 1 --warmup 0 " + args);
    CHECK_MESSAGE((r.code == 0 || (r.code == 2 && one_error_line(r.out))), args, " -> ", r.out);
  }
}

TEST_CASE("options that do not apply here are refused, not ignored") {
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"--stride 8", "--stride shapes a segmented reduction"},
           {"--order fortran", "--order shapes a segmented reduction"},
           {"--seg-len 3", "--seg-len shapes a segmented reduction"},
           {"--seg-dist uniform:1:2", "--seg-dist shapes a segmented reduction"},
           {"--device 0", "--device picks a CUDA or OpenCL device; the omp backend"},
           {"--platform 0", "--platform picks an OpenCL platform"}})
    expect_refused(kBase + args, says);
}

TEST_CASE("counts: whole numbers up to 2^64 - 1, and the message says which bound was passed") {
  for (const auto& [value, says] : std::vector<std::pair<std::string, std::string>>{
           {"18446744073709551616", "is above 2^64 - 1"},
           {"99999999999999999999", "is above 2^64 - 1"},
           {"2^64", "is above 2^64 - 1"},
           {"1e20", "is above 2^64 - 1"},
           {"16777216T", "is above 2^64 - 1"},
           {"1.5", "is not a whole count"},
           {"0.3K", "is not a whole count"}})
    expect_refused(kBase + "--n " + value, says);
  // 2^64 - 1 itself is a count: what refuses it is the memory it needs.
  expect_refused(kBase + "--n 18446744073709551615", "half of this machine's memory");
}
