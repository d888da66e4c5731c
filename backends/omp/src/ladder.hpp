// The OpenMP ladder as data: each rung a function over host memory, with its KernelInfo.
#pragma once

#include <cstdint>
#include <vector>

#include "xreduce/exact.hpp"
#include "xreduce/reducer.hpp"

namespace xr::omp::detail {

// What a rung computes over one piece of host memory.
struct RungValue {
  Scalar value;
  std::uint64_t rounding_depth;
  std::int64_t index = -1;  // argmin, argmax: in the piece (0 is its first element)
  Scalar maximum{};         // minmax
};

using RungFn = RungValue (*)(HostArray in, Op op, Accumulator acc, int threads);

struct Rung {
  KernelInfo info;
  RungFn fn;
  const char* finish;
};

// The ladder, in kernels() order; the rung named `name` (already checked by core).
const std::vector<Rung>& rungs();
const Rung& rung(const std::string& name);

// Exact mode (f32/f64 sums): the unrounded exact state of `in` (exact.cpp).
ExactSum::Raw exact_state(HostArray in, int threads);

}  // namespace xr::omp::detail
