// reduce_cli: reduce generated data or a file on one or every backend, run one rung or the
// whole ladder, and check every result against the host reference.
//
// Exit codes: 0 every result agrees with the reference, 1 a result disagrees, 2 usage or
// input error (and device errors), 3 a backend asked for by name is unavailable.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "check.hpp"
#include "cli_args.hpp"
#include "cli_common.hpp"
#include "distributed.hpp"
#include "plot.hpp"
#include "segmented.hpp"
#include "table.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/xreduce.hpp"

namespace {

using namespace xr;
using namespace xr::cli;

using nlohmann::json;

// A streamed source that shows "label: 1.2 GiB of 4.0 GiB (30%)" at most five times a second.
class SourceProgress {
 public:
  SourceProgress(ChunkSource& inner, std::string label)
      : label_(std::move(label)),
        source_(inner, [this](std::uint64_t done, std::uint64_t total) { report(done, total); }) {}
  ChunkSource& source() { return source_; }

 private:
  void report(std::uint64_t done, std::uint64_t total) {
    if (!progress_.on()) return;
    const auto now = std::chrono::steady_clock::now();
    if (done < total && now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    progress_.show(label_ + ": " + format_bytes(done) + " of " + format_bytes(total) + " (" +
                   std::to_string(total ? done * 100 / total : 100) + "%)");
  }
  std::string label_;
  Progress progress_{true};
  std::chrono::steady_clock::time_point last_{};
  ProgressSource source_;
};

struct Row {
  Result result;
  KernelKind kind = KernelKind::Rung;
  Agreement agreement;
};

json to_json(const Row& row, const Reference& ref) {
  const Result& r = row.result;
  json j = {{"backend", r.backend}, {"device", r.device}, {"kernel", r.kernel}, {"op", to_string(r.op)},
            {"type", to_string(r.type)}, {"n", r.n}, {"finish", r.finish}, {"launches", r.launches},
            {"repeats", r.repeats}, {"kernel_ms", r.kernel_ms}, {"transfer_ms", r.transfer_ms},
            {"bytes_per_s", r.bytes_per_s}, {"rounding_depth", r.rounding_depth}, {"total_ms", r.total_ms},
            {"chunks", r.chunks}, {"path", r.path}};
  if (row.kind == KernelKind::Probe) {
    j["probe"] = true;
    return j;
  }
  j["value"] = r.value.to_string();
  j["value_type"] = to_string(r.value.type);
  j["reference"] = ref.value.to_string();
  switch (op_info(r.op).kind) {
    case OpKind::Fold: break;
    case OpKind::Located:
      j["index"] = r.index;
      j["reference_index"] = ref.index;
      break;
    case OpKind::Bounds:
      j["maximum"] = r.maximum.to_string();
      j["reference_maximum"] = ref.maximum.to_string();
      break;
  }
  j["agrees"] = row.agreement.ok;
  j["detail"] = row.agreement.detail;
  if (row.agreement.overflow) {  // error and bound are infinite, which JSON cannot hold
    j["overflow"] = true;
    return j;
  }
  j["error"] = row.agreement.error;
  j["bound"] = row.agreement.bound;
  return j;
}

std::string gbps(const Result& r) { return cli::fixed(r.bytes_per_s / 1e9, 1); }
std::string ms(const Result& r) { return cli::fixed(r.kernel_ms, 3); }

class App {
 public:
  explicit App(Args a) : args_(std::move(a)) {}

