// reduce_cli's segmented mode: rows or columns of a 2-D array (--shape, a 2-D .npy) or the
// segments of a 1-D one (--segments, --offsets), every value checked against the host reference.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "xreduce/xreduce.hpp"

namespace xr::cli {

struct SegmentedArgs {
  std::vector<std::string> backends;  // the backends to run, in order
  bool backend_named = false;         // one backend asked for by name: unavailable is an error
  BackendOptions device;
  RunOptions options;                 // options.kernel: a strategy, "all" or "list"
  Op op = Op::Sum;
  std::optional<DType> type;
  Dist dist = Dist::Uniform;
  std::uint64_t seed = 42;
  std::string input;                  // a file: 2-D .npy for --axis, else 1-D data for the segments
  FileFormat format = FileFormat::Auto;
  std::string shape;                  // "RxC": generated data
  std::string stride;                 // elements between rows (C) or columns (Fortran); empty: dense
  std::string order = "c";            // c or fortran, of generated data
  bool order_given = false;           // --order on the command line
  std::string axis = "1";
  bool axis_given = false;            // --axis on the command line
  std::string segments;               // a count of generated segments
  std::string seg_len;                // every segment's length
  std::string seg_dist;               // uniform:A:B or lognormal:MEAN[:MAX]
  std::string offsets;                // a file of n_segments + 1 int64 offsets (raw or .npy)
  std::string save_result;            // the values of the first run: .npy by name, else raw bytes
  bool json = false;
};

// True when the arguments ask for a segmented reduction.
bool segmented_requested(const std::string& shape, const std::string& segments, const std::string& offsets,
                         bool axis_given);

// Runs it; returns the exit code (kAgree, kDisagree). Throws for bad arguments.
int run_segmented(const SegmentedArgs& args);

}  // namespace xr::cli
