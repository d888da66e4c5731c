#include "check.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "table.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/xreduce.hpp"

namespace xr::cli {
namespace {

using nlohmann::json;

// Sizes every run checks: the empty input, one to three elements, both sides of a warp, of a
// work-group of 1024 and of 65536, and one above 2^20.
const std::vector<std::uint64_t> kSizes = {0, 1, 2, 3, 31, 32, 33, 1023, 1024, 1025, 65537, (1u << 20) + 7};
// --full adds a size of several chunks of the streamed host path, and one above 2^31 elements
// (64-bit indexing inside one kernel: run on the whole input, resident on the device).
constexpr std::uint64_t kFullSize = (std::uint64_t{1} << 24) + 3;
constexpr std::uint64_t kHugeSize = (std::uint64_t{1} << 31) + 11;
// The huge size runs i32 on uniform input only, to bound host memory and time: integer results
// compare exactly, so an element lost or read twice past 2^31 shows.
const std::vector<DType> kHugeTypes = {DType::I32};
// Cases of sizes from kFullSize on start only within this many seconds of the run's start, so
// that --full ends in about 10 minutes on a GPU machine; the report counts those it skipped.
constexpr double kLargeBudgetSeconds = 540;
// The default run takes the inputs other than uniform at these sizes only (uniform takes
// every size); --full takes every input at every size.
const std::vector<std::uint64_t> kSampledSizes = {0, 1, 3, 33, 1025, 65537};
// `special` chooses its family of special values by seed % 5: five seeds cover them all.
constexpr std::uint64_t kSpecialSeeds = 5;

struct Args {
  std::string backend = "all";
  std::vector<std::string> kernels;  // empty: every kernel
  std::vector<std::string> sizes;    // empty: kSizes (and with --full, kFullSize and kHugeSize)
  std::string seed = "1";
  std::string json;
  bool full = false;
};

// One device of one backend, with the reduce_cli flags that choose it.
struct Target {
  std::string backend;
  DeviceInfo info;
  std::unique_ptr<Reducer> reducer;
  std::vector<KernelInfo> kernels;
  std::string label;  // "opencl 0.1": backend, platform and device index
  std::string flags;  // "-b opencl --platform 0 --device 1"
};

struct Input {
  Dist dist;
  std::uint64_t seed;
};

struct Case {
  const Target* target;
  std::string kernel, ran;  // the kernel row, and what ran ("auto:vector")
  Op op;
  DType type;
  std::uint64_t n;
  Input input;
  bool exact = false;
  bool resident = false;
  bool pass = false;
  std::string detail;
};

std::string word(Op op) { return std::string(to_string(op)); }
std::string word(DType t) { return std::string(to_string(t)); }

std::string reproducer(const Case& c) {
  std::string s = "reduce_cli " + c.target->flags + " --kernel " + c.kernel + " --op " + word(c.op) + " --type " +
                  word(c.type) + " --n " + std::to_string(c.n) + " --dist " + std::string(to_string(c.input.dist)) +
                  " --seed " + std::to_string(c.input.seed) + " --repeat 1 --warmup 0";
  if (c.exact) s += " --exact";
  if (c.resident) s += " --host-path resident";
  return s;
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

bool has_value(Op op, std::uint64_t n) {
  try {
    require_value_exists(op, n);
    return true;
  } catch (const EmptyInput&) {
    return false;
  }
}

class Check {
 public:
  explicit Check(Args a) : args_(std::move(a)) {}

  int run() {
    seed_ = parse_whole(args_.seed, "--seed", 0, std::numeric_limits<std::uint64_t>::max() - kSpecialSeeds,
                        "a 64-bit seed, less the special family's seeds");
    choose_sizes();
    std::optional<std::ofstream> json_out;
    if (!args_.json.empty()) {  // opened first: an unwritable path is a usage error before any work
      json_out.emplace(args_.json);
      if (!*json_out) throw InvalidArgument("--json: cannot write " + shown(args_.json));
    }
    find_targets();
    check_kernel_names();
    run_matrix();
    print_report(elapsed());
    if (json_out) *json_out << to_json().dump(1) << '\n';
    const bool failed =
        !unopened_.empty() || std::any_of(cases_.begin(), cases_.end(), [](const Case& c) { return !c.pass; });
    return failed ? kDisagree : kAgree;
  }

 private:
  Args args_;
  std::uint64_t seed_ = 1;
  std::vector<std::uint64_t> sizes_;
  std::vector<Target> targets_;
  std::vector<Case> cases_;
  std::vector<std::string> notes_;
  std::vector<std::string> unopened_;  // devices that make_reducer failed to open
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::size_t skipped_for_time_ = 0;

  void note(const std::string& text) {
    if (std::find(notes_.begin(), notes_.end(), text) == notes_.end()) notes_.push_back(text);
  }

  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

  void choose_sizes() {
    if (!args_.sizes.empty()) {
      for (const auto& text : args_.sizes) sizes_.push_back(parse_count(text, "--sizes"));
      return;
    }
    sizes_ = kSizes;
    if (args_.full) {
      sizes_.push_back(kFullSize);
      sizes_.push_back(kHugeSize);
    } else {
      note("sizes 2^24+3 and 2^31+11 run with --full");
    }
  }

  void find_targets() {
    if (args_.backend != "all") backend_status(args_.backend);  // InvalidArgument for an unknown name
    for (const auto& status : backend_statuses()) {
      if (args_.backend != "all" && status.name != args_.backend) continue;
      if (!status.usable) {
        if (args_.backend != "all") throw BackendUnavailable(status.name, status.reason);
        note(status.name + ": skipped, " + status.reason);
        continue;
      }
      for (const auto& device : status.devices) {
        Target t;
        t.backend = status.name;
        t.info = device;
        t.label = status.name;
        t.flags = "-b " + status.name;
        if (device.select.platform >= 0) {
          t.label += " " + std::to_string(device.select.platform) + ".";
          t.flags += " --platform " + std::to_string(device.select.platform);
        }
        if (!device.select.device.empty()) {
          t.label += (device.select.platform >= 0 ? "" : " ") + device.select.device;
          t.flags += " --device " + device.select.device;
        }
        try {
          t.reducer = make_reducer(status.name, device.select);
        } catch (const BackendUnavailable& e) {
          note(t.label + " (" + device.name + "): skipped, " + e.what());
          continue;
        } catch (const Error& e) {  // listed and usable, yet it does not open: a failure of its own
          unopened_.push_back(t.label + " (" + device.name + ") does not open: " + e.what());
          continue;
        }
        for (const auto& k : t.reducer->kernels())
          if (k.kind != KernelKind::Probe && selected(k.name)) t.kernels.push_back(k);
        targets_.push_back(std::move(t));
      }
    }
  }

  bool selected(const std::string& kernel) const {
    return args_.kernels.empty() || std::find(args_.kernels.begin(), args_.kernels.end(), kernel) != args_.kernels.end();
  }

  void check_kernel_names() const {
    for (const auto& name : args_.kernels) {
      bool known = false;
      for (const auto& t : targets_)
        for (const auto& k : t.kernels) known = known || k.name == name;
      if (!known) throw InvalidArgument("--kernel: no device checked here has a kernel " + shown(name));
    }
  }

  // The inputs of one size: uniform always; the other distributions at every size with --full
  // or --sizes, else at kSampledSizes.
  std::vector<Input> inputs(std::uint64_t n) const {
    std::vector<Input> out = {{Dist::Uniform, seed_}};
    if (n == kHugeSize) return out;
    const bool sampled = std::find(kSampledSizes.begin(), kSampledSizes.end(), n) != kSampledSizes.end();
    if (!args_.full && args_.sizes.empty() && !sampled) return out;
    out.push_back({Dist::Normal, seed_});
    out.push_back({Dist::Cancel, seed_});
    for (std::uint64_t s = 0; s < kSpecialSeeds; ++s) out.push_back({Dist::Special, seed_ + s});
    return out;
  }

  void run_matrix() {
    if (!args_.full && args_.sizes.empty()) {
      std::string sampled;
      for (auto n : kSampledSizes) sampled += (sampled.empty() ? "" : ", ") + std::to_string(n);
      note("for time, normal, cancel and special inputs run at sizes " + sampled +
                       " only (uniform at every size); --full runs every input at every size");
    }
    std::size_t total = 0;
    Progress progress(true);
    for (std::uint64_t n : sizes_)
      for (DType type : all_dtypes) {
        if (n == kHugeSize && std::find(kHugeTypes.begin(), kHugeTypes.end(), type) == kHugeTypes.end()) continue;
        const std::uint64_t bytes = n * size_of(type);
        if (bytes > host_memory_bytes() / 2) {
          note("n = " + std::to_string(n) + " " + word(type) + ": skipped, " + format_bytes(bytes) +
                           " is more than half of this machine's memory (" + format_bytes(host_memory_bytes()) + ")");
          continue;
        }
        for (const Input& input : inputs(n)) {
          progress.show("check: n = " + std::to_string(n) + " " + word(type) + " " +
                        std::string(to_string(input.dist)) + " seed " + std::to_string(input.seed) + " (" +
                        std::to_string(total) + " cases so far)");
          const HostBuffer x = generate(type, n, input.dist, input.seed);
          for (Op op : all_ops) {
            std::optional<Reference> ref;
            if (has_value(op, n)) ref = reference_reduce(x.view(), op);
            for (const Target& t : targets_) run_target(t, x, op, input, ref);
          }
          total = cases_.size();
        }
      }
    if (std::find(sizes_.begin(), sizes_.end(), 0) != sizes_.end()) {
      std::vector<Op> valueless;
      for (const OpInfo& o : op_table)
        if (!o.empty_has_value) valueless.push_back(o.op);
      note(spelled(valueless, [](Op op) { return std::string(to_string(op)); }, " and ") +
           " of n = 0 pass when the reduction throws EmptyInput (they have no value); their reproducers exit 2 "
           "with that error");
    }
    if (std::find(sizes_.begin(), sizes_.end(), kHugeSize) != sizes_.end())
      note("n = 2^31+11 runs i32 on uniform input, resident on each device");
    if (skipped_for_time_)
      note(std::to_string(skipped_for_time_) + " cases of n >= 2^24+3 skipped for time: they start only in the first " +
                       fixed(kLargeBudgetSeconds, 0) + " s of a run");
  }

  void run_target(const Target& t, const HostBuffer& x, Op op, const Input& input, const std::optional<Reference>& ref) {
    const std::uint64_t n = x.size();
    const bool resident = n == kHugeSize && t.info.max_input_bytes > 0;
    if (resident && x.bytes() > t.info.max_input_bytes) {
      note(t.label + ": n = " + std::to_string(n) + " " + word(x.type()) + " skipped, " + format_bytes(x.bytes()) +
           " is more than the device's largest buffer of " + format_bytes(t.info.max_input_bytes));
      return;
    }
    for (const KernelInfo& k : t.kernels) {
      if (!k.supports(op, x.type())) continue;
      for (bool exact : {false, true}) {
        if (exact && !(k.exact && exact_applies(op, x.type()))) continue;
        if (n >= kFullSize && elapsed() > kLargeBudgetSeconds) {
          ++skipped_for_time_;
          continue;
        }
        Case c{&t, k.name, "", op, x.type(), n, input, exact, resident, false, ""};
        RunOptions o;
        o.kernel = k.name;
        o.exact = exact;
        o.host_path = resident ? HostPath::Resident : HostPath::Stream;
        run_case(c, *t.reducer, x, o, ref);
        cases_.push_back(std::move(c));
      }
    }
  }

  static void run_case(Case& c, Reducer& reducer, const HostBuffer& x, const RunOptions& o,
                       const std::optional<Reference>& ref) {
    try {
      const Result r = reducer.reduce(x.view(), c.op, o);
      c.ran = r.kernel;
      if (!ref) {
        c.detail = "returned " + r.value.to_string() + " where " + word(c.op) + " of nothing must throw EmptyInput";
        return;
      }
      const Agreement a = check_result(r, *ref, c.exact);
      c.pass = a.ok;
      c.detail = a.detail;
    } catch (const EmptyInput& e) {
      c.pass = !ref;
      c.detail = std::string(ref ? "error: " : "EmptyInput as required: ") + e.what();
    } catch (const KernelBuildError& e) {
      c.detail = std::string("error: ") + e.what() + "; build log: " + printable(e.log(), 400);
    } catch (const Error& e) {
      c.detail = std::string("error: ") + e.what();
    }
  }

  void print_report(double seconds) const {
    std::cout << "reduce_cli check: " << cases_.size() << " cases on " << targets_.size() << " device(s) in "
              << fixed(seconds, 1) << " s; seed " << seed_ << " (special: " << seed_ << ".." << seed_ + kSpecialSeeds - 1
              << ")\n";
    for (const auto& t : targets_) std::cout << "  " << t.label << ": " << t.info.name << '\n';
    std::vector<std::string> header = {"device", "kernels"};
    for (Op op : all_ops)
      for (DType type : all_dtypes) header.push_back(word(op) + " " + word(type));
    header.insert(header.end(), {"pass", "fail"});
    Table table(header);
    for (const auto& t : targets_) {
      std::vector<std::string> row = {t.label, std::to_string(t.kernels.size())};
      std::size_t pass = 0, fail = 0;
      for (Op op : all_ops)
        for (DType type : all_dtypes) {
          std::size_t cell_pass = 0, cell_fail = 0;
          for (const auto& c : cases_)
            if (c.target == &t && c.op == op && c.type == type) ++(c.pass ? cell_pass : cell_fail);
          row.push_back(cell_pass + cell_fail == 0 ? "-"
                        : cell_fail == 0          ? std::to_string(cell_pass)
                                                  : std::to_string(cell_fail) + "/" +
                                                        std::to_string(cell_pass + cell_fail) + " FAIL");
          pass += cell_pass;
          fail += cell_fail;
        }
      row.insert(row.end(), {std::to_string(pass), std::to_string(fail)});
      table.add(row);
    }
    table.print(std::cout);
    std::cout << "cells: cases passed; f/t FAIL: f of t cases failed\n";
    for (const auto& note : notes_) std::cout << "note: " << note << '\n';
    constexpr std::size_t kShownFailures = 100;
    std::size_t failures = 0;
    for (const auto& c : cases_) {
      if (c.pass) continue;
      if (++failures <= kShownFailures) std::cout << "FAIL " << reproducer(c) << "  # " << printable(c.detail, 300) << '\n';
    }
    if (failures > kShownFailures)
      std::cout << failures - kShownFailures << " more failures" << (args_.json.empty() ? "" : " in " + args_.json)
                << '\n';
    for (const auto& device : unopened_) std::cout << "FAIL " << printable(device, 300) << '\n';
    std::cout << (failures ? std::to_string(failures) + " of " + std::to_string(cases_.size()) + " cases FAILED"
                           : "all " + std::to_string(cases_.size()) + " cases passed")
              << (unopened_.empty() ? "" : "; " + std::to_string(unopened_.size()) + " device(s) FAILED to open") << '\n';
  }

  json to_json() const {
    json cases = json::array();
    for (const auto& c : cases_)
      cases.push_back({{"backend", c.target->backend}, {"device", c.target->info.name}, {"target", c.target->label},
                       {"kernel", c.kernel}, {"ran", c.ran}, {"op", word(c.op)}, {"type", word(c.type)}, {"n", c.n},
                       {"dist", to_string(c.input.dist)}, {"seed", c.input.seed}, {"exact", c.exact},
                       {"pass", c.pass}, {"detail", c.detail}, {"reproducer", reproducer(c)}});
    return {{"seed", seed_}, {"notes", notes_}, {"devices_failed", unopened_}, {"cases", cases}};
  }
};

}  // namespace

int run_check(int argc, char** argv) {
  Args a;
  std::string kernels, sizes;
  CLI::App cli{
      "reduce_cli check: every usable backend and device, every kernel (auto and baselines included), every op and "
      "type it supports, sizes 0 to 2^20+7 and uniform, normal, cancelling and special inputs (NaN, infinities, "
      "signed zeros, subnormals, type limits), plain and exact, each compared with the host reference. Prints a "
      "matrix of passed cases by device, op and type, and for each failure the reduce_cli command that reproduces "
      "it.\nExit codes: 0 every case passes, 1 a case fails, 2 bad flags, 3 a backend named by -b is unavailable.",
      "reduce_cli check"};
  add_backend_option(cli, a.backend);
  cli.add_option("--kernel,-k", kernels, "only these kernels, by name: vector,auto");
  cli.add_option("--sizes", sizes,
                 "only these sizes, every input at each: 0,1025,2^20 (by default normal, cancel and special inputs run "
                 "at some sizes only, uniform at all)");
  cli.add_option("--seed", a.seed, "seed of the inputs; special inputs take it and the next four")
      ->capture_default_str();
  cli.add_option("--json", a.json, "write every case to FILE as JSON");
  cli.add_flag("--full", a.full,
               "every input at every size, and sizes 2^24+3 and 2^31+11 (i32 on uniform input, resident on the "
               "device, where host and device memory allow); cases of these sizes start within the first " +
                   fixed(kLargeBudgetSeconds, 0) + " s");
  refuse_empty_values(cli);
  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return cli.exit(e);
  } catch (const CLI::ParseError& e) {
    return report("check: " + std::string(e.what()) + " (see reduce_cli check --help)", kUsage);
  }
  if (!kernels.empty()) a.kernels = split(kernels);
  if (!sizes.empty()) a.sizes = split(sizes);
  try {
    return Check(std::move(a)).run();
  } catch (const BackendUnavailable& e) {
    return report(std::string("check: ") + e.what(), kUnavailable);
  } catch (const Error& e) {
    return report(std::string("check: ") + e.what(), kUsage);
  } catch (const std::bad_alloc&) {
    return report("check: out of host memory", kUsage);
  }
}

}  // namespace xr::cli
