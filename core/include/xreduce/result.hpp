// What a reduction returns: the value and how it was obtained.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "xreduce/exact.hpp"
#include "xreduce/types.hpp"

namespace xr {

struct Result {
  Scalar value;                 // of type result_dtype(op, type, accumulator); minmax: the min
  std::int64_t index = -1;      // argmin, argmax: the index of value's first occurrence; else -1
  Scalar maximum;               // minmax: the max, of the input type; unset (I64 0) otherwise
  std::uint64_t n = 0;          // elements reduced
  Op op = Op::Sum;
  DType type = DType::F32;      // input element type
  std::string backend;          // "cuda", "opencl", "omp"
  std::string device;           // the device's name as its API reports it
  std::string kernel;           // the rung that ran ("auto" resolves to "auto:<rung>")
  std::string finish;           // how partial results were combined ("atom_add", "second pass", ...)
  int launches = 0;             // kernel launches (or parallel regions) of one reduction
  int repeats = 0;              // timed repetitions behind the medians below
  double kernel_ms = 0;         // median device time of one reduction, no transfers
  double transfer_ms = 0;       // median host<->device copy time of one reduction (streamed: of
                                // the copies, most of which overlap kernels)
  // Streamed inputs (HostPath::Stream, Reducer::reduce(ChunkSource&)): the median end-to-end time
  // of one reduction, from host data (or the file) to the value on the host; 0 otherwise.
  double total_ms = 0;
  double bytes_per_s = 0;       // input bytes read once / total_ms when streamed, else / kernel_ms
  std::uint64_t chunks = 1;     // pieces the input went through (1: whole)
  std::string path;             // how host data reached the device: "resident", "stream: ...", "in place"
  // Longest chain of roundings any input passes through on the way to the result (sequential
  // run per thread + tree depth + passes). Float sums then satisfy
  // |value - exact| <= rounding_depth * u * sum|x| (u = unit roundoff), to first order.
  std::uint64_t rounding_depth = 0;
  // Exact mode (RunOptions::exact on an f32/f64 sum): the exact sum before its one rounding, a
  // normalised ExactSum state. States of disjoint inputs merge (ExactSum::merge_raw) into the
  // state of their union, whatever the order: xr::mpi combines ranks' sums with it.
  std::optional<ExactSum::Raw> exact_state;
  // A mapped op with a last step (Finalize: mean): its fold's value before that step (the sum),
  // of the same type as value. Results of disjoint inputs combine by it (xr::mpi), then take the
  // step again over their total count. Unset (I64 0) for every other op.
  Scalar folded;
};

}  // namespace xr
