// What a reduction returns: the value and how it was obtained.
#pragma once

#include <cstdint>
#include <string>

#include "xreduce/types.hpp"

namespace xr {

struct Result {
  Scalar value;                 // of type result_dtype(op, type, accumulator)
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
  double transfer_ms = 0;       // median host<->device copy time of one reduction
  double bytes_per_s = 0;       // input bytes read once / kernel_ms
  // Longest chain of roundings any input passes through on the way to the result (sequential
  // run per thread + tree depth + passes). Float sums then satisfy
  // |value - exact| <= rounding_depth * u * sum|x| (u = unit roundoff), to first order.
  std::uint64_t rounding_depth = 0;
};

}  // namespace xr
