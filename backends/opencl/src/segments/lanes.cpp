// lanes (xr_seg_team, kernels_cl/segments_team.cl): a team of G work-items per segment, G a power
// of two up to 32 from the mean length, several segments a team.
// Over one work-item per segment: short segments without idle work-items; a long one holds its team alone.
#include "segment_plan.hpp"

namespace xr::opencl::detail {
namespace {

Plan plan(const Setting& s, std::size_t L) {
  switch (s.call.layout.kind) {
    case SegmentKind::Rows: return plan_row_teams(s, L, false);
    case SegmentKind::Offsets: return plan_offset_teams(s, L, false);
    case SegmentKind::Columns: break;
  }
  refuse_layout(s);
}

}  // namespace

const SegmentStrategy& segment_strategy_lanes() {
  static const SegmentStrategy row{
      .order = 10,
      .name = "lanes",
      .note = "a team of G work-items per segment (a power of two up to 32, about 4 loads a lane), several segments "
              "per team, coalesced (vector loads on aligned rows), combined in local memory: short segments without "
              "idle work-items; a long segment holds its team alone",
      .layouts = {SegmentKind::Rows, SegmentKind::Offsets},
      .scratch = {},
      .plan = plan,
  };
  return row;
}

}  // namespace xr::opencl::detail
