// reduce_cli's command line: its arguments as given, and the options that fill them.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace xr::cli {

struct Args {
  std::string backend = "all";
  std::string op = "sum";
  std::optional<std::string> type;
  std::string n_text = "2^24";
  bool n_given = false;  // --n on the command line: with --input, it bounds the elements read
  std::string dist = "uniform";
  std::string seed = "42";
  std::string input;  // a path, or "-" for standard input
  std::string format = "auto";
  std::string kernel = "auto";
  std::string accumulator = "wide";
  // Numbers are read by parse_whole (strict digits, a checked range), not by CLI11.
  std::string repeat = "5";
  std::string warmup = "1";
  std::string block = "0", grid = "0", coarsening = "0", threads = "0";
  std::string platform;  // empty: any
  std::string device;
  bool json = false;
  bool list = false;
  bool exact = false;
  std::string device_mem_limit;  // "256M"; empty: no limit
  std::string chunk;             // elements per streamed chunk; empty: the default
  std::string host_path = "auto";
  std::string save;  // write the generated input here (.npy by name, else raw) before reducing
  std::string share = "1";  // under mpirun: this rank's weight in the split of the input
  bool share_given = false;
  std::string plot;  // --plot FILE: the ladder drawn by plot.py (with --kernel all)
  // Segmented reductions (segmented.hpp).
  std::string shape, stride, order = "c", axis = "1", segments, seg_len, seg_dist, offsets, save_result;
  bool axis_given = false, order_given = false;
};

// The first segmented option given ("--shape", ...); empty when none is.
std::string segmented_option(const Args& a);

// reduce_cli's options (all but "check"'s), filling `a` when `cli` parses a command line.
void add_options(CLI::App& cli, Args& a);
// What parsing left to read off `cli`: which options were given at all.
void note_given(const CLI::App& cli, Args& a);

}  // namespace xr::cli