  // The arguments as a distributed run takes them (reduce_cli under mpirun).
  DistributedJob job() {
    read_numbers();
    const auto refuse = [](bool given, const std::string& what) {
      if (given) throw InvalidArgument(what + " is for one process; under mpirun each rank reduces its part with one rung");
    };
    refuse(args_.list, "--list");
    refuse(args_.kernel == "all" || args_.kernel == "list", "--kernel " + args_.kernel);
    refuse(!args_.save.empty(), "--save");
    refuse(!args_.plot.empty(), "--plot");
    refuse_device_options();
    DistributedJob job;
    const bool segmented = segmented_mode();
    if (segmented && !args_.stride.empty())
      throw InvalidArgument("--stride lays out one process's array; under mpirun each rank holds its rows densely");
    job.backend = args_.backend == "all" ? "auto" : args_.backend;
    job.device.platform = platform_;
    job.device.device = args_.device;
    job.options = options_;
    job.options.kernel = args_.kernel;
    job.options.accumulator = args_.accumulator == "native" ? Accumulator::Native : Accumulator::Wide;
    job.options.exact = args_.exact;
    job.options.host_path = args_.host_path == "resident" ? HostPath::Resident : HostPath::Stream;
    job.op = parse_op(args_.op);
    if (args_.type) job.type = parse_dtype(*args_.type);
    job.format = parse_file_format(args_.format);
    job.dist = parse_dist(args_.dist);
    job.seed = seed_;
    job.share = parse_whole(args_.share, "--share", 0, std::uint64_t{1} << 40, "a rank's weight");
    job.json = args_.json;
    if (segmented) {
      job.segmented = segmented_args();
      job.segmented->options = job.options;
      job.segmented->op = job.op;
      return job;
    }
    if (args_.input.empty()) {
      job.n = parse_count(args_.n_text, "--n");
    } else {
      job.input = args_.input;
      if (args_.type) job.file_type = job.type;
      if (args_.n_given) job.bound = parse_count(args_.n_text, "--n");
    }
    return job;
  }

  int run() {
    if (!args_.plot.empty() && args_.kernel != "all")
      throw InvalidArgument("--plot draws the ladder: it needs --kernel all");
    read_numbers();
    parse_file_format(args_.format);  // every named value is checked, used or not
    parse_dist(args_.dist);
    if (args_.share_given) throw InvalidArgument("--share splits the input over MPI ranks: run under mpirun");
    if (args_.list) return list();
    refuse_device_options();
    options_.kernel = args_.kernel;
    options_.accumulator = args_.accumulator == "native" ? Accumulator::Native : Accumulator::Wide;
    options_.exact = args_.exact;
    // The ladder studies kernels: its input is copied to the device once (unless asked otherwise).
    options_.host_path = args_.host_path == "resident" || (args_.host_path == "auto" && args_.kernel == "all")
                             ? HostPath::Resident
                             : HostPath::Stream;
    op_ = parse_op(args_.op);
    if (segmented_mode()) {
      SegmentedArgs s = segmented_args();
      s.backends = selected_backends();
      s.backend_named = args_.backend != "all";
      return run_segmented(s);
    }
    load_input();
    if (options_.chunk_elements) chunk_elements(options_, size_of(type_), 3);  // its limits, before any run
    if (args_.kernel != "list") {
      require_value_exists(op_, n_);
      if (file_) {
        SourceProgress progress(*file_, "reference: reading " + args_.input);
        reference_ = reference_reduce(progress.source(), op_, options_.accumulator);
      } else {
        reference_ = reference_reduce(input_.view(), op_, options_.accumulator);
      }
    }

    const auto names = selected_backends();
    int status = kAgree;
    json out = json::array();
    for (const auto& name : names) {
      const BackendStatus st = backend_status(name);
      if (!st.usable) {
        if (args_.backend != "all") throw BackendUnavailable(name, st.reason);
        if (!args_.json) notes_.push_back(name + ": skipped, " + st.reason);
        continue;
      }
      BackendOptions bo;
      bo.platform = platform_;
      bo.device = args_.device;
      auto reducer = make_reducer(name, bo);
      if (args_.kernel == "list") {
        print_kernels(*reducer);
        continue;
      }
      // Every backend by default: one whose kernel lacks this (op, type) is skipped, with the reason.
      if (args_.backend == "all" && args_.kernel != "all") {
        const KernelInfo k = reducer->kernel(args_.kernel);
        if (!k.supports(op_, type_)) {
          if (!args_.json)
            notes_.push_back(name + ": skipped, kernel '" + k.name + "' does not support " + std::string(to_string(op_)) +
                             " on " + std::string(to_string(type_)));
          continue;
        }
      }
      const auto rows = args_.kernel == "all" ? ladder(*reducer) : one_kernel(*reducer);
      for (const auto& row : rows) {
        if (row.kind != KernelKind::Probe && !row.agreement.ok) status = kDisagree;
        out.push_back(to_json(row, reference_));
      }
      if (!args_.json && args_.kernel == "all") print_ladder(rows);
      all_rows_.insert(all_rows_.end(), rows.begin(), rows.end());
    }
    if (args_.json) {
      std::cout << out.dump(2) << '\n';
    } else if (args_.kernel != "all" && args_.kernel != "list") {
      print_summary();
    }
    if (!args_.plot.empty()) {  // after the results are out: a failed plot loses none of them
      if (out.empty()) throw InvalidArgument("--plot: no backend ran, there is no ladder to draw");
      const std::string script = cli::plot_ladder(out.dump(2), args_.plot);
      notes_.push_back("plot: " + args_.plot + " (drawn by " + script + ")");
    }
    if (!args_.json)
      for (const auto& note : notes_) std::cout << note << '\n';
    return status;
  }

