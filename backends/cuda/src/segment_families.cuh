// The kernel families several strategies launch (kernels_cu/segments.cuh; launchers in
// segment_families.cu): k_group (subwarp, warp, binned's tiny and short bins), k_block (block,
// binned's medium bin), k_multiblock (multiblock, binned's long bin) and k_classify (binned and
// multiblock over offsets); their grids and rounding depths.
#pragma once

#include <array>
#include <vector>

#include "kernels_cu/segments.cuh"
#include "segment_launch.cuh"

namespace xr::cuda::detail {

namespace ks = xr::kern::seg;

// k_group: groups of 2^log_group lanes per segment.
template <class Src> struct GroupArgs {
  const void* in;
  Src src;
  void* out;
  unsigned log_group;
  LaunchShape shape;
};
const Table<GroupArgs<ks::RowsSource>>& group_rows();
const Table<GroupArgs<ks::OffsetsSource>>& group_offsets();

// k_block: one block per segment.
template <class Src> struct BlockArgs {
  const void* in;
  Src src;
  void* out;
  LaunchShape shape;
};
const Table<BlockArgs<ks::RowsSource>>& block_rows();
const Table<BlockArgs<ks::OffsetsSource>>& block_offsets();

// k_multiblock: chunks of segments, one block each; partials and tickets where a segment has
// more than one chunk.
template <class Chunks> struct MultiblockArgs {
  const void* in;
  Chunks chunks;
  void* out;
  void* partials;
  unsigned* tickets;
  LaunchShape shape;
};
const Table<MultiblockArgs<ks::RowChunks>>& multiblock_rows();
const Table<MultiblockArgs<ks::ListChunks>>& multiblock_list();

// The task's segments as k_group, k_block and k_multiblock read them.
inline ks::RowsSource rows_source(const Task& t) { return {t.count, t.length, t.stride}; }
inline ks::OffsetsSource offsets_source(const Task& t) { return {t.offsets, t.n, t.count, nullptr, nullptr}; }

// k_group over the task's rows or offsets, 2^log_group lanes a segment, on group_grid's grid.
Step group_launch(const Task& t, unsigned log_group);
// k_block over the task's rows or offsets, one block a segment.
Step block_launch(const Task& t);
// Blocks of k_block over the task's layout the device holds at once at the task's block size.
u64 block_resident_blocks(const Task& t);

// k_group's grid for the task's segments: kSegmentsInFlight segments a group in flight.
u64 group_grid(const Task& t, unsigned log_group);
// k_group's lanes (log2) for segments of `length` elements: a 16-byte pack a lane, two from
// policy::kGroupTwoPacksFrom packs a segment on; at most a warp.
unsigned group_log_for(u64 length, unsigned pack);
// The elements of multiblock's chunks (policy::kSegmentChunkBytes).
u64 segment_chunk(const Task& t);

// Rounding chains (float sums), from each kernel's structure: the values one thread adds in
// sequence, then the trees.
u64 group_depth(u64 length, unsigned log_group, unsigned pack);
u64 block_depth(u64 length, unsigned block, unsigned pack);
u64 multiblock_depth(u64 length, u64 chunk, unsigned block, unsigned pack);

// Segments classified per launch of k_classify: the bins' counters keep 25 bits of entries.
inline constexpr u64 kBinWindow = u64{1} << 24;

// Offsets in windows of kBinWindow segments, each window's counters zeroed, its segments sorted
// into four bins by length by k_classify (below limits[0], limits[1], limits[2], the rest), then
// one launch per bin in `used`: k_group of 2^policy::kTinyBinLogLanes lanes, k_group of a warp,
// k_block, and k_multiblock over the chunks (of `chunk` elements) of the long bin. room[b]: the
// entries bin b holds per window.
struct BinnedPass {
  std::array<bool, 4> used{true, true, true, true};
  std::array<u64, 3> limits{};
  std::array<u64, 4> room{};
  u64 chunk = 0;
  unsigned block = 0;
};
// Takes the pass's scratch (bin lists, the long bin's chunk bases, tickets and partials) and
// returns its launches.
std::vector<Step> binned_launches(const Task& t, const BinnedPass& b);

}  // namespace xr::cuda::detail
