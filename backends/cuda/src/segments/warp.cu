// warp: one warp per segment (k_group of 32 lanes), 16-byte loads, 4 segments in flight.
// Over subwarp: coalesced runs of hundreds of elements; segments shorter than 32 packs leave lanes idle.
#include "segment_families.cuh"

namespace xr::cuda::detail {
namespace {

Plan plan(const Task& t) {
  Plan p;
  p.kernel = "warp";
  p.launches = 1;
  p.finish = "warp shuffles";
  if (t.stats.known) p.depth = group_depth(t.stats.longest, 5, t.pack());
  p.pass.push_back(group_launch(t, 5));
  return p;
}

}  // namespace

const Strategy& strategy_warp() {
  static const Strategy s{
      20,
      strategy_info("warp", KernelKind::Rung, {SegmentKind::Rows, SegmentKind::Offsets}, segment_blocks(512),
                    "one warp per segment, 16-byte loads, 4 segments in flight: coalesced runs of hundreds of "
                    "elements; segments shorter than 32 packs leave lanes idle"),
      &plan};
  return s;
}

}  // namespace xr::cuda::detail
