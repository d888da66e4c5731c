// balanced (xr_seg_balanced, xr_seg_balanced_fixup, kernels_cl/segments_balanced.cl): CUDA's
// balanced in OpenCL C 1.2: equal tiles of the segments' elements, persistent work-groups each a
// run of consecutive tiles, ends marked in local memory, a work-group segmented scan, a part
// carried from tile to tile and a fix-up kernel across work-groups.
// Over binned: any mix of lengths at one rate, no planning pass; 35 KiB of local memory and a dozen barriers a tile.
#include "segment_plan.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "xreduce/error.hpp"

namespace xr::opencl::detail {
namespace {

// Local memory of xr_seg_balanced at L work-items of K elements of `elem` bytes: the end marks, the
// segment of each, the padded elements (kernels_cl/segments_balanced.cl: bal_slot) and the scan's two
// halves of values and flags.
std::uint64_t balanced_local_bytes(std::uint64_t L, unsigned K, std::size_t elem, std::size_t compute) {
  const std::uint64_t tile = L * K;
  return ceil_div(tile, 32) * 4 + tile * 4 + (tile + tile / (128 / elem) + 1) * elem + 2 * L * (compute + 4);
}

Plan plan_offsets(const Setting& s, std::size_t L_default) {
  const SegmentCall& c = s.call;
  const SegmentLayout& lay = c.layout;
  if (lay.count > kBalancedMostSegments)
    throw InvalidArgument("opencl: segment kernel balanced reduces at most " + std::to_string(kBalancedMostSegments) +
                          " segments, not " + std::to_string(lay.count));
  const std::size_t L = c.options.block_size ? L_default : std::min(L_default, policy::kBalancedWorkGroup);
  const std::size_t elem = size_of(c.type);
  unsigned K = std::min<unsigned>(policy::kBalancedMaxItems, static_cast<unsigned>(policy::kBalancedItemBytes / elem));
  const std::uint64_t room =
      s.caps.local_mem > policy::kBalancedStaticLocal ? s.caps.local_mem - policy::kBalancedStaticLocal : 0;
  while (K > 1 && balanced_local_bytes(L, K, elem, s.compute_bytes) > room) K /= 2;
  const std::uint64_t tile = std::uint64_t{L} * K;
  // The elements from the host's offsets; without them n, which bounds them (the tiles past the
  // last end hold none).
  const auto elements =
      lay.offsets ? static_cast<std::uint64_t>(lay.offsets[lay.count] - lay.offsets[0]) : c.n;
  // One tile more than whole tiles: the end of the input lies in one.
  const std::uint64_t tiles = elements / tile + 1;
  if (tiles > std::numeric_limits<std::uint32_t>::max())
    throw InvalidArgument("opencl: segment kernel balanced: " + std::to_string(elements) + " elements is too many");
  const std::uint64_t per_cu = std::max<std::uint64_t>(1, policy::kBalancedItemsPerComputeUnit / L);
  const std::uint64_t wanted = c.options.grid_size ? c.options.grid_size : s.caps.compute_units * per_cu;
  const std::uint64_t groups = std::clamp<std::uint64_t>(wanted, 1, std::min(tiles, max_groups(L)));

  Build b;
  b.mode = Mode::Offsets;
  b.pack = pack_elements(c.type);
  b.balanced = K;
  Launch st;
  st.name = "xr_seg_balanced";
  st.kernel = &segment_kernel(s, c.type, c.data, b, st.name);
  st.limit = group_limit(*st.kernel, s.caps, ceil_div(balanced_local_bytes(L, K, elem, s.compute_bytes), L));
  st.local = L;
  st.global = static_cast<std::size_t>(groups) * L;
  cl_mem carry = nullptr, carry_key = nullptr;
  if (groups > 1) {
    carry = s.scratch(SegmentBuffers::Carry, groups * s.acc_bytes);
    carry_key = s.scratch(SegmentBuffers::CarrySeg, 2 * groups * sizeof(cl_ulong));
  }
  const std::size_t vals = static_cast<std::size_t>(tile + tile / (128 / elem) + 1) * elem;
  st.args = {value_arg(c.data),
             value_arg(cl_ulong{c.offset}),
             value_arg(cl_ulong{c.n}),
             value_arg(c.offsets),
             value_arg(cl_ulong{lay.count}),
             value_arg(cl_ulong{tiles}),
             value_arg(c.out),
             value_arg(carry),
             value_arg(carry_key),
             local_arg(static_cast<std::size_t>(ceil_div(tile, 32)) * sizeof(cl_uint)),
             local_arg(static_cast<std::size_t>(tile) * sizeof(cl_uint)),
             local_arg(vals),
             local_arg(2 * L * s.compute_bytes),
             local_arg(2 * L * sizeof(cl_uint))};
  Plan p;
  p.steps.push_back(std::move(st));
  // A work-item's chain, the scan, the parts carried from tile to tile, the fix-up's chains and tree.
  const std::uint64_t spanned = ceil_div(s.max_len, tile) + 1;
  p.depth = K + ceil_log2(L) + 2 + spanned;
  p.finish = "runs of tiles of " + std::to_string(tile) + " elements, a work-group segmented scan";
  if (groups > 1) {
    Launch fix;
    fix.name = "xr_seg_balanced_fixup";
    fix.kernel = &segment_kernel(s, c.type, c.data, b, fix.name);
    fix.limit = group_limit(*fix.kernel, s.caps, s.compute_bytes);
    fix.local = L;
    fix.global = static_cast<std::size_t>(groups) * L;
    fix.args = {value_arg(carry), value_arg(carry_key), value_arg(cl_ulong{groups}), value_arg(c.out),
                local_arg(L * s.compute_bytes)};
    p.steps.push_back(std::move(fix));
    p.depth += ceil_div(std::min(spanned, groups), L) + ceil_log2(L) + 1;
    p.finish += ", parts across " + std::to_string(groups) + " work-groups combined by a fix-up kernel";
  }
  return p;
}

Plan plan(const Setting& s, std::size_t L) {
  switch (s.call.layout.kind) {
    case SegmentKind::Offsets: return plan_offsets(s, L);
    case SegmentKind::Rows:
    case SegmentKind::Columns: break;
  }
  refuse_layout(s);
}

}  // namespace

const SegmentStrategy& segment_strategy_balanced() {
  using Role = SegmentBuffers::Role;
  static const SegmentStrategy row{
      .order = 50,
      .name = "balanced",
      .note = "equal tiles of the segments' elements per work-group whatever their lengths (persistent work-groups, "
              "runs of consecutive tiles, the next tile's loads in flight), staged in local memory, each work-item's "
              "run cut at marked ends, a work-group segmented scan and a fix-up kernel for parts across work-groups: "
              "any mix of lengths at one rate; a search of the offsets per work-group, about 35 KiB of local memory "
              "per work-group, a dozen barriers per tile and 2 launches",
      .layouts = {SegmentKind::Offsets},
      .scratch = {Role::Carry, Role::CarrySeg},
      .plan = plan,
  };
  return row;
}

}  // namespace xr::opencl::detail
