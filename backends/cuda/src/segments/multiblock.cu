// multiblock: 64 KiB chunks of a segment on as many blocks (k_multiblock), the last block of each
// segment combining its chunks in order in the same launch; offsets are classified first.
// Over block: a few long segments fill the GPU; a partial and a ticket per chunk.
#include <algorithm>
#include <climits>

#include "arith.hpp"
#include "segment_families.cuh"

namespace xr::cuda::detail {
namespace {

// Rows: every row in chunks, one block each.
void plan_rows(Plan& p, const Task& t, u64 chunk) {
  const u64 per_row = std::max<u64>(1, xr::detail::ceil_div(t.length, chunk));
  const u64 grid = std::clamp<u64>(t.count * per_row, 1, INT_MAX);
  p.launches = 1;
  void* partials = nullptr;
  unsigned* tickets = nullptr;
  if (per_row > 1) {
    partials = t.scratch->buffer(SegmentScratch::Partials, t.count * per_row * t.result_size());
    tickets = t.scratch->tickets(t.count);
  }
  const ks::RowChunks chunks{rows_source(t), chunk, per_row};
  const MultiblockArgs<ks::RowChunks> args{t.in, chunks, t.out, partials, tickets, shape_of(t, grid, t.block)};
  p.pass.push_back(step_of(multiblock_rows(), t, args));
}

// Offsets: every segment in binned's long bin, so its chunks are counted on the device.
void plan_offsets(Plan& p, const Task& t, u64 chunk) {
  BinnedPass b;
  b.used = {false, false, false, true};
  b.limits = {0, 0, 0};
  b.room = {0, 0, 0, std::min(t.count, kBinWindow)};
  b.chunk = chunk;
  b.block = t.block;
  p.launches = static_cast<int>(2 * xr::detail::ceil_div(t.count, kBinWindow));
  p.finish = "offsets classified, then " + p.finish;
  p.pass = binned_launches(t, b);
}

Plan plan(const Task& t) {
  Plan p;
  p.kernel = "multiblock";
  const u64 chunk = segment_chunk(t);
  p.finish = "last block of each segment combines its chunks in order";
  if (t.stats.known) p.depth = multiblock_depth(t.stats.longest, chunk, t.block, t.pack());
  switch (t.kind) {
    case SegmentKind::Rows: plan_rows(p, t, chunk); break;
    case SegmentKind::Offsets: plan_offsets(p, t, chunk); break;
    case SegmentKind::Columns: layout_not_reduced("multiblock", t.kind);
  }
  return p;
}

}  // namespace

const Strategy& strategy_multiblock() {
  static const Strategy s{
      40,
      strategy_info("multiblock", KernelKind::Rung, {SegmentKind::Rows, SegmentKind::Offsets}, segment_blocks(1024),
                    "64 KiB chunks of a segment on as many blocks, the last block of each segment combining its "
                    "chunks in the same launch: a few long segments fill the GPU; a partial and a ticket per chunk, "
                    "offsets classified first"),
      &plan};
  return s;
}

}  // namespace xr::cuda::detail
