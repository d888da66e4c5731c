// Launchers of k_balanced_order, k_balanced and k_balanced_fixup (balanced, over rows and
// offsets): kernels_cu/segments_balanced.cuh.
#include "kernels_cu/segments_balanced.cuh"
#include "policy.hpp"
#include "segment_launch.cuh"

namespace xr::cuda::detail {
namespace {

namespace ks = xr::kern::seg;

template <bool Rows> struct Balanced {
  using Src = std::conditional_t<Rows, ks::BalancedRows, ks::BalancedOffsets>;
  template <class In, class Acc, Op O> static constexpr auto fn() {
    return ks::k_balanced<In, Acc, O, Src, policy::balanced_items(sizeof(In)), policy::kUnroll>;
  }
  template <class In, class Acc, Op O> static const void* kernel() { return reinterpret_cast<const void*>(fn<In, Acc, O>()); }
  template <class In, class Acc> static constexpr std::size_t smem_per_thread() {
    constexpr unsigned block = policy::kSegmentBlock;
    return (ks::balanced_smem_bytes(block * policy::balanced_items(sizeof(In)), sizeof(In)) + block - 1) / block;
  }
  template <class In, class Acc, Op O> static void run(const SegmentLaunch& L) {
    Src src;
    if constexpr (Rows) src = {L.count, L.length, L.stride};
    else src = {L.offsets, L.n, L.count};
    const unsigned sm_blocks = static_cast<unsigned>(L.caps->sm_count) * 8;
    if constexpr (!Rows) {
      if (L.disorder) {
        check(cudaMemsetAsync(L.disorder, 0, sizeof(unsigned), L.stream), "cudaMemsetAsync (balanced)");
        const u64 grid = std::clamp<u64>(ceil_div(L.count, 256), 1, sm_blocks);
        ks::k_balanced_order<<<static_cast<unsigned>(grid), 256, 0, L.stream>>>(src, L.disorder);
        check_launch("k_balanced_order");
      }
    }
    // L.grid blocks (at most the tiles, see plan_segments), each a run of consecutive tiles.
    const u64 tile = u64(L.block) * policy::balanced_items(sizeof(In));
    const bool fixup = L.grid > 1;
    Acc* carry = fixup ? static_cast<Acc*>(L.partials) : nullptr;
    fn<In, Acc, O>()<<<static_cast<unsigned>(L.grid), L.block, ks::balanced_smem_bytes(tile, sizeof(In)), L.stream>>>(
        static_cast<const In*>(L.in), src, L.tiles, static_cast<Acc*>(L.out), carry, L.carry_key,
        Rows ? nullptr : L.disorder);
    check_launch("k_balanced");
    if (!fixup) return;
    const u64 grid = std::clamp<u64>(ceil_div(L.grid * 32, 256), 1, sm_blocks);
    ks::k_balanced_fixup<Acc, O><<<static_cast<unsigned>(grid), 256, 0, L.stream>>>(
        carry, L.carry_key, L.grid, static_cast<Acc*>(L.out), Rows ? nullptr : L.disorder);
    check_launch("k_balanced_fixup");
  }
};

}  // namespace

void add_balanced_kernels(SegmentTables& t) {
  fill_segment_table<Balanced<true>>(t, SegmentKernel::BalancedRows);
  fill_segment_table<Balanced<false>>(t, SegmentKernel::BalancedOffsets);
}

}  // namespace xr::cuda::detail
