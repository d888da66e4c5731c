// balanced: the elements cut into equal tiles whatever the segments, one wave of blocks each a
// run of consecutive tiles (k_balanced), offsets checked for order on the device where the host
// has not read them (k_balanced_order), parts across blocks combined by k_balanced_fixup.
// Over binned: any mix of lengths at one rate; a search of the offsets per tile, shared memory and 2 launches.
#include <algorithm>
#include <climits>
#include <string>
#include <type_traits>

#include "arith.hpp"
#include "kernels_cu/segments_balanced.cuh"
#include "policy.hpp"
#include "segment_launch.cuh"

namespace xr::cuda::detail {
namespace {

namespace ks = xr::kern::seg;

template <class Src> struct BalancedArgs {
  const void* in;
  Src src;
  u64 tiles;
  void* out;
  void* partials;            // each tile's part, where the grid has more than one block
  std::uint64_t* carry_key;  // the segment of each tile's part
  unsigned* disorder;        // offsets the host has not checked: set where they decrease
  LaunchShape shape;         // grid: at most the tiles
};

template <class Src> struct Balanced {
  using Args = BalancedArgs<Src>;
  static constexpr bool maps_elements = true;  // carried parts fold as they are (k_balanced_fixup)
  static constexpr bool kRows = std::is_same_v<Src, ks::BalancedRows>;
  template <class In, class Acc, Op O> static constexpr auto fn() {
    return ks::k_balanced<In, Acc, O, Src, policy::balanced_items(sizeof(In)), policy::kUnroll>;
  }
  template <class In, class Acc, Op O> static const void* kernel() {
    return reinterpret_cast<const void*>(fn<In, Acc, O>());
  }
  template <class In, class Acc> static constexpr std::size_t smem_per_thread() {
    constexpr unsigned block = policy::kSegmentBlock;
    return (ks::balanced_smem_bytes(block * policy::balanced_items(sizeof(In)), sizeof(In)) + block - 1) / block;
  }
  template <class In, class Acc, Op O> static void run(const Args& a) {
    using xr::detail::ceil_div;
    const LaunchShape& s = a.shape;
    const unsigned sm_blocks = static_cast<unsigned>(s.caps->sm_count) * 8;
    if constexpr (!kRows) {
      if (a.disorder) {
        check(cudaMemsetAsync(a.disorder, 0, sizeof(unsigned), s.stream), "cudaMemsetAsync (balanced)");
        const u64 grid = std::clamp<u64>(ceil_div(a.src.count, 256), 1, sm_blocks);
        launch("k_balanced_order", ks::k_balanced_order<Src>, static_cast<unsigned>(grid), 256, 0, s.stream, a.src,
               a.disorder);
      }
    }
    const u64 tile = u64(s.block) * policy::balanced_items(sizeof(In));
    const bool fixup = s.grid > 1;
    Acc* carry = fixup ? static_cast<Acc*>(a.partials) : nullptr;
    unsigned* disorder = kRows ? nullptr : a.disorder;
    launch("k_balanced", fn<In, Acc, O>(), static_cast<unsigned>(s.grid), s.block,
           ks::balanced_smem_bytes(tile, sizeof(In)), s.stream, static_cast<const In*>(a.in), a.src, a.tiles,
           static_cast<Acc*>(a.out), carry, a.carry_key, disorder);
    if (!fixup) return;
    const u64 grid = std::clamp<u64>(ceil_div(s.grid * 32, 256), 1, sm_blocks);
    launch("k_balanced_fixup", ks::k_balanced_fixup<Acc, O>, static_cast<unsigned>(grid), 256, 0, s.stream, carry,
           a.carry_key, s.grid, static_cast<Acc*>(a.out), disorder);
  }
};

template <class Src> const Table<BalancedArgs<Src>>& balanced_table() {
  static const auto t = make_table<Balanced<Src>>();
  return t;
}

// The pass over `src`: tiles of block x balanced_items elements, one wave of persistent blocks.
template <class Src> void plan_pass(Plan& p, const Task& t, const Src& src, u64 elements) {
  using xr::detail::ceil_div, xr::detail::ceil_log2;
  const u64 tile = u64(t.block) * policy::balanced_items(t.elem());
  // One tile more than whole tiles: the end of the input lies in one.
  const u64 tiles = elements / tile + 1;
  if (tiles > INT_MAX) throw InvalidArgument("cuda: balanced: " + std::to_string(elements) + " elements is too many");
  const Entry<BalancedArgs<Src>>& e = entry_of(balanced_table<Src>(), t);
  allow_dynamic_smem(e.kernel, e.smem_per_thread * t.block, t.caps->device, "balanced");
  const u64 grid = std::min(tiles, resident_blocks(e, *t.caps, t.block));
  const bool check_order = t.kind == SegmentKind::Offsets && !t.host_offsets;
  p.launches = 1 + (check_order ? 1 : 0) + (grid > 1 ? 1 : 0);
  p.finish = "runs of tiles of " + std::to_string(tile) + " elements, a block segmented scan" +
             (grid > 1 ? ", parts across blocks combined by a fixup launch" : "");
  // A segment's part carried from tile to tile in a block, then the blocks' parts combined.
  if (t.stats.known) {
    const u64 spanned = ceil_div(t.stats.longest, tile) + 1;
    p.depth = policy::balanced_items(t.elem()) + ceil_log2(t.block) + 1 +
              (grid > 1 ? spanned + ceil_div(spanned, 32) + 6 : spanned);
  }
  // Each tile's part and its segment, and the disorder flag.
  auto* words =
      static_cast<std::uint64_t*>(t.scratch->buffer(SegmentScratch::ChunkBase, (tiles + 1) * sizeof(std::uint64_t)));
  unsigned* disorder = check_order ? reinterpret_cast<unsigned*>(words + tiles) : nullptr;
  void* partials = t.scratch->buffer(SegmentScratch::Partials, tiles * t.result_size());
  const BalancedArgs<Src> args{t.in, src, tiles, t.out, partials, words, disorder, shape_of(t, grid, t.block)};
  p.pass.push_back(step_of(balanced_table<Src>(), t, args));
}

Plan plan(const Task& t) {
  Plan p;
  p.kernel = "balanced";
  // Elements: at most the input's n (what the host cannot see lies within it); the tiles past
  // the end exit at once.
  switch (t.kind) {
    case SegmentKind::Rows:
      plan_pass(p, t, ks::BalancedRows{t.count, t.length, t.stride}, t.count * t.length);
      break;
    case SegmentKind::Offsets:
      plan_pass(p, t, ks::BalancedOffsets{t.offsets, t.n, t.count}, t.stats.known ? t.stats.total : t.n);
      break;
    case SegmentKind::Columns: layout_not_reduced("balanced", t.kind);
  }
  return p;
}

}  // namespace

const Strategy& strategy_balanced() {
  static const Strategy s{
      60,
      strategy_info("balanced", KernelKind::Rung, {SegmentKind::Rows, SegmentKind::Offsets},
                    segment_blocks(policy::kBalancedMaxBlock),
                    "equal tiles of elements per block whatever the segments, staged in shared memory, each thread's "
                    "run cut at marked ends, a block segmented scan and a fixup of parts across tiles: any mix of "
                    "lengths at one rate; a search of the offsets per tile, shared memory and 2 launches"),
      &plan};
  return s;
}

}  // namespace xr::cuda::detail
