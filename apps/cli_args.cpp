// reduce_cli's options: names, help and defaults, in the order --help lists them.
#include "cli_args.hpp"

#include <utility>

#include "cli_common.hpp"
#include "xreduce/xreduce.hpp"

namespace xr::cli {

// The first segmented option given ("--shape", ...); empty when none is.
std::string segmented_option(const Args& a) {
  const std::pair<bool, const char*> options[] = {
      {!a.shape.empty(), "--shape"},       {!a.segments.empty(), "--segments"}, {!a.offsets.empty(), "--offsets"},
      {a.axis_given, "--axis"},            {!a.stride.empty(), "--stride"},     {a.order_given, "--order"},
      {!a.seg_len.empty(), "--seg-len"},   {!a.seg_dist.empty(), "--seg-dist"}, {!a.save_result.empty(), "--save-result"}};
  for (const auto& [given, name] : options)
    if (given) return name;
  return {};
}

void add_options(CLI::App& cli, Args& a) {
  add_backend_option(cli, a.backend);
  cli.add_option("--op,-o", a.op, spelled(all_ops, [](Op op) { return std::string(to_string(op)); }))
      ->capture_default_str();
  cli.add_option("--type,-t", a.type,
                 "element type: " + spelled(all_dtypes, [](DType t) { return std::string(to_string(t)); }) +
                     " (default f32); raw files need it");
  cli.add_option("--n,-n", a.n_text,
                 "elements to generate: 16777216, 16M, 2^24, 1e6; with --input, the most elements to read (a "
                 "device such as /dev/urandom needs it)")
      ->capture_default_str();
  cli.add_option("--dist", a.dist, spelled(all_dists, [](Dist d) { return std::string(to_string(d)); }))
      ->capture_default_str();
  cli.add_option("--seed", a.seed, "generator seed")->capture_default_str();
  cli.add_option("--input,-i", a.input,
                 "read the input from FILE (raw binary, .npy, or text one number a line), or '-' for standard input; "
                 "pipes and FIFOs are read once");
  cli.add_option("--format", a.format, "input file format: auto, raw, npy or text")->capture_default_str();
  cli.add_option("--kernel,-k", a.kernel, "a rung name, 'all' for the ladder, 'list' to list rungs")
      ->capture_default_str();
  cli.add_option("--accumulator", a.accumulator, "sums of i8, u8, i32, u32: wide (in 64 bits) or native (in the input type, wrapping)")
      ->check(CLI::IsMember({"wide", "native"}))
      ->capture_default_str();
  cli.add_option("--repeat,-r", a.repeat, "timed runs, 1 to 1000000 (the median is reported)")->capture_default_str();
  cli.add_option("--warmup", a.warmup, "untimed runs first, 0 to 1000000")->capture_default_str();
  cli.add_option("--block", a.block, "threads per block / work-group size (0: the rung's default)");
  cli.add_option("--grid", a.grid, "blocks / work-groups of the first pass (0: the rung's default)");
  cli.add_option("--coarsening", a.coarsening, "elements per work-item before the tree (OpenCL 'coarse')");
  cli.add_option("--threads", a.threads, "OpenMP threads (0: the runtime's default; at most 64 per hardware thread)");
  cli.add_option("--platform", a.platform, "OpenCL platform index");
  cli.add_option("--device,-d", a.device, "device index, or a name substring (OpenCL)");
  cli.add_flag("--exact", a.exact,
               "f32/f64 sums: the correctly rounded exact sum, compared bit for bit (ulps shown when not)");
  cli.add_option("--device-mem-limit", a.device_mem_limit,
                 "device memory the host path may hold for input chunks: 256M, 1G (forces many chunks)");
  cli.add_option("--chunk", a.chunk, "elements per streamed chunk (default: 64 MiB of them; segmented jobs 256 MiB)");
  cli.add_option("--host-path", a.host_path,
                 "host data on CUDA/OpenCL: stream (pipelined chunks), resident (copy once, time the kernels), or "
                 "auto (resident for --kernel all, else stream)")
      ->check(CLI::IsMember({"auto", "stream", "resident"}))
      ->capture_default_str();
  cli.add_option("--save", a.save, "write the generated input to FILE (.npy by name, else raw) before reducing");
  cli.add_option("--share", a.share,
                 "under mpirun: this rank's weight in the split of the input over the ranks (0: it holds nothing)")
      ->capture_default_str();
  cli.add_flag("--json", a.json, "print results as JSON");
  cli.add_option("--plot", a.plot,
                 "with --kernel all: draw the ladder into FILE (.png, .svg, .pdf) with plot.py (python3 and "
                 "matplotlib); XR_PLOT_SCRIPT overrides where plot.py is");
  cli.add_flag("--list", a.list, "list backends and devices, and why any is unavailable");
  cli.add_option("--shape", a.shape, "segmented: generate a ROWSxCOLS array (1024x1024, 2^16x1024) and reduce --axis");
  cli.add_option("--stride", a.stride, "segmented: elements from one row (C) or column (Fortran) to the next");
  cli.add_option("--order", a.order, "segmented: the generated array's order, c or fortran")->capture_default_str();
  cli.add_option("--axis", a.axis, "segmented: 1 reduces each row, 0 each column (also of a 2-D .npy --input)")
      ->capture_default_str();
  cli.add_option("--segments", a.segments, "segmented: this many segments of 1-D data, lengths by --seg-len or --seg-dist");
  cli.add_option("--seg-len", a.seg_len, "segmented: every segment's length");
  cli.add_option("--seg-dist", a.seg_dist, "segmented: lengths from uniform:A:B or lognormal:MEAN[:MAX] (seeded by --seed)");
  cli.add_option("--offsets", a.offsets, "segmented: n_segments + 1 int64 offsets from FILE (.npy '<i8' or raw)");
  cli.add_option("--save-result", a.save_result, "segmented: write the values of the first run to FILE (.npy, or raw bytes under any other name: bf16 has no .npy type)");
}

void note_given(const CLI::App& cli, Args& a) {
  a.n_given = cli.count("--n") > 0;
  a.share_given = cli.count("--share") > 0;
  a.axis_given = cli.count("--axis") > 0;
  a.order_given = cli.count("--order") > 0;
}

}  // namespace xr::cli