 private:
  Args args_;
  RunOptions options_;
  int platform_ = -1;
  std::uint64_t seed_ = 42;
  Op op_ = Op::Sum;
  HostBuffer input_;                   // the input, unless it comes from file_
  std::unique_ptr<ChunkSource> file_;  // --input: a raw or .npy file streamed chunk by chunk, or one read whole

  // --device and --platform pick a GPU or OpenCL device: given where none is picked, an error.
  void refuse_device_options() const {
    if (!args_.device.empty() && args_.backend == "omp")
      throw InvalidArgument("--device picks a CUDA or OpenCL device; the omp backend runs on this host's CPU");
    if (!args_.platform.empty() && args_.backend != "opencl" && args_.backend != "all")
      throw InvalidArgument("--platform picks an OpenCL platform; it does not apply to the " + args_.backend + " backend");
  }

  // Every numeric option, each in its range; empty values never get here (main refuses them).
  void read_numbers() {
    constexpr std::uint64_t kMaxRuns = 1000000;
    options_.repeat = static_cast<int>(parse_whole(args_.repeat, "--repeat", 1, kMaxRuns, "timed runs"));
    options_.warmup = static_cast<int>(parse_whole(args_.warmup, "--warmup", 0, kMaxRuns, "untimed runs"));
    seed_ = parse_whole(args_.seed, "--seed", 0, std::numeric_limits<std::uint64_t>::max(), "a 64-bit seed");
    options_.block_size = static_cast<unsigned>(
        parse_whole(args_.block, "--block", 0, 65536, "no backend takes larger blocks; each device checks its own"));
    options_.grid_size = parse_whole(args_.grid, "--grid", 0, (std::uint64_t{1} << 31) - 1, "blocks of one launch");
    options_.coarsening = static_cast<unsigned>(
        parse_whole(args_.coarsening, "--coarsening", 0, 65536, "elements per work-item of one tile"));
    options_.threads = static_cast<unsigned>(
        parse_whole(args_.threads, "--threads", 0, max_threads(), "64 per hardware thread of this machine"));
    if (!args_.platform.empty())
      platform_ = static_cast<int>(parse_whole(args_.platform, "--platform", 0, std::numeric_limits<int>::max(),
                                               "a platform index"));
    if (!args_.device_mem_limit.empty()) {
      try {
        options_.device_mem_limit = parse_bytes(args_.device_mem_limit);
      } catch (const InvalidArgument& e) {
        throw InvalidArgument(std::string("--device-mem-limit: ") + e.what());
      }
      constexpr std::uint64_t kMaxDeviceMemory = std::uint64_t{1} << 50;
      if (options_.device_mem_limit > kMaxDeviceMemory)
        throw InvalidArgument("--device-mem-limit: " + shown(args_.device_mem_limit) + " is above the limit of " +
                              format_bytes(kMaxDeviceMemory) + " (no device holds more)");
    }
    if (!args_.chunk.empty()) {
      options_.chunk_elements = parse_count(args_.chunk, "--chunk");
      if (options_.chunk_elements == 0) throw InvalidArgument("--chunk: must be at least 1");
    }
  }
  std::uint64_t n_ = 0;
  DType type_ = DType::F32;
  Reference reference_;
  std::vector<Row> all_rows_;
  std::vector<std::string> notes_;

