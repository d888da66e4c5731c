// auto: chooses a strategy by layout and shape (policy.hpp) and runs its plan.
// Rows by length, offsets by their lengths on the host, columns by columns, the pair ops by pairs;
// the choice costs host statistics of the offsets and one more occupancy query.
#include <algorithm>

#include "arith.hpp"
#include "policy.hpp"
#include "segment_families.cuh"

namespace xr::cuda::detail {
namespace {

// Rows (or segments) all of `length` elements, `segments` of them: subwarp up to
// kSubwarpMaxPacks packs, warp up to kWarpMaxBytes, block while there are enough segments to
// fill the device or too few chunks to split, multiblock beyond.
const Strategy& by_length(const Task& t, u64 length, u64 segments) {
  if (xr::detail::ceil_div(length, t.pack()) <= policy::kSubwarpMaxPacks) return strategy_subwarp();
  if (length * t.elem() <= policy::kWarpMaxBytes) return strategy_warp();
  if (segments >= block_resident_blocks(t) || length * t.elem() < 2 * policy::kSegmentChunkBytes)
    return strategy_block();
  return strategy_multiblock();
}

// Offsets: one bin's strategy when every segment falls in it, else one whose rate does not
// depend on the lengths: balanced (H100, 2^20 segments of lognormal lengths, mean 64, f32:
// balanced 2353-2379 GB/s in 2 launches, binned 1026-1032 in 4, subwarp 1121-1125, warp 817-821);
// binned where the block is too large for balanced. Unknown lengths count as mixed.
const Strategy& by_bins(const Task& t) {
  const LengthStats& s = t.stats;
  const Strategy& mixed = t.block <= policy::kBalancedMaxBlock ? strategy_balanced() : strategy_binned();
  if (!s.known) return mixed;
  const auto used = std::count_if(s.bins.begin(), s.bins.end(), [](u64 c) { return c > 0; });
  if (used > 1) return mixed;
  if (s.bins[0] == t.count) return strategy_subwarp();
  if (s.bins[1] == t.count) return strategy_warp();
  if (s.bins[2] == t.count) return t.count >= block_resident_blocks(t) ? strategy_block() : strategy_multiblock();
  return strategy_multiblock();
}

const Strategy& choose(const Task& t) {
  if (is_pair(t.op)) return strategy_pairs();
  switch (t.kind) {
    case SegmentKind::Rows: return by_length(t, t.length, t.count);
    case SegmentKind::Offsets: return by_bins(t);
    case SegmentKind::Columns: return strategy_columns();
  }
  layout_not_reduced("auto", t.kind);
}

Plan plan(const Task& t) {
  Plan p = choose(t).plan(t);
  p.kernel = "auto:" + p.kernel;
  return p;
}

}  // namespace

const Strategy& strategy_auto() {
  static const Strategy s = [] {
    Strategy x{0,
               strategy_info("auto", KernelKind::Auto, {SegmentKind::Rows, SegmentKind::Columns, SegmentKind::Offsets},
                             segment_blocks(512),
                             "chooses by layout and shape: rows by length, offsets balanced or the one strategy that "
                             "suits every segment, columns by columns; pairs for argmin, argmax, minmax"),
               &plan};
    x.info.ops.assign(all_ops.begin(), all_ops.end());
    return x;
  }();
  return s;
}

}  // namespace xr::cuda::detail
