// reduce_cli's segmented mode: rows or columns of a 2-D array (--shape, a 2-D .npy) or the
// segments of a 1-D one (--segments, --offsets), every value checked against the host reference.
#pragma once

#include <cstdint>
#include <memory>
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

// What a segmented reduction reduces, before any element is read: its layout, and its elements
// as a source (a file, or the generated sequence, which GeneratedSource makes slice by slice).
// Every argument is checked here, and the offsets against the input's size.
struct SegmentedInput {
  std::unique_ptr<ChunkSource> source;  // the whole input
  bool generated = false;               // source makes `generate`'s values; else it reads a file
  MatrixShape shape;                    // rows and columns, by axis
  int axis = 1;
  SegmentLayout layout;                 // Offsets: layout.offsets points into offsets
  std::vector<std::int64_t> offsets;
  std::string what;                     // "4x4 C array (uniform, seed 42), axis 1: 4 values"
};
SegmentedInput plan_segmented(const SegmentedArgs& args);

// The chunk the reference reads a file by: --chunk's (its limits checked), else 64 MiB.
std::uint64_t reference_chunk_bytes(const RunOptions& options, DType type);

// --save-result: the values as .npy (by the name) or raw bytes.
void save_values(const std::string& path, const SegmentedResult& result);

// The first three values, as the tables show them: argmin and argmax value@index, minmax min..max.
std::string first_values(const SegmentedResult& result);

// True when the arguments ask for a segmented reduction.
bool segmented_requested(const std::string& shape, const std::string& segments, const std::string& offsets,
                         bool axis_given);

// Runs it; returns the exit code (kAgree, kDisagree). Throws for bad arguments.
int run_segmented(const SegmentedArgs& args);

}  // namespace xr::cli
