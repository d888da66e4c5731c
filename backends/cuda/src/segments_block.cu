// Launchers of k_block (block, binned's medium bin), k_multiblock (multiblock, binned's long bin)
// and k_classify (binned): kernels_cu/segments.cuh.
#include "policy.hpp"
#include "segment_launch.cuh"

namespace xr::cuda::detail {
namespace {

namespace ks = xr::kern::seg;

template <bool Rows> struct Block : NoSharedMemory {
  using Src = std::conditional_t<Rows, ks::RowsSource, ks::OffsetsSource>;
  template <class In, class Acc, Op O> static const void* kernel() {
    return reinterpret_cast<const void*>(ks::k_block<In, Acc, O, Src, policy::kUnroll>);
  }
  template <class In, class Acc, Op O> static void run(const SegmentLaunch& L) {
    constexpr auto kernel = ks::k_block<In, Acc, O, Src, policy::kUnroll>;
    Src src;
    if constexpr (Rows) src = rows_source(L);
    else src = offsets_source(L);
    kernel<<<segment_grid(L, reinterpret_cast<const void*>(kernel)), L.block, 0, L.stream>>>(
        static_cast<const In*>(L.in), src, static_cast<Acc*>(L.out));
    check_launch("k_block");
  }
};

template <bool Rows> struct Multiblock : NoSharedMemory {
  using Chunks = std::conditional_t<Rows, ks::RowChunks, ks::ListChunks>;
  template <class In, class Acc, Op O> static const void* kernel() {
    return reinterpret_cast<const void*>(ks::k_multiblock<In, Acc, O, Chunks, policy::kUnroll>);
  }
  template <class In, class Acc, Op O> static void run(const SegmentLaunch& L) {
    constexpr auto kernel = ks::k_multiblock<In, Acc, O, Chunks, policy::kUnroll>;
    Chunks chunks;
    if constexpr (Rows) chunks = {rows_source(L), L.chunk, L.per_row};
    else chunks = {offsets_source(L), L.chunk_base, L.chunk, L.capacity};
    kernel<<<segment_grid(L, reinterpret_cast<const void*>(kernel)), L.block, 0, L.stream>>>(
        static_cast<const In*>(L.in), chunks, static_cast<Acc*>(L.out), static_cast<Acc*>(L.partials), L.tickets);
    check_launch("k_multiblock");
  }
};

}  // namespace

void add_block_kernels(SegmentTables& t) {
  fill_segment_table<Block<true>>(t, SegmentKernel::BlockRows);
  fill_segment_table<Block<false>>(t, SegmentKernel::BlockOffsets);
  fill_segment_table<Multiblock<true>>(t, SegmentKernel::MultiblockRows);
  fill_segment_table<Multiblock<false>>(t, SegmentKernel::MultiblockList);
}

void launch_classify(const ClassifyLaunch& c) {
  ks::Bins bins;
  for (int b = 0; b < 3; ++b) bins.limit[b] = c.limit[static_cast<std::size_t>(b)];
  for (int b = 0; b < 4; ++b) bins.list[b] = c.lists[static_cast<std::size_t>(b)];
  bins.entries = c.entries;
  bins.chunk_base = c.chunk_base;
  bins.chunk = c.chunk;
  constexpr auto kernel = ks::k_classify<ks::kClassifyPerThread>;
  constexpr u64 per_block = u64(ks::kClassifyBlock) * ks::kClassifyPerThread;
  const u64 full = u64(c.caps->sm_count) *
                   u64(blocks_per_sm(reinterpret_cast<const void*>(kernel), ks::kClassifyBlock, 0, c.caps->device));
  const u64 grid = std::clamp<u64>(ceil_div(c.count, per_block), 1, full);
  kernel<<<static_cast<unsigned>(grid), ks::kClassifyBlock, 0, c.stream>>>(c.offsets, c.n, c.count, bins);
  check_launch("k_classify");
}

}  // namespace xr::cuda::detail
