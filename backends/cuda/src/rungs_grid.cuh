// The grid rungs' host side (rungs 7-13 and auto): grids, launches and run functions. Every
// one reads each element once, through static_cast<Acc> or static_cast<Work>, so each takes the
// mapped ops too (maps_elements). rungs_grid.cu instantiates the folds and holds the table rows,
// rungs_grid_mapped.cu instantiates the mapped ops: about half the kernels each, compiled in
// parallel.
#pragma once

#include "kernels_cu/grid.cuh"
#include "drivers.cuh"
#include "policy.hpp"

namespace xr::cuda::detail::grid_family {

using namespace policy;

template <class Derived> struct FixedGridRung : PartialRung<Derived> {
  static constexpr bool maps_elements = true;
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
  static constexpr bool maps_elements = true;
  template <class In, class Acc, Op O> static u64 grid(const Launch& L, u64 n, bool first) {
    return vec_grid<In, Acc, O, false>(L, n, first, 1);
  }
  template <class In, class Acc, Op O>
  static void launch(const In* in, u64 n, Acc* out, unsigned grid, const Launch& L) {
    kern::k_vec<In, Acc, O, kUnroll, false><<<grid, L.block, 0, L.stream>>>(in, n, out, kern::FinishState{});
  }
};

inline kern::FinishState finish_state(const Workspace& ws) {
  return kern::FinishState{static_cast<kern::FinishSlot*>(ws.finish_slots()), ws.finish_epoch(), ws.ticket_partials(),
                           ws.counter(), ws.tile_counter()};
}

// One launch of k_vec with the one-launch finish.
template <class In, class Acc, Op O, Deal D = Deal::GridStride>
Outcome single_launch(const Launch& L, u64 grid_u64, const char* variant) {
  if (grid_u64 > Workspace::kMaxSinglePassGrid)
    throw InvalidArgument(std::string("cuda: ") + variant + ": grid of " + std::to_string(grid_u64) +
                          " blocks exceeds " + std::to_string(Workspace::kMaxSinglePassGrid));
  const unsigned grid = to_grid(grid_u64, variant);
  kern::k_vec<In, Acc, O, kUnroll, true, D><<<grid, L.block, 0, L.stream>>>(
      static_cast<const In*>(L.in), L.n, static_cast<Acc*>(L.out), finish_state(*L.ws));
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
  static constexpr bool maps_elements = true;
  template <class In, class Acc, Op O> static Outcome run(const Launch& L) {
    return single_launch<In, Acc, O>(L, vec_grid<In, Acc, O, true>(L, L.n, true, 1), name);
  }
};

template <class In, class Acc, Op O> const void* tiles_kernel() {
  return reinterpret_cast<const void*>(&kern::k_vec_tiles<In, Acc, O, kUnroll>);
}

template <class In, class Acc, Op O> Outcome tiles_launch(const Launch& L, const char* variant) {
  const u64 nvec = L.n / (16 / sizeof(In));  // the kernel's count is at most this
  u64 grid = L.grid;
  if (!grid) {
    const unsigned resident = unsigned(blocks_per_sm(tiles_kernel<In, Acc, O>(), L.block, 0, L.caps->device));
    grid = u64(L.caps->sm_count) * std::clamp(kTileThreadsPerSM / L.block, 1u, resident);
  }
  u64 tile = std::clamp(ceil_div(nvec, kTargetTiles), u64(L.block) * kUnroll, kTilePacks);
  tile = std::max(tile, ceil_div(nvec, Workspace::kMaxSinglePassGrid));
  const u64 tiles = std::max<u64>(1, ceil_div(nvec, tile));
  const unsigned g = to_grid(std::min(grid, tiles), variant);
  kern::k_vec_tiles<In, Acc, O, kUnroll><<<g, L.block, 0, L.stream>>>(static_cast<const In*>(L.in), L.n, tile,
                                                                       static_cast<Acc*>(L.out), finish_state(*L.ws));
  check_launch(variant);
  Outcome o;
  o.launches = 1;
  o.finish = "tiles drawn from a counter; the last block (ticket) combines the tile partials in tile order";
  o.depth = vec_pass_depth(tile * (16 / sizeof(In)), 1, L.block) + pass_depth(tiles, 1, L.block);
  o.variant = variant;
  return o;
}

struct DynamicTiles {
  static constexpr const char* name = "dynamic_tiles";
  static constexpr bool maps_elements = true;
  template <class In, class Acc, Op O> static Outcome run(const Launch& L) { return tiles_launch<In, Acc, O>(L, name); }
};

// A bulk kernel's shared ring (none before sm_90, where it reads with loads) and its grid:
// every block the SMs hold, at most `work` blocks unless the caller set the grid.
struct BulkShape {
  std::size_t smem = 0;
  u64 grid = 0;
};
inline BulkShape bulk_shape(const void* kernel, const Launch& L, u64 work, const char* variant) {
  BulkShape b;
  if (ptx_version(kernel, L.caps->device) >= 90) {
    b.smem = std::size_t(kBulkStages) * kBulkStageBytes;
    allow_dynamic_smem(kernel, b.smem, L.caps->device, variant);
  }
  b.grid = L.grid ? L.grid
                  : std::clamp<u64>(work, 1, u64(L.caps->sm_count) * blocks_per_sm(kernel, L.block, b.smem, L.caps->device));
  if (b.grid > Workspace::kMaxSinglePassGrid)
    throw InvalidArgument(std::string("cuda: ") + variant + ": grid of " + std::to_string(b.grid) + " blocks exceeds " +
                          std::to_string(Workspace::kMaxSinglePassGrid));
  return b;
}

template <class In, class Acc, Op O> Outcome bulk_launch(const Launch& L, const char* variant) {
  const auto kernel = &kern::k_vec_bulk<In, Acc, O, kBulkStages, kBulkStageBytes>;
  const u64 stages = L.n * sizeof(In) / kBulkStageBytes;
  const BulkShape shape = bulk_shape(reinterpret_cast<const void*>(kernel), L, stages, variant);
  const unsigned g = to_grid(shape.grid, variant);
  kernel<<<g, L.block, shape.smem, L.stream>>>(static_cast<const In*>(L.in), L.n, static_cast<Acc*>(L.out),
                                               finish_state(*L.ws));
  check_launch(variant);
  Outcome o;
  o.launches = 1;
  o.finish = g == 1 ? "one block" : "last block (ticket), blocks combined in block order";
  const u64 per_block = ceil_div(stages, g) * (kBulkStageBytes / sizeof(In));
  o.depth = vec_pass_depth(per_block, 1, L.block) + 1 + (g > 1 ? pass_depth(g, 1, L.block) : 0);
  o.variant = variant;
  return o;
}

template <class In, class Acc, Op O> Outcome bulk_tiles_launch(const Launch& L, const char* variant) {
  const auto kernel = &kern::k_vec_bulk_tiles<In, Acc, O, kBulkStages, kBulkStageBytes>;
  const u64 stages = L.n * sizeof(In) / kBulkStageBytes;  // the kernel's count is at most this
  u64 tile = std::clamp<u64>(ceil_div(stages, kTargetTiles), 1, kBulkTileStages);
  tile = std::max(tile, ceil_div(stages, Workspace::kMaxSinglePassGrid - 1));
  const u64 tiles = ceil_div(stages, tile);
  const BulkShape shape = bulk_shape(reinterpret_cast<const void*>(kernel), L, tiles, variant);
  const unsigned g = to_grid(shape.grid, variant);
  kernel<<<g, L.block, shape.smem, L.stream>>>(static_cast<const In*>(L.in), L.n, tile, static_cast<Acc*>(L.out),
                                               finish_state(*L.ws));
  check_launch(variant);
  Outcome o;
  o.launches = 1;
  o.finish = "tiles drawn from a counter; the last block (ticket) combines the tile partials in tile order";
  o.depth = vec_pass_depth(tile * kBulkStageBytes / sizeof(In), 1, L.block) + pass_depth(tiles + 1, 1, L.block);
  o.variant = variant;
  return o;
}

struct BulkCopy {
  static constexpr const char* name = "bulk_copy";
  static constexpr bool maps_elements = true;
  template <class In, class Acc, Op O> static Outcome run(const Launch& L) { return bulk_launch<In, Acc, O>(L, name); }
};

struct BulkTiles {
  static constexpr const char* name = "bulk_tiles";
  static constexpr bool maps_elements = true;
  template <class In, class Acc, Op O> static Outcome run(const Launch& L) {
    return bulk_tiles_launch<In, Acc, O>(L, name);
  }
};

// auto: the single_pass kernel sized so every thread has at least kUnroll packs (fewer, fuller
// blocks for small n: cheaper finish), one launch at every n; layout chosen by input size and,
// from kStreamingBytes, by the HBM's speed.
struct Auto {
  static constexpr const char* name = "auto";
  static constexpr bool maps_elements = true;
  template <class In, class Acc, Op O> static Outcome run(const Launch& L) {
    const auto bulk_kernel = reinterpret_cast<const void*>(&kern::k_vec_bulk<In, Acc, O, kBulkStages, kBulkStageBytes>);
    if (L.n * sizeof(In) >= kStreamingBytes && L.caps->dram_gbps >= kBulkCopyGBps &&
        ptx_version(bulk_kernel, L.caps->device) >= 90)
      return L.n * sizeof(In) >= kTilesBytes ? bulk_tiles_launch<In, Acc, O>(L, "auto:bulk_tiles")
                                             : bulk_launch<In, Acc, O>(L, "auto:bulk_copy");
    if (L.n * sizeof(In) >= kTilesBytes) return tiles_launch<In, Acc, O>(L, "auto:dynamic_tiles");
    if (L.n * sizeof(In) >= kStreamingBytes)
      return single_launch<In, Acc, O, Deal::BlockSegments>(
          L, vec_grid<In, Acc, O, true, Deal::BlockSegments>(L, L.n, true, kUnroll), "auto:segmented");
    return single_launch<In, Acc, O>(L, vec_grid<In, Acc, O, true>(L, L.n, true, kUnroll), "auto:single_pass");
  }
};

}  // namespace xr::cuda::detail::grid_family

// The rungs above, for the explicit instantiations of their mapped ops.
#define XR_GRID_RUNGS(X) X(Cascade) X(Shuffle) X(Vector) X(SinglePass) X(DynamicTiles) X(BulkCopy) X(BulkTiles) X(Auto)

namespace xr::cuda::detail {
#define XR_GRID_MAPPED_EXTERN(R) extern template void fill_mapped_runs<grid_family::R, all_dtypes>(RungEntry&);
XR_GRID_RUNGS(XR_GRID_MAPPED_EXTERN)
#undef XR_GRID_MAPPED_EXTERN
}  // namespace xr::cuda::detail
