// Rungs 7-12 and auto: a fixed grid striding over the input. cascade and shuffle leave one
// partial per block (second pass with one block); vector adds 128-bit loads; single_pass and
// auto finish in the same launch; dynamic_tiles deals the input out at run time; bulk_copy
// lets the copy engine load it. The rungs themselves: rungs_grid.cuh.
#include "rungs_grid.cuh"

namespace xr::cuda::detail {

using namespace grid_family;

std::vector<RungEntry> grid_rungs() {
  const BlockRule warps{32, 1024, 32, {}};
  return {
      make_entry<Cascade>(
          "grid-stride loop on a fixed grid (SMs x occupancy), many elements per thread; scalar loads, shared tree",
          KernelKind::Rung, 256, warps),
      make_entry<Shuffle>(
          "warp shuffles replace the shared-memory tree inside warps; loads still 4/8 bytes, second launch",
          KernelKind::Rung, 256, warps),
      make_entry<Vector>(
          "128-bit loads, 4 per thread in flight, misaligned head/tail handled; still a second launch for partials",
          KernelKind::Rung, 256, warps),
      make_entry<SinglePass>(
          "one launch: the blocks' partials meet in one block (published slots or a ticket); serial finish",
          KernelKind::Rung, 256, warps),
      make_entry<DynamicTiles>(
          "blocks draw 256 KB tiles from a counter, so fast SMs take more (no idle SMs at the end); a block reduce per tile",
          KernelKind::Rung, 256, warps),
      make_entry<BulkCopy>(
          "the copy engine streams 16 KB stages into shared memory (sm_90 bulk copies), no loads in flight in registers; static segments",
          KernelKind::Rung, 256, warps),
      make_entry<BulkTiles>(
          "bulk_copy's ring fed with tiles drawn from a counter, so fast SMs take more; a block reduce per tile",
          KernelKind::Rung, 256, warps),
  };
}

RungEntry auto_rung() {
  RungEntry e = make_entry<Auto>(
      "single_pass sized for n (>= 4 packs per thread); from 64 MB block segments, from 1 GiB dynamic_tiles; bulk_copy from 64 MB on HBM >= 4 TB/s",
      KernelKind::Auto, 256, BlockRule{32, 1024, 32, {}});
  e.info.exact = true;  // RunOptions::exact runs cu_exact (exact_sum.cu), block sizes up to 512
  add_pair_runs(e);
  return e;
}

}  // namespace xr::cuda::detail
