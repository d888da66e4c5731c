// multigroup (xr_seg_team, kernels_cl/segments_team.cl): long segments in parts of a work-group
// each, the parts of a segment combined in order by a second launch (OpenCL 1.2's fences do not
// order memory across compute units on NVIDIA, so no last-group ticket); offsets are split by the
// planning kernel xr_seg_plan.
// Over workgroup: a few long segments fill the device; one more launch (offsets: two, with the planning kernel).
#include "segment_plan.hpp"

#include <algorithm>
#include <string>

namespace xr::opencl::detail {
namespace {

Plan plan_row_parts(const Setting& s, std::size_t L) {
  const SegmentCall& c = s.call;
  const SegmentLayout& lay = c.layout;
  const unsigned pack = pack_width(c.type, {lay.length, lay.stride, c.offset});
  const std::uint64_t units = lay.length / pack;
  const std::uint64_t most = std::max<std::uint64_t>(1, units / (L * policy::kPartMinLoadsPerItem));
  const std::uint64_t parts = std::clamp<std::uint64_t>(ceil_div(target_groups(s.caps, L), lay.count), 1, most);
  if (parts == 1) return plan_row_teams(s, L, true);
  TeamLaunch t;
  t.in = c.type;
  t.build = {Mode::RowParts, 0, 1, pack, policy::kSegUnroll, false};
  t.team = static_cast<unsigned>(L);
  t.data = c.data;
  t.offset = c.offset;
  t.n = c.n;
  t.count = lay.count;
  t.total = lay.count * parts;
  t.length = lay.length;
  t.stride = lay.stride;
  t.parts = parts;
  t.out = c.out;
  t.segments = c.layout.count;
  t.partials = s.scratch(SegmentBuffers::Partials, t.total * s.acc_bytes);
  Plan p;
  p.steps.push_back(team_step(s, t, L));
  std::uint64_t combine_depth = 0;
  p.steps.push_back(combine_step(s, L, Mode::Rows, lay.count, parts, parts, t.total, nullptr, &combine_depth));
  p.depth = team_depth(ceil_div(units, parts), t.team, pack) + combine_depth;
  p.finish = std::to_string(parts) + " parts a row, second kernel";
  return p;
}

Plan plan_offset_parts(const Setting& s, std::size_t L) {
  const std::uint64_t least = std::uint64_t{L} * policy::kSegUnroll * policy::kPartMinLoadsPerItem;
  const std::uint64_t part = std::max(least, ceil_div(s.call.n, target_groups(s.caps, L)));
  const Sorting sorting = sort_segments(s.call.layout, {-1, -1, -1}, part);
  Plan p;
  add_sorting_steps(s, L, sorting, p);
  add_task_steps(s, L, sorting, p);
  p.finish = sorting.spans ? "parts of " + std::to_string(part) + " elements, second kernel" : "one work-group";
  return p;
}

Plan plan(const Setting& s, std::size_t L) {
  switch (s.call.layout.kind) {
    case SegmentKind::Rows: return plan_row_parts(s, L);
    case SegmentKind::Offsets: return plan_offset_parts(s, L);
    case SegmentKind::Columns: break;
  }
  refuse_layout(s);
}

}  // namespace

const SegmentStrategy& segment_strategy_multigroup() {
  using Role = SegmentBuffers::Role;
  static const SegmentStrategy row{
      .order = 30,
      .name = "multigroup",
      .note = "long segments cut into parts of several work-groups each, whose partials a second kernel combines in "
              "order: a few long segments fill the device; one more launch (offsets: two, with the planning kernel)",
      .layouts = {SegmentKind::Rows, SegmentKind::Offsets},
      .scratch = {Role::Partials, Role::Counters, Role::Lists, Role::Tasks, Role::Spans},
      .plans_from_offsets = true,
      .plan = plan,
  };
  return row;
}

}  // namespace xr::opencl::detail
