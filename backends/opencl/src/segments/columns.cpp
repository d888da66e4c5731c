// columns (xr_seg_columns, kernels_cl/segments_columns.cl): a work-group covers a block of
// columns and a band of rows, neighbouring work-items on neighbouring columns; a second launch of
// the same kernel combines the bands.
// Over lanes on a strided gather: coalesced at any width; one partial per band and column.
#include "segment_plan.hpp"

#include <algorithm>
#include <string>

namespace xr::opencl::detail {
namespace {

// Columns: a work-group of W units (at most `width`) by L / W row lanes per block and band.
Launch columns_step(const Setting& s, DType in, cl_mem data, std::uint64_t offset, std::uint64_t rows,
                    std::uint64_t cols, std::uint64_t stride, std::size_t L, std::uint64_t width, unsigned pack,
                    std::uint64_t bands_wanted, std::uint64_t* bands, std::uint64_t* depth) {
  const std::uint64_t units = cols / pack;
  const std::uint64_t W = std::min<std::uint64_t>({units, L, width});
  const std::uint64_t lanes = L / W;
  const std::uint64_t blocks = ceil_div(units, W);
  std::uint64_t band_rows = std::max(lanes * policy::kColumnsMinRowsPerItem, ceil_div(rows, bands_wanted));
  band_rows = std::min(ceil_div(band_rows, lanes) * lanes, rows);
  *bands = ceil_div(rows, band_rows);
  *depth = ceil_div(band_rows, lanes) + ceil_log2(lanes);
  Launch st;
  st.name = "xr_seg_columns";
  Build b;
  b.pack = pack;
  st.kernel = &segment_kernel(s, in, data, b, st.name);
  const std::size_t scratch = pack * s.compute_bytes;
  st.limit = group_limit(*st.kernel, s.caps, scratch);
  // A CPU device takes the whole L, its last L % W work-items idle (the kernel's lanes are L / W):
  // PoCL compiles a kernel for each work-group size, and W * lanes varies with the column count.
  st.local = s.caps.is_cpu() ? L : static_cast<std::size_t>(W * lanes);
  st.global = static_cast<std::size_t>(std::min(blocks * *bands, max_groups(st.local))) * st.local;
  cl_mem partials = *bands > 1 ? s.scratch(SegmentBuffers::Partials, *bands * cols * s.acc_bytes) : nullptr;
  st.args = {value_arg(data),
             value_arg(cl_ulong{offset}),
             value_arg(cl_ulong{rows}),
             value_arg(cl_ulong{cols}),
             value_arg(cl_ulong{stride}),
             value_arg(static_cast<cl_uint>(W)),
             value_arg(cl_ulong{band_rows}),
             value_arg(cl_ulong{*bands}),
             value_arg(s.call.out),
             value_arg(partials),
             local_arg(st.local * scratch)};
  return st;
}

Plan plan_columns(const Setting& s, std::size_t L) {
  const SegmentCall& c = s.call;
  const SegmentLayout& lay = c.layout;
  const std::uint64_t rows = lay.length, cols = lay.count;
  const unsigned pack = pack_width(c.type, {cols, lay.stride, c.offset});
  const std::uint64_t blocks = ceil_div(cols / pack, std::min<std::uint64_t>(cols / pack, L));
  const std::uint64_t bands_wanted = std::max<std::uint64_t>(1, target_groups(s.caps, L) / blocks);
  Plan p;
  std::uint64_t bands = 1, depth = 0;
  p.steps.push_back(
      columns_step(s, c.type, c.data, c.offset, rows, cols, lay.stride, L, L, pack, bands_wanted, &bands, &depth));
  p.depth = depth;
  p.finish = "one band";
  if (bands > 1) {
    std::uint64_t one = 1, combine_depth = 0;
    // As many row lanes as bands, at most L / kColumnsCombineWidth of them.
    const std::uint64_t width = std::max<std::uint64_t>(policy::kColumnsCombineWidth, L / bands);
    p.steps.push_back(columns_step(s, s.acc, s.held(SegmentBuffers::Partials), 0, bands, cols, cols, L, width,
                                   pack_width(s.acc, {cols}), 1, &one, &combine_depth));
    p.depth += combine_depth;
    p.finish = std::to_string(bands) + " row bands, second kernel";
  }
  return p;
}

Plan plan(const Setting& s, std::size_t L) {
  switch (s.call.layout.kind) {
    case SegmentKind::Columns: return plan_columns(s, L);
    case SegmentKind::Rows:
    case SegmentKind::Offsets: break;
  }
  refuse_layout(s);
}

}  // namespace

const SegmentStrategy& segment_strategy_columns() {
  static const SegmentStrategy row{
      .order = 60,
      .name = "columns",
      .note = "a work-group per block of columns and band of rows, neighbouring work-items on neighbouring columns "
              "(narrow matrices: several rows per work-group), bands combined by a second kernel: coalesced at any "
              "width; one partial per band and column",
      .layouts = {SegmentKind::Columns},
      .scratch = {SegmentBuffers::Partials},
      .plan = plan,
  };
  return row;
}

}  // namespace xr::opencl::detail
