// Rungs 7-10 and auto: a fixed grid striding over the input. cascade and shuffle leave one
// partial per block (second pass with one block); vector adds 128-bit loads; single_pass and
// auto finish in the same launch.
#include "../../kernels_cu/grid.cuh"
#include "drivers.cuh"

namespace xr::cu::detail {
namespace {

// Packs of 16 bytes each thread loads per iteration in k_vec. Untested guess (4 x 16 B in
// flight per thread, 8 blocks of 256 per SM when occupancy allows: 128 KiB per SM), to be
// tuned on the H100/H200.
constexpr unsigned kUnroll = 4;

template <class Derived> struct FixedGridRung : PartialRung<Derived> {
  template <class In, class Acc, Op O> static u64 grid(const Launch& L, u64 n, bool first) {
    const std::size_t smem = Derived::template smem_per_thread<Acc>() * L.block;
    return fixed_grid(L, n, first, reinterpret_cast<const void*>(Derived::template kernel<In, Acc, O>(L.block)),
                      smem, 1);
  }
};

struct Cascade : FixedGridRung<Cascade> {
  static constexpr const char* name = "cascade";
  template <class In, class Acc, Op O> static auto kernel(unsigned) { return &kern::k_cascade<In, Acc, O>; }
  template <class Acc> static constexpr std::size_t smem_per_thread() { return sizeof(Acc); }
};
struct Shuffle : FixedGridRung<Shuffle> {
  static constexpr const char* name = "shuffle";
  template <class In, class Acc, Op O> static auto kernel(unsigned) { return &kern::k_shuffle<In, Acc, O>; }
  template <class Acc> static constexpr std::size_t smem_per_thread() { return 0; }
};

using kern::Deal;

template <class In, class Acc, Op O, bool Last, Deal D = Deal::GridStride> const void* vec_kernel() {
  return reinterpret_cast<const void*>(&kern::k_vec<In, Acc, O, kUnroll, Last, D>);
}

// Grid of k_vec: the caller's, else SMs x resident blocks, but no more blocks than give each
// thread `packs_per_thread` 16-byte packs.
template <class In, class Acc, Op O, bool Last, Deal D = Deal::GridStride>
u64 vec_grid(const Launch& L, u64 n, bool first, u64 packs_per_thread) {
  constexpr u64 V = 16 / sizeof(In);
  return fixed_grid(L, ceil_div(n, V), first, vec_kernel<In, Acc, O, Last, D>(), 0, packs_per_thread);
}

inline u64 vec_pass_depth(u64 n, u64 grid, unsigned block) {
  return pass_depth(n, grid, block) + 1;  // + the head/tail element
}

struct Vector : PartialRung<Vector> {
  static constexpr const char* name = "vector";
  template <class In, class Acc, Op O> static u64 grid(const Launch& L, u64 n, bool first) {
    return vec_grid<In, Acc, O, false>(L, n, first, 1);
  }
  template <class In, class Acc, Op O>
  static void launch(const In* in, u64 n, Acc* out, unsigned grid, const Launch& L) {
    kern::k_vec<In, Acc, O, kUnroll, false><<<grid, L.block, 0, L.stream>>>(in, n, out, kern::FinishState{});
  }
};

// One launch of k_vec with the one-launch finish.
template <class In, class Acc, Op O, Deal D = Deal::GridStride>
Outcome single_launch(const Launch& L, u64 grid_u64, const char* variant) {
  if (grid_u64 > Workspace::kMaxSinglePassGrid)
    throw InvalidArgument(std::string("cuda: ") + variant + ": grid of " + std::to_string(grid_u64) +
                          " blocks exceeds " + std::to_string(Workspace::kMaxSinglePassGrid));
  const unsigned grid = to_grid(grid_u64, variant);
  kern::k_vec<In, Acc, O, kUnroll, true, D><<<grid, L.block, 0, L.stream>>>(
      static_cast<const In*>(L.in), L.n, static_cast<Acc*>(L.out),
      kern::FinishState{static_cast<kern::FinishSlot*>(L.ws->finish_slots()), L.ws->finish_epoch(),
                        L.ws->ticket_partials(), L.ws->counter()});
  check_launch(variant);
  Outcome o;
  o.launches = 1;
  o.finish = grid == 1 ? "one block"
             : D == Deal::GridStride && ptx_version(vec_kernel<In, Acc, O, true, D>(), L.caps->device) >= 90
                 ? "published slots, combined in block order by the last block"
                 : "last block (ticket)";
  // Segments round up to whole tiles: a thread may take up to kUnroll more packs.
  const u64 tile_slack = D == Deal::BlockSegments ? kUnroll * (16 / sizeof(In)) : 0;
  o.depth = vec_pass_depth(L.n, grid, L.block) + tile_slack + (grid > 1 ? pass_depth(grid, 1, L.block) : 0);
  o.variant = variant;
  return o;
}

struct SinglePass {
  static constexpr const char* name = "single_pass";
  template <class In, class Acc, Op O> static Outcome run(const Launch& L) {
    return single_launch<In, Acc, O>(L, vec_grid<In, Acc, O, true>(L, L.n, true, 1), name);
  }
};

// Inputs of at least this many bytes stream from HBM: auto deals them out in block segments
// with streaming loads. Smaller ones stay in the L2 between calls (H100: 50 MB), where the
// grid-stride layout with plain loads is faster. Measured on an H100, 2026-11-22 (time ratio
// to CUB): from 64 MB up, segments 0.81-0.999 against grid-stride 0.90-1.005; at 8 MB (f64
// 2^20) grid-stride 0.64 against segments 0.75.
constexpr u64 kStreamingBytes = u64(64) << 20;

// auto: the single_pass kernel sized so every thread has at least kUnroll packs (fewer, fuller
// blocks for small n: cheaper finish), one launch at every n; layout chosen by input size.
struct Auto {
  static constexpr const char* name = "auto";
  template <class In, class Acc, Op O> static Outcome run(const Launch& L) {
    if (L.n * sizeof(In) >= kStreamingBytes)
      return single_launch<In, Acc, O, Deal::BlockSegments>(
          L, vec_grid<In, Acc, O, true, Deal::BlockSegments>(L, L.n, true, kUnroll), "auto:segmented");
    return single_launch<In, Acc, O>(L, vec_grid<In, Acc, O, true>(L, L.n, true, kUnroll), "auto:single_pass");
  }
};

}  // namespace

std::vector<RungEntry> grid_rungs() {
  const BlockRule warps{32, 1024, 32, {}};
  return {
      make_entry<Cascade>(
          "grid-stride loop on a fixed grid (SMs x occupancy), many elements per thread; scalar loads, shared tree",
          KernelKind::Rung, 256, warps),
      make_entry<Shuffle>(
          "warp shuffles replace the shared-memory tree inside warps; loads still 4/8 bytes, second launch",
          KernelKind::Rung, 256, warps),
      make_entry<Vector>(
          "128-bit loads, 4 per thread in flight, misaligned head/tail handled; still a second launch for partials",
          KernelKind::Rung, 256, warps),
      make_entry<SinglePass>(
          "one launch: the blocks' partials meet in one block (published slots or a ticket); serial finish",
          KernelKind::Rung, 256, warps),
  };
}

RungEntry auto_rung() {
  RungEntry e = make_entry<Auto>(
      "single_pass sized for n (>= 4 packs per thread); from 64 MB, block segments with streaming loads",
      KernelKind::Auto, 256, BlockRule{32, 1024, 32, {}});
  e.info.exact = true;  // RunOptions::exact runs cu_exact (exact_sum.cu), block sizes up to 512
  return e;
}

}  // namespace xr::cu::detail
