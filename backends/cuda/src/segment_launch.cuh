// Host side of the segmented kernels' launchers (segments_*.cu): filling a run table from
// a launcher type, and the grid of every block the device holds at once.
#pragma once

#include <algorithm>
#include <climits>

#include "check.hpp"
#include "kernels_cu/segments.cuh"
#include "segments.hpp"
#include "xreduce/semantics.hpp"

namespace xr::cuda::detail {

// The table entry of Launcher for (In, Acc, O): Launcher::run<In, Acc, O>, and the kernel it
// launches (Launcher::kernel<In, Acc, O>()) with its shared memory per thread.
template <class Launcher, class In, class Acc, Op O> SegmentEntry segment_entry() {
  return {&Launcher::template run<In, Acc, O>, Launcher::template kernel<In, Acc, O>(),
          Launcher::template smem_per_thread<In, Acc>()};
}

// t[op][type][accumulator] = the entry for (T, accumulator_t<O, T, accumulator>, O) for every op
// of core's table and every element type (Wide and Native differ only for sums of integers
// narrower than 64 bits; f16 and bf16 sum and multiply in f32).
template <class Launcher> void fill_segment_table(SegmentTable& t) {
  for_each_fold([&](auto op_fn) {
    constexpr Op O = decltype(op_fn)::op;
    for_each_dtype([&](auto x) {
      using T = decltype(x);
      auto& slot = t[static_cast<std::size_t>(O)][static_cast<std::size_t>(dtype_of<T>)];
      slot[static_cast<std::size_t>(Accumulator::Wide)] =
          segment_entry<Launcher, T, accumulator_t<O, T, Accumulator::Wide>, O>();
      slot[static_cast<std::size_t>(Accumulator::Native)] =
          segment_entry<Launcher, T, accumulator_t<O, T, Accumulator::Native>, O>();
    });
  });
}

// Launchers whose kernel takes no dynamic shared memory.
struct NoSharedMemory {
  template <class In, class Acc> static constexpr std::size_t smem_per_thread() { return 0; }
};

template <class Launcher> void fill_segment_table(SegmentTables& t, SegmentKernel k) {
  fill_segment_table<Launcher>(t[static_cast<std::size_t>(k)]);
}

// L.grid, or (0) every block of `kernel` the device holds at once; at most INT_MAX.
inline unsigned segment_grid(const SegmentLaunch& L, const void* kernel, std::size_t smem = 0) {
  u64 g = L.grid;
  if (g == 0) g = u64(L.caps->sm_count) * u64(blocks_per_sm(kernel, L.block, smem, L.caps->device));
  return static_cast<unsigned>(std::clamp<u64>(g, 1, INT_MAX));
}

inline kern::seg::RowsSource rows_source(const SegmentLaunch& L) { return {L.count, L.length, L.stride}; }
inline kern::seg::OffsetsSource offsets_source(const SegmentLaunch& L) {
  return {L.offsets, L.n, L.count, L.list, L.entries};
}

}  // namespace xr::cuda::detail