  void load_input() {
    std::optional<DType> type;
    if (args_.type) type = parse_dtype(*args_.type);
    if (!args_.input.empty()) {
      if (!args_.save.empty()) throw InvalidArgument("--save writes generated input; it does not copy --input files");
      const FileFormat format = parse_file_format(args_.format);
      std::optional<std::uint64_t> bound;
      if (args_.n_given) bound = parse_count(args_.n_text, "--n");
      // Regular raw and .npy files stream (memory stays bounded), except into the ladder, whose
      // rungs each need the whole input; text files, pipes and devices are read whole, once.
      const bool whole = args_.kernel == "all";
      if (args_.input == "-") {
        HostBuffer in = load_stream(STDIN_FILENO, "stdin", type, format, bound);
        if (whole) input_ = std::move(in);
        else file_ = std::make_unique<BufferSource>(std::move(in), "stdin");
      } else if (whole) {
        input_ = load_file(args_.input, type, format, bound);
      } else {
        file_ = open_input(args_.input, type, format, bound);
      }
      if (file_) {
        n_ = file_->size();
        type_ = file_->type();
      }
      source_ = args_.input;
    } else {
      const std::uint64_t n = parse_count(args_.n_text, "--n");
      const DType t = type.value_or(DType::F32);
      check_fits_memory(t, n, "--n");
      input_ = generate(t, n, parse_dist(args_.dist), seed_);
      source_ = std::string(to_string(parse_dist(args_.dist))) + ", seed " + std::to_string(seed_);
      if (!args_.save.empty()) {
        if (args_.save.ends_with(".npy")) save_npy(args_.save, input_.view());
        else save_raw(args_.save, input_.view());
      }
    }
    if (!file_) {
      n_ = input_.size();
      type_ = input_.type();
    }
  }
  std::string source_;

  // Whether the options ask for a segmented reduction (--shape, --segments, --offsets, --axis);
  // a segmented option without one of them is an error.
  bool segmented_mode() const {
    if (segmented_requested(args_.shape, args_.segments, args_.offsets, args_.axis_given)) {
      if (!args_.save.empty() || !args_.plot.empty() || args_.n_given)
        throw InvalidArgument("a segmented reduction takes its size from --shape, --segments or --offsets; --n, --save "
                              "and --plot are for whole-array reductions");
      return true;
    }
    if (const std::string option = segmented_option(args_); !option.empty() && option != "--save-result")
      throw InvalidArgument(option + " shapes a segmented reduction; give --shape, --segments, --offsets or --axis "
                                     "(a whole-array reduction has no rows or segments)");
    if (!args_.save_result.empty()) throw InvalidArgument("--save-result writes the values of a segmented reduction "
                                                          "(--shape, --segments, --offsets or --axis)");
    return false;
  }

  // The segmented reduction's arguments (options_ read first); backends are the caller's.
  SegmentedArgs segmented_args() const {
    SegmentedArgs s;
    s.device.platform = platform_;
    s.device.device = args_.device;
    s.options = options_;
    s.op = op_;
    if (args_.type) s.type = parse_dtype(*args_.type);
    s.dist = parse_dist(args_.dist);
    s.seed = seed_;
    s.input = args_.input;
    s.format = parse_file_format(args_.format);
    s.shape = args_.shape;
    s.stride = args_.stride;
    s.order = args_.order;
    s.order_given = args_.order_given;
    s.axis_given = args_.axis_given;
    s.axis = args_.axis;
    s.segments = args_.segments;
    s.seg_len = args_.seg_len;
    s.seg_dist = args_.seg_dist;
    s.offsets = args_.offsets;
    s.save_result = args_.save_result;
    s.json = args_.json;
    return s;
  }

  std::vector<std::string> selected_backends() const {
    if (args_.backend == "all") return backend_names();
    backend_status(args_.backend);  // throws InvalidArgument for an unknown name
    return {args_.backend};
  }

  std::vector<Row> one_kernel(Reducer& reducer) {
    Progress progress(options_.repeat >= 50);
    const KernelInfo k = reducer.kernel(args_.kernel);
    progress.show(reducer.backend() + ": " + k.name + ", " + std::to_string(options_.repeat) + " runs");
    Row row;
    row.kind = k.kind;
    if (file_) {
      progress.clear();
      SourceProgress streamed(*file_, reducer.backend() + ": " + args_.input);
      row.result = reducer.reduce(streamed.source(), op_, options_);
    } else {
      row.result = reducer.reduce(input_.view(), op_, options_);
    }
    if (k.kind != KernelKind::Probe) row.agreement = check_result(row.result, reference_, options_.exact);
    return {row};
  }

