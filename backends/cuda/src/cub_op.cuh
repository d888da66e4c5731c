// xreduce's op as a CUB reduction functor: core's OpFn, so min and max propagate NaN exactly as
// every kernel of xreduce does. The cub baselines (cub_baseline.cu, segments_cub.cu) use it.
#pragma once

#include "xreduce/semantics.hpp"

namespace xr::cuda::detail {

template <class Acc, Op O> struct CubOp {
  __host__ __device__ Acc operator()(const Acc& a, const Acc& b) const { return OpFn<O>::apply(a, b); }
};

}  // namespace xr::cuda::detail
