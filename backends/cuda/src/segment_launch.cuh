// Host side of the segmented kernels' launches (nvcc only): a kernel family's launchers as a table
// over (op, type, accumulator), a launch bound to its arguments, the grid of every block the device
// holds at once, and `launch`, through which every segmented kernel is launched.
#pragma once

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <utility>

#include "check.hpp"
#include "drivers.cuh"  // maps_elements, mapped_input_t
#include "segment_strategy.hpp"
#include "xreduce/semantics.hpp"

namespace xr::cuda::detail {

// Where a launch runs. grid 0: every block of the kernel the device holds at once.
struct LaunchShape {
  u64 grid = 0;
  unsigned block = 0;
  cudaStream_t stream = nullptr;
  const DeviceCaps* caps = nullptr;
};
inline LaunchShape shape_of(const Task& t, u64 grid, unsigned block) { return {grid, block, t.stream, t.caps}; }

// The launcher of a kernel family for one (op, input type, accumulator), and the kernel it
// launches with its dynamic shared memory per thread (for occupancy queries); kernel is null
// where CUB chooses.
template <class Args> struct Entry {
  void (*run)(const Args&) = nullptr;
  const void* kernel = nullptr;
  std::size_t smem_per_thread = 0;
};
// [op][input type][accumulator], like the ladder's RunTable.
template <class Args> using Table = std::array<std::array<std::array<Entry<Args>, 2>, kDTypeCount>, kOpCount>;

// Launcher L's table: L::run<In, Acc, O>, L::kernel<In, Acc, O>() and L::smem_per_thread<In, Acc>()
// for (T, accumulator_t<O, T, accumulator>, O) for every fold of core's table, every element type
// and both accumulators (Wide and Native differ only for sums of integers narrower than 64 bits;
// f16 and bf16 sum and multiply in f32). A launcher whose kernels read every element through
// static_cast<Acc> (a pack's through reduce_packs) declares maps_elements (drivers.cuh) and takes
// the mapped ops too: slot [O][T][accumulator] launches the fold fold_of(O) over
// mapped_input_t<O, T> with accumulator_t<O, T, accumulator>, its partials folded as they are;
// where mapped_input_t is T and the accumulator the fold's, that is the fold's instantiation. Only
// such launchers instantiate the mapped ops (build time). The pair ops' entries stay empty.
template <class L, class In, class Acc, Op O> Entry<typename L::Args> entry_for() {
  return {&L::template run<In, Acc, O>, L::template kernel<In, Acc, O>(), L::template smem_per_thread<In, Acc>()};
}
// table[Slot][T][accumulator] = entry_for<L, In, accumulator_t<Slot, T, accumulator>, Fold>.
template <class L, Op Slot, Op Fold, class In, class T> void put_entries(Table<typename L::Args>& t) {
  auto& slot = t[static_cast<std::size_t>(Slot)][static_cast<std::size_t>(dtype_of<T>)];
  slot[static_cast<std::size_t>(Accumulator::Wide)] =
      entry_for<L, In, accumulator_t<Slot, T, Accumulator::Wide>, Fold>();
  slot[static_cast<std::size_t>(Accumulator::Native)] =
      entry_for<L, In, accumulator_t<Slot, T, Accumulator::Native>, Fold>();
}
template <class L> Table<typename L::Args> make_table() {
  Table<typename L::Args> t{};
  for_each_dtype([&](auto x) {
    using T = decltype(x);
    for_each_fold([&](auto fn) {
      constexpr Op O = decltype(fn)::op;
      put_entries<L, O, O, T, T>(t);
    });
    if constexpr (maps_elements<L>())
      for_each_mapped([&](auto fn) {
        constexpr Op O = decltype(fn)::op;
        put_entries<L, O, fold_of(O), mapped_input_t<O, T>, T>(t);
      });
  });
  return t;
}

// Launchers whose kernel takes no dynamic shared memory.
struct NoSharedMemory {
  template <class In, class Acc> static constexpr std::size_t smem_per_thread() { return 0; }
};

// The task's entry of a table; InvalidArgument for an op no segmented kernel takes (core's checks
// exclude it).
template <class Args> const Entry<Args>& entry_of(const Table<Args>& table, const Task& t) {
  const Entry<Args>& e =
      table[static_cast<std::size_t>(t.op)][static_cast<std::size_t>(t.type)][static_cast<std::size_t>(t.acc)];
  if (!e.run)
    throw InvalidArgument("cuda: no segmented kernel for " + std::string(to_string(t.op)) + " on " +
                          std::string(to_string(t.type)));
  return e;
}

// The launch of `args` by the task's entry of `table`.
template <class Args> Step step_of(const Table<Args>& table, const Task& t, const Args& args) {
  return [run = entry_of(table, t).run, args] { run(args); };
}

// Blocks of the entry's kernel the device holds at once, at `threads` threads a block (one wave).
template <class Args> u64 resident_blocks(const Entry<Args>& e, const DeviceCaps& caps, unsigned threads) {
  return u64(caps.sm_count) * u64(blocks_per_sm(e.kernel, threads, e.smem_per_thread * threads, caps.device));
}

// s.grid, or (0) every block of `kernel` the device holds at once; at most INT_MAX.
inline unsigned grid_of(const LaunchShape& s, const void* kernel, std::size_t smem = 0) {
  u64 g = s.grid;
  if (g == 0) g = u64(s.caps->sm_count) * u64(blocks_per_sm(kernel, s.block, smem, s.caps->device));
  return static_cast<unsigned>(std::clamp<u64>(g, 1, INT_MAX));
}

// Launches `kernel` with `args` and checks the launch (configuration errors, earlier faults).
template <class... P, class... A>
void launch(const char* name, void (*kernel)(P...), unsigned grid, unsigned block, std::size_t smem,
            cudaStream_t stream, A&&... args) {
  kernel<<<grid, block, smem, stream>>>(std::forward<A>(args)...);
  check_launch(name);
}

}  // namespace xr::cuda::detail