  // Rungs run round-robin, one timed run each per round, so drift in clocks or load hits
  // every rung alike; each row reports the median of its rounds.
  std::vector<Row> ladder(Reducer& reducer) {
    std::vector<KernelInfo> todo;
    for (const auto& k : reducer.kernels())
      if (k.kind == KernelKind::Probe ||
          (k.supports(op_, input_.type()) && (!options_.exact || k.exact || !exact_applies(op_, input_.type()))))
        todo.push_back(k);
    Progress progress(true);
    std::vector<Row> rows(todo.size());
    std::vector<std::vector<double>> times(todo.size()), transfers(todo.size());
    const int rounds = options_.warmup + options_.repeat;
    for (int round = 0; round < rounds; ++round)
      for (std::size_t i = 0; i < todo.size(); ++i) {
        progress.show(reducer.backend() + " round " + std::to_string(round + 1) + "/" + std::to_string(rounds) +
                      ": " + todo[i].name);
        RunOptions o = options_;
        o.kernel = todo[i].name;
        o.warmup = 0;
        o.repeat = 1;
        Result r = reducer.reduce(input_.view(), op_, o);
        if (round < options_.warmup) continue;
        times[i].push_back(r.kernel_ms);
        transfers[i].push_back(r.transfer_ms);
        rows[i].result = std::move(r);
      }
    for (std::size_t i = 0; i < todo.size(); ++i) {
      Result& r = rows[i].result;
      r.kernel_ms = median(times[i]);
      r.transfer_ms = median(transfers[i]);
      r.repeats = options_.repeat;
      r.bytes_per_s = r.kernel_ms > 0 ? static_cast<double>(input_.bytes()) / (r.kernel_ms * 1e-3) : 0;
      rows[i].kind = todo[i].kind;
      if (todo[i].kind != KernelKind::Probe) rows[i].agreement = check_result(r, reference_, options_.exact);
    }
    return rows;
  }

  std::string header_line(const Result& r) const {
    return r.backend + " on " + r.device + ": " + std::string(to_string(op_)) + " of " +
           std::to_string(n_) + " " + std::string(to_string(type_)) + " (" + source_ + "), median of " +
           std::to_string(options_.repeat) + " after " + std::to_string(options_.warmup) + " warm-up";
  }

  void print_ladder(const std::vector<Row>& rows) const {
    if (rows.empty()) return;
    std::cout << header_line(rows.front().result) << "; reference " << cli::value_text(reference_) << '\n';
    const Row* baseline = nullptr;
    for (const auto& row : rows)
      if (row.kind == KernelKind::Baseline || row.kind == KernelKind::Probe) baseline = &row;
    cli::Table t({"rung", "time ms", "GB/s", "step", "cumulative", baseline ? "vs " + baseline->result.kernel : "",
                  "launches", "value", "agrees"});
    const Row* first = nullptr;
    const Row* previous = nullptr;
    for (const auto& row : rows) {
      const Result& r = row.result;
      const bool ours = row.kind == KernelKind::Rung || row.kind == KernelKind::Auto;
      std::string step = "", cumulative = "";
      if (ours && row.kind == KernelKind::Rung) {
        if (!first) first = &row;
        if (previous) step = cli::fixed(previous->result.kernel_ms / r.kernel_ms, 2) + "x";
        cumulative = cli::fixed(first->result.kernel_ms / r.kernel_ms, 2) + "x";
        previous = &row;
      } else if (ours && first) {
        cumulative = cli::fixed(first->result.kernel_ms / r.kernel_ms, 2) + "x";
      }
      const std::string vs = baseline ? cli::fixed(100.0 * r.bytes_per_s / baseline->result.bytes_per_s, 0) + "%" : "";
      const bool probe = row.kind == KernelKind::Probe;
      t.add({r.kernel + (row.kind == KernelKind::Baseline || probe ? " (baseline)" : ""), ms(r), gbps(r), step,
             cumulative, vs, std::to_string(r.launches), probe ? "-" : cli::value_text(r),
             probe ? "-" : (row.agreement.ok ? "yes" : "NO")});
    }
    t.print(std::cout);
    std::cout << '\n';
  }

