// reduce_cli under an MPI launcher (mpirun -n N reduce_cli ...): each rank reduces its own part
// of the input on its own backend, and rank 0 prints one row per rank and the global result,
// checked against a reference that is itself computed distributed.
//
//   generated data (--n)   each rank makes its slice of the one global sequence from the global
//                          index, so the input is the same whatever the rank count
//   --input FILE           a regular raw or .npy file; each rank streams only its byte range
//   --share W              this rank's weight in the split (0: it holds nothing); default 1
//   --shape, --axis        a 2-D array (generated, or a .npy file) split by whole rows: each rank
//                          holds its rows; axis 1 gives each row's value, axis 0 each column's over
//                          every rank's rows (xr::mpi::Reducer::reduce_axis)
//   --segments, --offsets  CSR segments of a 1-D array split by elements, so a segment may span
//                          ranks (xr::mpi::Reducer::reduce_segments)
//
// A segmented reduction's values are gathered on rank 0, which checks them against one
// process's reference over the whole input (streamed: a file or the generated sequence is read in
// chunks, so rank 0 never holds the whole input) and writes --save-result.
//
// Every rank agrees on what is reduced (op, type, size, source, exact mode, runs) before anything
// runs, and a rank that fails makes every rank exit with its error: one line, printed by rank 0.
// MPMD works: mpirun -n 2 reduce_cli -b cuda : -n 2 reduce_cli -b omp.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>

#include "segmented.hpp"
#include "xreduce/xreduce.hpp"

namespace xr::cli {

struct DistributedJob {
  std::string backend = "auto";  // a backend name, or "auto": the first usable one on each rank
  BackendOptions device;
  RunOptions options;
  Op op = Op::Sum;
  DType type = DType::F32;             // generated data; a file's type comes from the file or --type
  std::optional<DType> file_type;      // --type with --input
  std::string input;                   // empty: generated data
  FileFormat format = FileFormat::Auto;
  std::optional<std::uint64_t> bound;  // --n with --input: at most that many elements
  std::uint64_t n = 0;                 // generated elements, over all ranks
  Dist dist = Dist::Uniform;
  std::uint64_t seed = 42;
  std::uint64_t share = 1;
  bool json = false;
  // A segmented reduction (its backends unused: each rank runs `backend`); empty: one value.
  std::optional<SegmentedArgs> segmented;
};

// A rank's command line as read before anything runs. `error`: it could not be read (a usage
// error), agreed on like any failure of make_job. `leave`: it asks for something printed instead of
// a reduction (--help); leave() prints it and returns the exit code.
struct CommandLine {
  std::exception_ptr error;
  std::function<int()> leave;
};

// Runs the job on every rank; `make_job` reads the arguments (its failure, or line.error, is
// agreed on like any other). Before anything else every rank learns whether any rank leaves
// early: then the lowest such rank prints what it was asked for (and, where other ranks asked
// for a reduction, one line saying that none runs), and every rank exits with its code. No rank
// exits alone, so none waits for one that has gone. Returns the exit code, the same on every rank.
int run_distributed(const CommandLine& line, const std::function<DistributedJob()>& make_job);

}  // namespace xr::cli
