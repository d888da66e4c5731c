// block: one block per segment (k_block, what DeviceSegmentedReduce does), 4 packs in flight a thread.
// Over warp: segments of thousands of elements; fewer segments than resident blocks leave SMs idle.
#include "segment_families.cuh"

namespace xr::cuda::detail {
namespace {

Plan plan(const Task& t) {
  Plan p;
  p.kernel = "block";
  p.launches = 1;
  p.finish = "one block per segment";
  if (t.stats.known) p.depth = block_depth(t.stats.longest, t.block, t.pack());
  p.pass.push_back(block_launch(t));
  return p;
}

}  // namespace

const Strategy& strategy_block() {
  static const Strategy s{
      30,
      strategy_info("block", KernelKind::Rung, {SegmentKind::Rows, SegmentKind::Offsets}, segment_blocks(1024),
                    "one block per segment, 16-byte loads, 4 in flight per thread: segments of thousands of "
                    "elements; fewer segments than resident blocks leave SMs idle"),
      &plan};
  return s;
}

}  // namespace xr::cuda::detail
