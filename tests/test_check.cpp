// reduce_cli check: the conformance matrix passes on this machine's backends, finds a kernel
// broken on purpose (reduce_cli_faulty), and prints reproducers that reproduce; bad flags exit 2.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_run.hpp"
#include "xreduce/xreduce.hpp"

using namespace xr_cli_test;
using nlohmann::json;

namespace {

// reduce_cli_faulty with the kernel `broken` ("omp:vector") broken, or none when empty.
Run faulty(const std::string& broken, const std::string& args) {
  return shell("XR_TEST_BROKEN_KERNEL=" + broken + " timeout 120 " + std::string(XR_REDUCE_CLI_FAULTY) + " " + args);
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return json::parse(in);
}

std::string json_path(const std::string& name) {
  fs::create_directories(XR_TEST_TMP);
  return (fs::path(XR_TEST_TMP) / name).string();
}

// The reduce_cli command of each "FAIL reduce_cli ...  # detail" line of a report.
std::vector<std::string> reproducers(const std::string& report) {
  std::vector<std::string> out;
  std::istringstream in(report);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("FAIL reduce_cli ", 0) == 0) out.push_back(line.substr(5, line.find("  # ") - 5));
  return out;
}

// The arguments of `command` ("reduce_cli -b omp ..."): what follows the program's name.
std::string arguments(const std::string& command) { return command.substr(std::string("reduce_cli ").size()); }

bool usable(const char* backend) { return xr::backend_status(backend).usable; }

}  // namespace

TEST_CASE("check: the default matrix passes on every available backend; --json holds every case") {
  const std::string path = json_path("default.json");
  // The limit guards against a hang, not for speed (the budget is checked below): on the 16-core
  // H200 host, four devices with NVIDIA's and PoCL's program caches empty and seven suites
  // beside it, this matrix ran past 300 s.
  const Run r = shell("timeout 900 " + std::string(XR_REDUCE_CLI) + " check --json " + path);
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK(r.out.find("cases passed") != std::string::npos);
  const json j = read_json(path);
  const json& cases = j.at("cases");
  CHECK(cases.size() > 0);
  std::set<std::string> backends, dists, kernels;
  for (const auto& c : cases) {
    CHECK_MESSAGE(c.at("pass").get<bool>(), c.dump());
    for (const char* key : {"backend", "device", "kernel", "op", "type", "n", "dist", "seed", "exact", "detail",
                            "reproducer"})
      CHECK_MESSAGE(c.contains(key), key);
    backends.insert(c.at("backend").get<std::string>());
    dists.insert(c.at("dist").get<std::string>());
    kernels.insert(c.at("backend").get<std::string>() + ":" + c.at("kernel").get<std::string>());
  }
  for (const char* backend : {"omp", "opencl", "cuda"})
    if (usable(backend)) CHECK_MESSAGE(backends.count(backend) == 1, backend);
  CHECK(dists == std::set<std::string>{"uniform", "normal", "cancel", "special"});
  CHECK(kernels.count("omp:auto") == 1);
  CHECK(kernels.count("omp:stream_read") == 0);  // a probe, not a reduction
  if (usable("cuda")) CHECK(kernels.count("cuda:cub") == 1);
  // What the default run leaves out is said in the report.
  CHECK(r.out.find("note: sizes 2^24+3 and 2^31+11 run with --full") != std::string::npos);
  CHECK(r.out.find("only (uniform at every size)") != std::string::npos);
  const auto seconds = r.out.find(" s; seed ");
  REQUIRE(seconds != std::string::npos);
  const double taken = std::stod(r.out.substr(r.out.rfind(" in ", seconds) + 4));
  WARN_MESSAGE(taken < 60, "the default check took ", taken, " s, more than its budget of 60 s");
}

TEST_CASE("check: --backend, --kernel and --sizes restrict the matrix; exact cases where the kernel has exact mode") {
  const std::string path = json_path("restricted.json");
  const Run r = cli("check -b omp --kernel clause,auto --sizes 0,5,2^10 --json " + path);
  REQUIRE_MESSAGE(r.code == 0, r.out);
  std::set<std::uint64_t> sizes;
  bool exact = false;
  std::set<std::string> min_empty;
  const json j = read_json(path);
  for (const auto& c : j.at("cases")) {
    CHECK(c.at("backend") == "omp");
    CHECK((c.at("kernel") == "clause" || c.at("kernel") == "auto"));
    sizes.insert(c.at("n").get<std::uint64_t>());
    exact = exact || c.at("exact").get<bool>();
    if (c.at("n") == 0 && (c.at("op") == "min" || c.at("op") == "max"))
      min_empty.insert(c.at("detail").get<std::string>().substr(0, 22));
  }
  CHECK(sizes == std::set<std::uint64_t>{0, 5, 1024});
  CHECK(exact);
  CHECK(min_empty == std::set<std::string>{"EmptyInput as required"});
}

