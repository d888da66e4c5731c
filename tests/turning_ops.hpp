// Each type with one fold (what segmented reductions take), the fold turning with the type's place and `turn`: suites whose kernels
// compile at run time (OpenCL on a CPU: about 0.5 s a kernel in PoCL) call it with a turn that
// changes with the shape, case or strategy, so that every op still meets every type, shape and
// strategy at a quarter of the kernel builds of the whole product.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "xreduce/types.hpp"

namespace xr_test {

inline std::vector<std::pair<xr::DType, xr::Op>> turning_ops(const std::vector<xr::DType>& types, std::size_t turn) {
  std::vector<std::pair<xr::DType, xr::Op>> out;
  for (std::size_t i = 0; i < types.size(); ++i) out.emplace_back(types[i], xr::fold_ops[(i + turn) % xr::kFoldCount]);
  return out;
}

}  // namespace xr_test
