// The mapped ops (sumsq, asum, nansum, nanmin, nanmax, count_nonzero) on the grid rungs and
// auto: their run functions and kernels, instantiated here rather than in rungs_grid.cu so that
// the two translation units compile in parallel.
#include "rungs_grid.cuh"

namespace xr::cuda::detail {

#define XR_GRID_MAPPED_INSTANTIATE(R) template void fill_mapped_runs<grid_family::R, all_dtypes>(RungEntry&);
XR_GRID_RUNGS(XR_GRID_MAPPED_INSTANTIATE)
#undef XR_GRID_MAPPED_INSTANTIATE

}  // namespace xr::cuda::detail
