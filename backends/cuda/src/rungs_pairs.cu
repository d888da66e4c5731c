// The pair ops (argmin, argmax, minmax) on auto: k_pair, kTileThreadsPerSM threads an SM
// (at least kPairPacksPerThread packs a thread) drawing tiles of up to kPairTilePacks packs;
// one record per block, combined by the last block of the same launch (kernels_cu/pairs.cuh).
#include <algorithm>

#include "kernels_cu/pairs.cuh"
#include "drivers.cuh"
#include "policy.hpp"

namespace xr::cuda::detail {
namespace {

using namespace policy;

template <class In, Op O> Outcome run_pair(const Launch& L) {
  using Record = kern::StoredRecord<O, In>;
  const auto kernel = &kern::k_pair<In, O, kUnroll>;
  const u64 packs = ceil_div(L.n * sizeof(In), 16);
  u64 g = L.grid;
  if (!g) {
    const unsigned resident = unsigned(blocks_per_sm(reinterpret_cast<const void*>(kernel), L.block, 0, L.caps->device));
    g = std::clamp<u64>(ceil_div(packs, u64(L.block) * kPairPacksPerThread), 1,
                        u64(L.caps->sm_count) * std::clamp(kTileThreadsPerSM / L.block, 1u, std::max(resident, 1u)));
  }
  const unsigned grid = to_grid(g, "auto");
  // Small inputs: a tile for each block, so that every block has one.
  const u64 tile = std::clamp<u64>(ceil_div(packs, grid), L.block, kPairTilePacks);
  auto* partials = static_cast<Record*>(L.ws->scratch(0, std::size_t(grid) * sizeof(Record)));
  kernel<<<grid, L.block, 0, L.stream>>>(static_cast<const In*>(L.in), L.n, L.first, tile, partials, L.ws->counter(),
                                         L.ws->tile_counter(), static_cast<Record*>(L.out));
  check_launch("auto (pair ops)");
  Outcome o;
  o.launches = 1;
  o.finish = grid == 1 ? "one block" : "tiles drawn from a counter; the last block (ticket) combines the blocks' records";
  o.variant = "auto:pairs";
  return o;
}

}  // namespace

void add_pair_runs(RungEntry& e) {
  for_each_pair([&](auto fn) {
    constexpr Op O = decltype(fn)::op;
    for_each_dtype([&](auto t) {
      using T = decltype(t);
      auto& slot = e.fn[static_cast<std::size_t>(O)][static_cast<std::size_t>(dtype_of<T>)];
      slot[static_cast<std::size_t>(Accumulator::Wide)] = slot[static_cast<std::size_t>(Accumulator::Native)] =
          &run_pair<T, O>;
    });
  });
  for (Op op : pair_ops)
    if (std::find(e.info.ops.begin(), e.info.ops.end(), op) == e.info.ops.end()) e.info.ops.push_back(op);
  std::sort(e.info.ops.begin(), e.info.ops.end());  // core's table order (all_ops)
}

}  // namespace xr::cuda::detail
