// serial (xr_seg_serial, xr_seg_serial_fixup, xr_seg_columns_serial, kernels_cl/segments_serial.cl):
// the CPU shape: one work-item per contiguous block of the input, vload16 into 4 vector
// accumulators, dense power-of-two rows of up to 16 elements 16 rows a step, and a fix-up kernel
// for segments cut by a block's end; columns stream bands of rows into values kept in cache.
// Over the GPU strategies on a CPU device: SIMD streaming of whole blocks; on a GPU nothing coalesces.
#include "segment_plan.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace xr::opencl::detail {
namespace {

// Roundings of run_range over `len` elements: the vector accumulators' chains and combination,
// the lanes in order, the ragged end.
std::uint64_t run_depth(std::uint64_t len) {
  const std::uint64_t w = policy::kRunsVectorWidth, a = policy::kRunsAccumulators;
  return len / (w * a) + (w * a) / w + a + w + w;
}

// The first segment starting at or after element x, as the kernel finds it.
std::uint64_t first_segment(const SegmentLayout& lay, std::uint64_t x) {
  if (lay.kind == SegmentKind::Rows) return std::min(lay.count, ceil_div(x, lay.stride));
  const std::int64_t* begin = lay.offsets;
  return static_cast<std::uint64_t>(std::lower_bound(begin, begin + lay.count, static_cast<std::int64_t>(x)) - begin);
}

Plan plan_serial_segments(const Setting& s) {
  const SegmentCall& c = s.call;
  const SegmentLayout& lay = c.layout;
  const bool rows = lay.kind == SegmentKind::Rows;
  const std::uint64_t want = std::max<std::uint64_t>(1, s.caps.compute_units * policy::kSerialItemsPerComputeUnit);
  const std::uint64_t stride = rows ? std::max<std::uint64_t>(1, lay.stride) : 1;
  std::uint64_t block = 0, items = 0;
  Build b;
  b.mode = rows ? Mode::Rows : Mode::Offsets;
  if (rows && lay.count >= want) {
    // Whole rows per work-item: no row is cut.
    const std::uint64_t per_item = ceil_div(lay.count, want);
    block = per_item * stride;
    items = ceil_div(lay.count, per_item);
    if (lay.stride == lay.length && lay.length <= 16 && (lay.length & (lay.length - 1)) == 0)
      b.row_len = static_cast<unsigned>(lay.length);
  } else {
    const std::uint64_t span = rows ? (lay.count - 1) * stride + lay.length : c.n;
    block = ceil_div(span, want);
    items = ceil_div(span, block);
  }
  const std::uint64_t longest = rows ? lay.length : s.max_len;
  // Segments cut by a block's end, and the most blocks one segment reaches.
  // Offsets the host has not read may have a segment cut at any block's end.
  bool cut = !rows && !lay.offsets && items > 1;
  for (std::uint64_t w = 1; w < items && !cut; ++w) {
    const std::uint64_t lo = w * block, s0 = first_segment(lay, lo);
    if (s0 == 0) continue;
    const std::uint64_t end = rows ? (s0 - 1) * stride + lay.length : static_cast<std::uint64_t>(lay.offsets[s0]);
    cut = end > lo;
  }
  Launch st;
  st.name = "xr_seg_serial";
  st.kernel = &segment_kernel(s, c.type, c.data, b, st.name);
  st.limit = group_limit(*st.kernel, s.caps, 0);
  st.global = static_cast<std::size_t>(items);
  st.local = 1;
  cl_mem carry = s.scratch(SegmentBuffers::Carry, items * s.acc_bytes);
  cl_mem carry_seg = s.scratch(SegmentBuffers::CarrySeg, items * sizeof(cl_ulong));
  st.args = {value_arg(c.data),
             value_arg(cl_ulong{c.offset}),
             value_arg(cl_ulong{c.n}),
             value_arg(c.offsets),
             value_arg(cl_ulong{lay.count}),
             value_arg(cl_ulong{lay.length}),
             value_arg(cl_ulong{stride}),
             value_arg(cl_ulong{block}),
             value_arg(c.out),
             value_arg(carry),
             value_arg(carry_seg)};
  Plan p;
  p.steps.push_back(std::move(st));
  p.depth = (b.row_len ? ceil_log2(b.row_len) : run_depth(longest)) + (cut ? ceil_div(longest, block) + 1 : 0);
  p.finish = "one work-item";
  if (cut) {
    Launch fix;
    fix.name = "xr_seg_serial_fixup";
    fix.kernel = &segment_kernel(s, c.type, c.data, b, fix.name);
    fix.limit = group_limit(*fix.kernel, s.caps, 0);
    fix.global = static_cast<std::size_t>(items);
    fix.local = 1;
    fix.args = {value_arg(carry), value_arg(carry_seg), value_arg(cl_ulong{items}), value_arg(c.out)};
    p.steps.push_back(std::move(fix));
    p.finish = "blocks of " + std::to_string(block) + " elements, fix-up kernel";
  }
  return p;
}

// Columns on a CPU device: xr_seg_columns_serial over bands x blocks of columns.
Launch columns_serial_step(const Setting& s, DType in, cl_mem data, std::uint64_t offset, std::uint64_t rows,
                           std::uint64_t cols, std::uint64_t stride, std::uint64_t bands_wanted, std::uint64_t* bands,
                           std::uint64_t* depth) {
  Build b;
  if (stride == cols && policy::kRunsVectorWidth % cols == 0) b.narrow = static_cast<unsigned>(cols);
  const std::uint64_t block_cols = b.narrow ? cols : std::min<std::uint64_t>(cols, policy::kCpuColumnBlock);
  const std::uint64_t blocks = ceil_div(cols, block_cols);
  const std::uint64_t band_rows = ceil_div(rows, std::max<std::uint64_t>(1, bands_wanted));
  *bands = ceil_div(rows, band_rows);
  *depth = band_rows + (b.narrow ? policy::kRunsVectorWidth / b.narrow + band_rows % policy::kRunsVectorWidth : 0);
  Launch st;
  st.name = "xr_seg_columns_serial";
  st.kernel = &segment_kernel(s, in, data, b, st.name);
  st.limit = group_limit(*st.kernel, s.caps, 0);
  st.local = 1;
  st.global = static_cast<std::size_t>(std::min(blocks * *bands, max_groups(1)));
  cl_mem partials = *bands > 1 ? s.scratch(SegmentBuffers::Partials, *bands * cols * s.acc_bytes) : nullptr;
  st.args = {value_arg(data),
             value_arg(cl_ulong{offset}),
             value_arg(cl_ulong{rows}),
             value_arg(cl_ulong{cols}),
             value_arg(cl_ulong{stride}),
             value_arg(cl_ulong{band_rows}),
             value_arg(cl_ulong{*bands}),
             value_arg(cl_ulong{block_cols}),
             value_arg(s.call.out),
             value_arg(partials)};
  return st;
}

Plan plan_serial_columns(const Setting& s) {
  const SegmentCall& c = s.call;
  const SegmentLayout& lay = c.layout;
  const std::uint64_t rows = lay.length, cols = lay.count;
  const std::uint64_t want = std::max<std::uint64_t>(1, s.caps.compute_units * policy::kSerialItemsPerComputeUnit);
  const bool narrow = lay.stride == cols && policy::kRunsVectorWidth % cols == 0;
  const std::uint64_t blocks = narrow ? 1 : ceil_div(cols, std::min<std::uint64_t>(cols, policy::kCpuColumnBlock));
  Plan p;
  std::uint64_t bands = 1, depth = 0;
  p.steps.push_back(
      columns_serial_step(s, c.type, c.data, c.offset, rows, cols, lay.stride, ceil_div(want, blocks), &bands, &depth));
  p.depth = depth;
  p.finish = "one band";
  if (bands > 1) {
    std::uint64_t one = 1, combine_depth = 0;
    p.steps.push_back(columns_serial_step(s, s.acc, s.held(SegmentBuffers::Partials), 0, bands, cols, cols, 1,
                                          &one, &combine_depth));
    p.depth += combine_depth;
    p.finish = std::to_string(bands) + " row bands, second kernel";
  }
  return p;
}

Plan plan(const Setting& s, std::size_t) {
  switch (s.call.layout.kind) {
    case SegmentKind::Rows:
    case SegmentKind::Offsets: return plan_serial_segments(s);
    case SegmentKind::Columns: return plan_serial_columns(s);
  }
  refuse_layout(s);
}

}  // namespace

const SegmentStrategy& segment_strategy_serial() {
  using Role = SegmentBuffers::Role;
  static const SegmentStrategy row{
      .order = 70,
      .name = "serial",
      .note = "CPU shape: one work-item per contiguous block, vector accumulators over each segment (short dense rows: "
              "16 rows a step), a segment cut by a block's end finished by a fix-up kernel; columns: a band of rows "
              "into values kept in cache; on a GPU nothing coalesces",
      .layouts = {SegmentKind::Rows, SegmentKind::Columns, SegmentKind::Offsets},
      .one_item_groups = true,
      .scratch = {Role::Carry, Role::CarrySeg, Role::Partials},
      .plan = plan,
  };
  return row;
}

}  // namespace xr::opencl::detail
