// pairs (xr_seg_pairs, xr_seg_pair_columns, kernels_cl/pairs_segments.cl): argmin, argmax and
// minmax per segment with pairs.cl's records: a work-group per row or segment, a work-item per
// column of a C-order matrix (Fortran columns are rows here).
// The one strategy for the pair ops: index-and-value records in one launch; no vector loads, and
// a work-group per segment whatever its length.
#include <algorithm>
#include <bit>
#include <string>
#include <utility>

#include "segment_plan.hpp"

namespace xr::opencl::detail {
namespace {

// The program of the pair kernels: reduce.cl, pairs.cl, pairs_segments.cl.
constexpr const char* kPairSegmentsSource = "reduce.cl+pairs.cl+pairs_segments.cl";

CachedKernel& pair_kernel(const Setting& s, const char* name) {
  const SegmentCall& c = s.call;
  const std::string options = program_options(c.type, c.type, pair_fold(c.op), 1, Tree::Sequential, Finish::Partials) +
                              pair_options(c.type, c.op);
  return cached_kernel(s.context, s.caps.device, kPairSegmentsSource, options, name);
}

Plan plan(const Setting& s, std::size_t L) {
  const SegmentCall& c = s.call;
  const SegmentLayout& lay = c.layout;
  Launch st;
  Plan p;
  if (lay.kind == SegmentKind::Columns) {
    st.name = "xr_seg_pair_columns";
    st.kernel = &pair_kernel(s, st.name);
    st.limit = group_limit(*st.kernel, s.caps, 0);
    st.local = L;
    st.global = static_cast<std::size_t>(std::min(ceil_div(lay.count, L), max_groups(L))) * L;
    st.args = {value_arg(c.data),        value_arg(cl_ulong{c.offset}),   value_arg(cl_ulong{lay.length}),
               value_arg(cl_ulong{lay.count}), value_arg(cl_ulong{lay.stride}), value_arg(c.out)};
    p.finish = "one work-item per column";
  } else {
    const bool by_offsets = lay.kind == SegmentKind::Offsets;
    // A work-group no wider than the mean segment (at least 32 work-items) unless one was asked for.
    const double mean = by_offsets ? s.mean_len : static_cast<double>(lay.length);
    std::size_t local = L;
    if (!c.options.block_size)
      local = std::min(L, std::max<std::size_t>(std::min<std::size_t>(32, L), std::bit_ceil(static_cast<std::size_t>(mean))));
    st.name = "xr_seg_pairs";
    st.kernel = &pair_kernel(s, st.name);
    st.limit = group_limit(*st.kernel, s.caps, kPairLocalBytes);
    st.local = local;
    st.global = static_cast<std::size_t>(std::min(lay.count, max_groups(local))) * local;
    st.args = {value_arg(c.data),
               value_arg(cl_ulong{c.offset}),
               value_arg(cl_ulong{c.n}),
               value_arg(c.offsets),
               value_arg(cl_uint{by_offsets ? 1u : 0u}),
               value_arg(cl_ulong{lay.count}),
               value_arg(cl_ulong{lay.length}),
               value_arg(cl_ulong{lay.stride}),
               value_arg(c.out),
               local_arg(local * kPairLocalBytes)};
    p.finish = "one work-group per segment, local tree";
  }
  p.steps.push_back(std::move(st));
  return p;
}

}  // namespace

const SegmentStrategy& segment_strategy_pairs() {
  static const SegmentStrategy row{
      .order = 80,
      .name = "pairs",
      .note = "argmin, argmax, minmax: a work-group per row or segment, elements in index order and a local tree of "
              "value-and-index records, a work-item per column: one launch; no vector loads, a work-group per "
              "segment whatever its length",
      .layouts = {SegmentKind::Rows, SegmentKind::Columns, SegmentKind::Offsets},
      .scratch = {},
      .pair_ops = true,
      .plan = plan,
  };
  return row;
}

}  // namespace xr::opencl::detail