  void print_summary() const {
    std::cout << std::string(to_string(op_)) << " of " << n_ << " " << to_string(type_) << " ("
              << source_ << "); reference " << cli::value_text(reference_) << "; median of " << options_.repeat
              << " runs\n";
    cli::Table t({"backend", "device", "kernel", "value", "agrees", "time ms", "transfer ms", "total ms", "GB/s",
                  "chunks"});
    bool streamed = false;
    for (const auto& row : all_rows_) {
      const Result& r = row.result;
      const bool probe = row.kind == KernelKind::Probe;
      streamed = streamed || r.total_ms > 0;
      t.add({r.backend, r.device, r.kernel, probe ? "-" : cli::value_text(r),
             probe ? "-" : (row.agreement.ok ? "yes" : "NO: " + row.agreement.detail), ms(r),
             cli::fixed(r.transfer_ms, 3), r.total_ms > 0 ? cli::fixed(r.total_ms, 3) : "-", gbps(r),
             std::to_string(r.chunks)});
    }
    t.print(std::cout);
    if (streamed)
      std::cout << "streamed rows: GB/s is end to end (total ms: host data to value); time ms is the kernels' share\n";
  }

  void print_kernels(const Reducer& reducer) const {
    std::cout << reducer.backend() << " on " << reducer.device() << ":\n";
    cli::Table t({"kernel", "ops", "types", "note"});
    for (const auto& k : reducer.kernels()) {
      std::string ops, types;
      for (auto o : k.ops) ops += (ops.empty() ? "" : ",") + std::string(to_string(o));
      for (auto d : k.types) types += (types.empty() ? "" : ",") + std::string(to_string(d));
      t.add({k.name, ops, types, k.note});
    }
    t.print(std::cout);
  }

  int list() const {
    json out = json::array();
    cli::Table t({"backend", "compiled", "usable", "device", "detail"});
    for (const auto& s : backend_statuses()) {
      json devices = json::array();
      for (const auto& d : s.devices) devices.push_back({{"name", d.name}, {"detail", d.detail}});
      out.push_back({{"backend", s.name}, {"compiled", s.compiled}, {"usable", s.usable}, {"reason", s.reason},
                     {"devices", devices}});
      if (s.devices.empty()) t.add({s.name, s.compiled ? "yes" : "no", s.usable ? "yes" : "no", "-", s.reason});
      for (std::size_t i = 0; i < s.devices.size(); ++i)
        t.add({i ? "" : s.name, i ? "" : (s.compiled ? "yes" : "no"), i ? "" : (s.usable ? "yes" : "no"),
               std::to_string(i) + ": " + s.devices[i].name, s.devices[i].detail});
    }
    if (args_.json) std::cout << out.dump(2) << '\n';
    else t.print(std::cout);
    return kAgree;
  }
};

}  // namespace

int main(int argc, char** argv) {
  // Under mpirun every rank reads its own command line: a rank's mistake, or its --help, is agreed
  // on, so that every rank stops with it and none waits for a rank that has gone.
  const bool distributed = launched_by_mpi();
  if (argc > 1 && std::string(argv[1]) == "check") {
    if (!distributed) return run_check(argc - 1, argv + 1);
    const CommandLine refused{std::make_exception_ptr(InvalidArgument(
                                  "'reduce_cli check' is for one process: run it without mpirun")),
                              {}};
    return run_distributed(refused, [] { return DistributedJob{}; });
  }
  Args a;
  CLI::App cli{
      "reduce_cli: reduce an array on CUDA, OpenCL and OpenMP and check each result against an exact host "
      "reference.\nWith no arguments: 2^24 uniform f32 values summed by every available backend's auto "
      "kernel.\n'reduce_cli check' runs the conformance matrix of every backend, device and kernel (see reduce_cli "
      "check --help).\nExit codes: 0 all agree, 1 a result disagrees, 2 usage or input error, 3 backend unavailable.",
      "reduce_cli"};
  add_options(cli, a);
  refuse_empty_values(cli);
  CommandLine line;
  try {
    cli.parse(argc, argv);
    note_given(cli, a);
  } catch (const CLI::Success& e) {  // --help, --help-all: print, exit 0
    if (!distributed) return cli.exit(e);
    line.leave = [&cli, asked = std::current_exception()] {
      try {
        std::rethrow_exception(asked);
      } catch (const CLI::Error& e) {
        return cli.exit(e);
      }
    };
  } catch (const CLI::ParseError& e) {
    const std::string message = std::string(e.what()) + " (see --help)";
    if (!distributed) return report(message, kUsage);
    line.error = std::make_exception_ptr(InvalidArgument(message));
  }
  if (distributed) return run_distributed(line, [&] { return App(std::move(a)).job(); });
  try {
    return App(std::move(a)).run();
  } catch (...) {
    return exit_code(std::current_exception());
  }
}
