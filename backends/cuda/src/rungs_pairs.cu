// The pair ops (argmin, argmax, minmax) on auto: k_pair on a fixed grid (SMs x resident
// blocks, at least kPairPacksPerThread packs a thread), one record per block, combined by the
// last block of the same launch (kernels_cu/pairs.cuh).
#include "kernels_cu/pairs.cuh"
#include "drivers.cuh"
#include "policy.hpp"

namespace xr::cuda::detail {
namespace {

using namespace policy;

template <class In, Op O, kern::Deal D> Outcome run_pair_dealt(const Launch& L, const char* variant) {
  using Record = kern::StoredRecord<O, In>;
  const auto kernel = &kern::k_pair<In, O, kUnroll, D>;
  const u64 packs = ceil_div(L.n * sizeof(In), 16);
  const u64 g = fixed_grid(L, packs, true, reinterpret_cast<const void*>(kernel), 0, kPairPacksPerThread);
  const unsigned grid = to_grid(g, "auto");
  auto* partials = static_cast<Record*>(L.ws->scratch(0, std::size_t(grid) * sizeof(Record)));
  kernel<<<grid, L.block, 0, L.stream>>>(static_cast<const In*>(L.in), L.n, L.first, partials, L.ws->counter(),
                                         static_cast<Record*>(L.out));
  check_launch("auto (pair ops)");
  Outcome o;
  o.launches = 1;
  o.finish = grid == 1 ? "one block" : "last block (ticket) combines the blocks' records";
  o.variant = variant;
  return o;
}

// Packs dealt as the folds' auto deals them: grid-stride, or block segments with streaming
// loads from kStreamingBytes.
template <class In, Op O> Outcome run_pair(const Launch& L) {
  if (L.n * sizeof(In) >= kStreamingBytes) return run_pair_dealt<In, O, kern::Deal::BlockSegments>(L, "auto:pairs_segmented");
  return run_pair_dealt<In, O, kern::Deal::GridStride>(L, "auto:pairs");
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
  e.info.ops.assign(all_ops.begin(), all_ops.end());
}

}  // namespace xr::cuda::detail
