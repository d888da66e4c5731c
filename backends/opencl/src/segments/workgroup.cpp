// workgroup (xr_seg_team, kernels_cl/segments_team.cl): one work-group per segment.
// Over lanes: long segments at full width; short ones leave the group idle, few segments the device.
#include "segment_plan.hpp"

namespace xr::opencl::detail {
namespace {

Plan plan(const Setting& s, std::size_t L) {
  switch (s.call.layout.kind) {
    case SegmentKind::Rows: return plan_row_teams(s, L, true);
    case SegmentKind::Offsets: return plan_offset_teams(s, L, true);
    case SegmentKind::Columns: break;
  }
  refuse_layout(s);
}

}  // namespace

const SegmentStrategy& segment_strategy_workgroup() {
  static const SegmentStrategy row{
      .order = 20,
      .name = "workgroup",
      .note = "one work-group per segment, each work-item reading every L-th load: long segments at full width; "
              "short ones leave the group idle, and fewer segments than work-groups the device holds leave it idle",
      .layouts = {SegmentKind::Rows, SegmentKind::Offsets},
      .scratch = {},
      .plan = plan,
  };
  return row;
}

}  // namespace xr::opencl::detail