TEST_CASE("check: a broken kernel fails, and each printed reproducer fails with it and passes without it") {
  // reduce_cli_faulty with nothing broken is reduce_cli.
  CHECK(faulty("", "check -b omp --kernel vector --sizes 33").code == 0);

  const std::string path = json_path("broken.json");
  const Run r = faulty("omp:vector", "check -b omp --sizes 1,33 --json " + path);
  REQUIRE_MESSAGE(r.code == 1, r.out);
  // Every case of vector fails (and of auto, which runs vector), every case of clause passes.
  std::size_t failed = 0;
  const json j = read_json(path);
  for (const auto& c : j.at("cases")) {
    const bool broken = c.at("ran") == "vector" || c.at("ran") == "auto:vector";
    CHECK_MESSAGE(c.at("pass").get<bool>() != broken, c.dump());
    failed += !c.at("pass").get<bool>();
  }
  const auto commands = reproducers(r.out);
  REQUIRE(!commands.empty());
  CHECK(commands.size() == std::min<std::size_t>(failed, 100));
  CHECK(r.out.find(std::to_string(failed) + " of ") != std::string::npos);
  for (const auto& command : commands) {
    CAPTURE(command);
    const Run again = faulty("omp:vector", arguments(command));
    CHECK_MESSAGE(again.code == 1, again.out);
    const Run real = cli(arguments(command));
    CHECK_MESSAGE(real.code == 0, real.out);
  }
}

TEST_CASE("check: an OpenCL reproducer names the platform and device, and selects the same device") {
  if (!usable("opencl")) return;
  const std::string path = json_path("broken_opencl.json");
  const Run r = faulty("opencl:coarse4", "check -b opencl --kernel coarse4 --sizes 1025 --json " + path);
  REQUIRE_MESSAGE(r.code == 1, r.out);
  const json cases = read_json(path).at("cases");
  REQUIRE(!cases.empty());
  const std::string device = cases.at(0).at("device").get<std::string>();
  const auto commands = reproducers(r.out);
  REQUIRE(commands.size() >= 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(commands[i]);
    CHECK(commands[i].find(" --platform ") != std::string::npos);
    CHECK(commands[i].find(" --device ") != std::string::npos);
    const Run again = faulty("opencl:coarse4", arguments(commands[i]) + " --json");
    CHECK_MESSAGE(again.code == 1, again.out);
    // The device reduce_cli chose is the one check ran on ("platform / device" names it).
    CHECK(device.ends_with(" / " + json::parse(again.out).at(0).at("device").get<std::string>()));
    CHECK(cli(arguments(commands[i])).code == 0);
  }
}

TEST_CASE("a fault inside an OpenMP region ends reduce_cli with one error line and exit 2") {
  const std::pair<std::string, std::string> cases[] = {
      {"omp.vector", "--n 100003"},         {"omp.clause", "--n 100003 --kernel clause"},
      {"core.generate", "--n 100003"},      {"core.reference_sum", "--n 100003"},
      {"omp.rows", "--shape 1024x512"},     {"omp.pair_segments", "--segments 1000 --seg-len 300 --op argmax"},
  };
  for (const auto& [region, args] : cases) {
    CAPTURE(region);
    const Run r = shell("XR_TEST_FAULT_REGION=" + region + " timeout 120 " + std::string(XR_REDUCE_CLI_FAULTY) +
                        " -b omp --repeat 1 --warmup 0 " + args);
    CHECK_MESSAGE(r.code == 2, r.out);
    CHECK_MESSAGE(one_error_line(r.out), r.out);
    CHECK_MESSAGE(r.out.find("injected fault inside the OpenMP region " + region) != std::string::npos, r.out);
  }
}

TEST_CASE("the broken-kernel switch is not in libxreduce's dynamic symbol table") {
  // The test build has it (the name searched for is right)...
  const Run in_faulty = shell("nm -C " + std::string(XR_REDUCE_CLI_FAULTY) + " | grep -c 'testing::break_kernel'");
  CHECK_MESSAGE(in_faulty.out != "0\n", in_faulty.out);
  // ...the library exports its API and not the switch.
  const std::string exported = XR_LIBRARY_SHARED ? XR_LIBRARY : XR_REDUCE_CLI;
  const Run api = shell("nm -DC --defined-only " + exported + " | grep -c 'xr::check_result'");
  if (XR_LIBRARY_SHARED) CHECK_MESSAGE(api.out != "0\n", api.out);
  const Run symbols = shell("nm -DC --defined-only " + exported + " | grep -c 'break_kernel\\|arm_region\\|region_fault'");
  CHECK_MESSAGE(symbols.out == "0\n", symbols.out);
}

TEST_CASE("check: bad flags give one line and exit 2") {
  for (const char* args : {"check --bogus", "check --seed x", "check --seed -1", "check --json", "check -b foo",
                           "check --sizes 1,,2", "check --sizes lots", "check --kernel no_such_kernel",
                           "check --json /nonexistent-dir/out.json", "check --seed ''"}) {
    const Run r = cli(args);
    CHECK_MESSAGE(r.code == 2, args, " -> ", r.out);
    CHECK_MESSAGE(one_error_line(r.out), args, " -> ", r.out);
  }
  if (!usable("cuda")) {
    const Run r = cli("check -b cuda");
    CHECK_MESSAGE(r.code == 3, r.out);
    CHECK(one_error_line(r.out));
  }
}
