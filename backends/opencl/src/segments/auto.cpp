// auto: a strategy by device type, layout and shape (policy.hpp gives the thresholds and the
// figures behind them): serial on CPU devices; on GPUs columns for columns, lanes for rows up to
// kAutoLanesMaxUnits loads, then workgroup or multigroup, and for offsets lanes while the lengths
// are even and short enough, else balanced (also for offsets the host has not read).
#include "policy.hpp"
#include "segment_plan.hpp"
#include "segment_strategies.hpp"

namespace xr::opencl::detail {
namespace {

const SegmentStrategy& choose(const Setting& s, std::size_t L) {
  const SegmentLayout& lay = s.call.layout;
  if (is_pair(s.call.op)) return segment_strategy_pairs();
  if (s.caps.is_cpu()) return segment_strategy_serial();
  switch (lay.kind) {
    case SegmentKind::Columns:
      return segment_strategy_columns();
    case SegmentKind::Rows: {
      const unsigned pack = pack_width(s.call.type, {lay.length, lay.stride, s.call.offset});
      if (lay.length / pack <= policy::kAutoLanesMaxUnits) return segment_strategy_lanes();
      return lay.count >= target_groups(s.caps, L) ? segment_strategy_workgroup() : segment_strategy_multigroup();
    }
    case SegmentKind::Offsets: {
      // Lanes while the lengths are about even and no segment holds its team too long; else
      // balanced, whatever the mix.
      const bool balanceable = lay.count <= kBalancedMostSegments;
      if (!lay.offsets) return balanceable ? segment_strategy_balanced() : segment_strategy_lanes();
      const TeamShape shape = team_shape(s.mean_len, size_of(s.call.type), L, policy::kLanesMaxTeam, false, false);
      const std::uint64_t rounds = ceil_div(s.max_len, std::uint64_t{shape.team} * policy::kSegUnroll);
      const bool even = static_cast<double>(s.max_len) <= static_cast<double>(policy::kAutoLanesMaxSpread) * s.mean_len;
      return (even && rounds <= policy::kAutoLanesMaxRounds) || !balanceable ? segment_strategy_lanes()
                                                                              : segment_strategy_balanced();
    }
  }
  refuse_layout(s);
}

}  // namespace

const SegmentStrategy& segment_strategy_auto() {
  static const SegmentStrategy row{
      .order = 0,
      .name = "auto",
      .note = "GPUs: rows: lanes up to 256 loads a row, then workgroup, multigroup when fewer rows than fill the "
              "device; offsets: lanes while the longest segment is at most 4 times the mean and would not hold its "
              "team too long, else balanced; columns: columns. CPU devices: serial. argmin, argmax, minmax: pairs",
      .layouts = {SegmentKind::Rows, SegmentKind::Columns, SegmentKind::Offsets},
      .scratch = {},
      .plan = nullptr,
      .choose = choose,
  };
  return row;
}

}  // namespace xr::opencl::detail
