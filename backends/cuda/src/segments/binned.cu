// binned: segments sorted by length into bins on the device (k_classify), one launch per bin:
// groups of 8 lanes, warps, blocks, multiblock chunks (segment_families.cu).
// Over multiblock: mixed lengths each get their strategy; a classification pass and bin lists cost 12 bytes a segment.
#include <algorithm>
#include <string>

#include "arith.hpp"
#include "segment_families.cuh"

namespace xr::cuda::detail {
namespace {

Plan plan(const Task& t) {
  switch (t.kind) {
    case SegmentKind::Offsets: break;
    case SegmentKind::Rows:
    case SegmentKind::Columns: layout_not_reduced("binned", t.kind);
  }
  const LengthStats& stats = t.stats;
  BinnedPass b;
  b.limits = bin_limits(t.type);
  b.chunk = segment_chunk(t);
  b.block = t.block;
  if (stats.known)
    for (unsigned k = 0; k < 4; ++k) b.used[k] = stats.bins[k] > 0;
  // Room for a window's entries in each bin in use: valid offsets, where known, tell how many.
  const u64 window = std::min(t.count, kBinWindow);
  for (unsigned k = 0; k < 4; ++k) b.room[k] = !b.used[k] ? 0 : stats.known ? std::min(window, stats.bins[k]) : window;

  Plan p;
  p.kernel = "binned";
  const int used = static_cast<int>(std::count(b.used.begin(), b.used.end(), true));
  p.launches = static_cast<int>(xr::detail::ceil_div(t.count, kBinWindow)) * (1 + used);
  p.finish = "binned by length: groups of " + std::to_string(1u << policy::kTinyBinLogLanes) +
             " lanes, warps, blocks, last block of each long segment";
  if (stats.known) {
    const unsigned pack = t.pack();
    const u64 longest = stats.longest;
    const u64 tiny = std::min(longest, b.limits[0]), shorter = std::min(longest, b.limits[1]);
    const u64 medium = std::min(longest, b.limits[2]);
    p.depth = std::max({b.used[0] ? group_depth(tiny, policy::kTinyBinLogLanes, pack) : 0,
                        b.used[1] ? group_depth(shorter, 5, pack) : 0,
                        b.used[2] ? block_depth(medium, t.block, pack) : 0,
                        b.used[3] ? multiblock_depth(longest, b.chunk, t.block, pack) : 0});
  }
  p.pass = binned_launches(t, b);
  return p;
}

}  // namespace

const Strategy& strategy_binned() {
  static const Strategy s{
      50,
      strategy_info("binned", KernelKind::Rung, {SegmentKind::Offsets}, segment_blocks(512),
                    "segments binned by length on the device, one launch per bin (subwarp, warp, block, multiblock): "
                    "mixed lengths each get their strategy; a classification pass and bin lists cost 12 bytes a "
                    "segment"),
      &plan};
  return s;
}

}  // namespace xr::cuda::detail
