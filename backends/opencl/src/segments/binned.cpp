// binned (xr_seg_plan, then xr_seg_team in binned mode, kernels_cl/segments_team.cl): a planning
// kernel sorts the segments by length into lists for teams of 8, of 32 and of a work-group, reduced
// by one launch; longer segments become multigroup's parts.
// Over multigroup: any mix of lengths in one launch; two launches at least, the lists written and read.
#include "segment_plan.hpp"

#include <algorithm>
#include <array>
#include <string>

namespace xr::opencl::detail {
namespace {

Plan plan_offsets(const Setting& s, std::size_t L) {
  const SegmentCall& c = s.call;
  const std::array<std::int64_t, 3> limits{static_cast<std::int64_t>(policy::kBinShortLength),
                                           static_cast<std::int64_t>(policy::kBinMediumLength),
                                           static_cast<std::int64_t>(policy::kBinLongLength)};
  const Sorting sorting = sort_segments(c.layout, limits, policy::kBinPartLength);
  Plan p;
  add_sorting_steps(s, L, sorting, p);
  const unsigned segs = policy::kBinnedSegs;
  const std::array<unsigned, 3> teams{
      static_cast<unsigned>(std::min<std::size_t>(policy::kBinShortTeam, lowest_bit(L))),
      static_cast<unsigned>(std::min<std::size_t>(policy::kLanesMaxTeam, lowest_bit(L))), static_cast<unsigned>(L)};
  std::array<std::uint64_t, 4> first{};
  for (int b = 0; b < 3; ++b) {
    const std::uint64_t per_round = std::uint64_t{L / teams[b]} * segs;
    first[b + 1] = first[b] + std::min(ceil_div(sorting.listed[b], per_round), max_groups(L) / 3);
    if (sorting.listed[b]) p.depth = std::max(p.depth, team_depth(sorting.longest[b], teams[b], 1));
  }
  if (first[3] > 0) {
    TeamLaunch t;
    t.in = c.type;
    t.build = {Mode::Binned, 0, segs, 1, policy::kSegUnroll, false};
    t.team = teams[2];
    t.data = c.data;
    t.offset = c.offset;
    t.n = c.n;
    t.offsets = c.offsets;
    t.items = s.held(SegmentBuffers::Lists);
    t.count = c.layout.count;
    t.bin_team = {{teams[0], teams[1], teams[2], 0}};
    t.bin_first = {{0, static_cast<cl_uint>(first[1]), static_cast<cl_uint>(first[2]), static_cast<cl_uint>(first[3])}};
    t.bin_items = {{sorting.listed[0], sorting.listed[1], sorting.listed[2], 0}};
    t.groups = first[3];
    t.out = c.out;
    t.segments = c.layout.count;
    p.steps.push_back(team_step(s, t, L));
  }
  if (sorting.tasks) add_task_steps(s, L, sorting, p);
  p.finish = "teams of " + std::to_string(teams[0]) + ", " + std::to_string(teams[1]) + " and " + std::to_string(L) +
             (sorting.spans ? "; parts of " + std::to_string(sorting.part) + " elements, second kernel" : "");
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

const SegmentStrategy& segment_strategy_binned() {
  using Role = SegmentBuffers::Role;
  static const SegmentStrategy row{
      .order = 40,
      .name = "binned",
      .note = "a planning kernel sorts segments by length into lists for teams of 8, of 32, of a work-group, and "
              "parts of several work-groups, reduced by one launch (parts: two more): any mix of lengths; two "
              "launches at least, and the lists written and read",
      .layouts = {SegmentKind::Offsets},
      .scratch = {Role::Partials, Role::Counters, Role::Lists, Role::Tasks, Role::Spans},
      .plans_from_offsets = true,
      .plan = plan,
  };
  return row;
}

}  // namespace xr::opencl::detail
