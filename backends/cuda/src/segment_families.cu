// Launchers of k_group, k_block, k_multiblock and k_classify (kernels_cu/segments.cuh), the kernel
// families several strategies share (segment_families.cuh), and binned's pass over classified
// offsets. Each family reads an element through static_cast<Acc> (a pack's through reduce_packs),
// so each takes the mapped ops too (maps_elements, make_table).
#include "segment_families.cuh"

#include <algorithm>
#include <climits>
#include <type_traits>

#include "arith.hpp"
#include "policy.hpp"

namespace xr::cuda::detail {
namespace {

template <class Src> struct Group : NoSharedMemory {
  using Args = GroupArgs<Src>;
  static constexpr bool maps_elements = true;
  template <class In, class Acc, Op O> static constexpr auto fn() {
    return ks::k_group<In, Acc, O, Src, policy::kSegmentsInFlight>;
  }
  template <class In, class Acc, Op O> static const void* kernel() {
    return reinterpret_cast<const void*>(fn<In, Acc, O>());
  }
  template <class In, class Acc, Op O> static void run(const Args& a) {
    launch("k_group", fn<In, Acc, O>(), grid_of(a.shape, kernel<In, Acc, O>()), a.shape.block, 0, a.shape.stream,
           static_cast<const In*>(a.in), a.src, static_cast<Acc*>(a.out), a.log_group);
  }
};

template <class Src> struct Block : NoSharedMemory {
  using Args = BlockArgs<Src>;
  static constexpr bool maps_elements = true;
  template <class In, class Acc, Op O> static constexpr auto fn() {
    return ks::k_block<In, Acc, O, Src, policy::kUnroll>;
  }
  template <class In, class Acc, Op O> static const void* kernel() {
    return reinterpret_cast<const void*>(fn<In, Acc, O>());
  }
  template <class In, class Acc, Op O> static void run(const Args& a) {
    launch("k_block", fn<In, Acc, O>(), grid_of(a.shape, kernel<In, Acc, O>()), a.shape.block, 0, a.shape.stream,
           static_cast<const In*>(a.in), a.src, static_cast<Acc*>(a.out));
  }
};

template <class Chunks> struct Multiblock : NoSharedMemory {
  using Args = MultiblockArgs<Chunks>;
  static constexpr bool maps_elements = true;  // partials fold as they are
  template <class In, class Acc, Op O> static constexpr auto fn() {
    return ks::k_multiblock<In, Acc, O, Chunks, policy::kUnroll>;
  }
  template <class In, class Acc, Op O> static const void* kernel() {
    return reinterpret_cast<const void*>(fn<In, Acc, O>());
  }
  template <class In, class Acc, Op O> static void run(const Args& a) {
    launch("k_multiblock", fn<In, Acc, O>(), grid_of(a.shape, kernel<In, Acc, O>()), a.shape.block, 0, a.shape.stream,
           static_cast<const In*>(a.in), a.chunks, static_cast<Acc*>(a.out), static_cast<Acc*>(a.partials),
           a.tickets);
  }
};

// k_classify over the window of `count` segments at `offsets`: its grid covers them, at most
// one wave.
void classify(const std::int64_t* offsets, u64 n, u64 count, const ks::Bins& bins, cudaStream_t stream,
              const DeviceCaps& caps) {
  constexpr auto kernel = ks::k_classify<ks::kClassifyPerThread>;
  constexpr u64 per_block = u64(ks::kClassifyBlock) * ks::kClassifyPerThread;
  const void* k = reinterpret_cast<const void*>(kernel);
  const u64 full = u64(caps.sm_count) * u64(blocks_per_sm(k, ks::kClassifyBlock, 0, caps.device));
  const u64 grid = std::clamp<u64>(xr::detail::ceil_div(count, per_block), 1, full);
  launch("k_classify", kernel, static_cast<unsigned>(grid), ks::kClassifyBlock, 0, stream, offsets, n, count, bins);
}

}  // namespace

const Table<GroupArgs<ks::RowsSource>>& group_rows() {
  static const auto t = make_table<Group<ks::RowsSource>>();
  return t;
}
const Table<GroupArgs<ks::OffsetsSource>>& group_offsets() {
  static const auto t = make_table<Group<ks::OffsetsSource>>();
  return t;
}
const Table<BlockArgs<ks::RowsSource>>& block_rows() {
  static const auto t = make_table<Block<ks::RowsSource>>();
  return t;
}
const Table<BlockArgs<ks::OffsetsSource>>& block_offsets() {
  static const auto t = make_table<Block<ks::OffsetsSource>>();
  return t;
}
const Table<MultiblockArgs<ks::RowChunks>>& multiblock_rows() {
  static const auto t = make_table<Multiblock<ks::RowChunks>>();
  return t;
}
const Table<MultiblockArgs<ks::ListChunks>>& multiblock_list() {
  static const auto t = make_table<Multiblock<ks::ListChunks>>();
  return t;
}

Step group_launch(const Task& t, unsigned log_group) {
  const LaunchShape shape = shape_of(t, group_grid(t, log_group), t.block);
  switch (t.kind) {
    case SegmentKind::Rows:
      return step_of(group_rows(), t, GroupArgs<ks::RowsSource>{t.in, rows_source(t), t.out, log_group, shape});
    case SegmentKind::Offsets:
      return step_of(group_offsets(), t,
                     GroupArgs<ks::OffsetsSource>{t.in, offsets_source(t), t.out, log_group, shape});
    case SegmentKind::Columns: layout_not_reduced("k_group", t.kind);
  }
  layout_not_reduced("k_group", t.kind);
}

Step block_launch(const Task& t) {
  const LaunchShape shape = shape_of(t, std::clamp<u64>(t.count, 1, INT_MAX), t.block);
  switch (t.kind) {
    case SegmentKind::Rows:
      return step_of(block_rows(), t, BlockArgs<ks::RowsSource>{t.in, rows_source(t), t.out, shape});
    case SegmentKind::Offsets:
      return step_of(block_offsets(), t, BlockArgs<ks::OffsetsSource>{t.in, offsets_source(t), t.out, shape});
    case SegmentKind::Columns: layout_not_reduced("k_block", t.kind);
  }
  layout_not_reduced("k_block", t.kind);
}

u64 block_resident_blocks(const Task& t) {
  switch (t.kind) {
    case SegmentKind::Rows: return resident_blocks(entry_of(block_rows(), t), *t.caps, t.block);
    case SegmentKind::Offsets: return resident_blocks(entry_of(block_offsets(), t), *t.caps, t.block);
    case SegmentKind::Columns: layout_not_reduced("k_block", t.kind);
  }
  layout_not_reduced("k_block", t.kind);
}

u64 group_grid(const Task& t, unsigned log_group) {
  const u64 per_warp = u64(policy::kSegmentsInFlight) * (32u >> log_group);
  return std::clamp<u64>(xr::detail::ceil_div(xr::detail::ceil_div(t.count, per_warp), t.block / 32), 1, INT_MAX);
}

unsigned group_log_for(u64 length, unsigned pack) {
  const u64 packs = xr::detail::ceil_div(length, pack);
  const u64 lanes = packs >= policy::kGroupTwoPacksFrom ? xr::detail::ceil_div(packs, 2) : packs;
  return std::min(5u, xr::detail::ceil_log2(lanes));
}

u64 segment_chunk(const Task& t) { return std::max<u64>(1, policy::kSegmentChunkBytes / t.elem()); }

u64 group_depth(u64 length, unsigned log_group, unsigned pack) {
  using xr::detail::ceil_div, xr::detail::ceil_log2;
  const u64 g = u64{1} << log_group;
  return ceil_div(2 * pack, g) + ceil_div(length / pack, g) + ceil_log2(pack) + log_group + 1;
}
u64 block_depth(u64 length, unsigned block, unsigned pack) {
  using xr::detail::ceil_div, xr::detail::ceil_log2;
  return 1 + ceil_div(ceil_div(length, pack), block) + ceil_log2(u64(policy::kUnroll) * pack) + ceil_log2(block) + 1;
}
u64 multiblock_depth(u64 length, u64 chunk, unsigned block, unsigned pack) {
  using xr::detail::ceil_div, xr::detail::ceil_log2;
  return block_depth(std::min(length, chunk), block, pack) + ceil_div(ceil_div(length, chunk), block) +
         ceil_log2(block) + 1;
}

std::vector<Step> binned_launches(const Task& t, const BinnedPass& b) {
  // Room for a window's entries in each bin, the long bin's chunk bases and tickets, and the
  // partials of its chunks: at most one chunk per entry beyond input / chunk where segments do
  // not overlap (see ListChunks).
  SegmentScratch& s = *t.scratch;
  std::array<unsigned*, 4> lists{};
  auto* list = static_cast<unsigned*>(
      s.buffer(SegmentScratch::Lists, (b.room[0] + b.room[1] + b.room[2] + b.room[3]) * sizeof(unsigned)));
  for (unsigned k = 0; k < 4; ++k) {
    lists[k] = list;
    list += b.room[k];
  }
  auto* chunk_base =
      static_cast<std::uint64_t*>(s.buffer(SegmentScratch::ChunkBase, b.room[3] * sizeof(std::uint64_t)));
  unsigned* tickets = s.tickets(b.room[3]);
  const u64 capacity = t.n / b.chunk + b.room[3] + 1;
  void* partials = s.buffer(SegmentScratch::Partials, capacity * t.result_size());

  std::uint64_t* entries = s.bin_entries();
  std::vector<Step> pass;
  for (u64 first = 0; first < t.count; first += kBinWindow) {
    const u64 window = std::min(kBinWindow, t.count - first);
    const std::int64_t* offsets = t.offsets + first;
    ks::Bins bins;
    for (int k = 0; k < 3; ++k) bins.limit[k] = b.limits[static_cast<std::size_t>(k)];
    for (int k = 0; k < 4; ++k) bins.list[k] = lists[static_cast<std::size_t>(k)];
    bins.entries = entries;
    bins.chunk_base = chunk_base;
    bins.chunk = b.chunk;
    pass.push_back([offsets, n = t.n, window, bins, entries, stream = t.stream, caps = t.caps] {
      check(cudaMemsetAsync(entries, 0, 4 * sizeof(std::uint64_t), stream), "cudaMemsetAsync (bin counters)");
      classify(offsets, n, window, bins, stream, *caps);
    });
    // The bins' sizes are on the device: every resident block strides over them.
    void* out = static_cast<unsigned char*>(t.out) + first * t.result_size();
    const LaunchShape shape = shape_of(t, 0, b.block);
    const auto source = [&](unsigned k) { return ks::OffsetsSource{offsets, t.n, window, lists[k], entries + k}; };
    using GroupBin = GroupArgs<ks::OffsetsSource>;
    if (b.used[0])
      pass.push_back(step_of(group_offsets(), t, GroupBin{t.in, source(0), out, policy::kTinyBinLogLanes, shape}));
    if (b.used[1]) pass.push_back(step_of(group_offsets(), t, GroupBin{t.in, source(1), out, 5, shape}));
    if (b.used[2])
      pass.push_back(step_of(block_offsets(), t, BlockArgs<ks::OffsetsSource>{t.in, source(2), out, shape}));
    if (b.used[3]) {
      const ks::ListChunks chunks{source(3), chunk_base, b.chunk, capacity};
      using LongBin = MultiblockArgs<ks::ListChunks>;
      pass.push_back(step_of(multiblock_list(), t, LongBin{t.in, chunks, out, partials, tickets, shape}));
    }
  }
  return pass;
}

}  // namespace xr::cuda::detail
