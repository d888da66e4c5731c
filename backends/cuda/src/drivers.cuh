// Host-side templates shared by the rung families: filling a RungEntry's run table from a
// rung type, the multi-pass driver and the grid policies. Included by the .cu files only.
#pragma once

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <string>

#include "check.hpp"
#include "ladder.hpp"
#include "xreduce/error.hpp"
#include "xreduce/semantics.hpp"

namespace xr::cuda::detail {

template <class List> constexpr bool lists(const List& types, DType t) {
  for (DType u : types)
    if (u == t) return true;
  return false;
}

// entry.fn[op][type][accumulator] = &Rung::run<T, accumulator_t<O, T, A>, O> for every op of
// core's table and every element type in Types (all_dtypes; classic_dtypes for the shared-memory
// trees and the nested launches).
template <class Rung, const auto& Types> void fill_runs(RungEntry& e) {
  for_each_fold([&](auto op_fn) {
    constexpr Op O = decltype(op_fn)::op;
    for_each_dtype([&](auto t) {
      using T = decltype(t);
      if constexpr (lists(Types, dtype_of<T>)) {
        auto& slot = e.fn[static_cast<std::size_t>(O)][static_cast<std::size_t>(dtype_of<T>)];
        slot[static_cast<std::size_t>(Accumulator::Wide)] =
            &Rung::template run<T, accumulator_t<O, T, Accumulator::Wide>, O>;
        slot[static_cast<std::size_t>(Accumulator::Native)] =
            &Rung::template run<T, accumulator_t<O, T, Accumulator::Native>, O>;
      }
    });
  });
}

template <class Rung, const auto& Types = all_dtypes>
RungEntry make_entry(std::string note, KernelKind kind, unsigned default_block, BlockRule blocks) {
  RungEntry e;
  e.info.name = Rung::name;
  e.info.note = std::move(note);
  e.info.kind = kind;
  e.info.ops.assign(fold_ops.begin(), fold_ops.end());
  e.info.types.assign(Types.begin(), Types.end());
  e.info.blocks = std::move(blocks);
  e.info.blocks.preferred = default_block;
  fill_runs<Rung, Types>(e);
  return e;
}

inline unsigned to_grid(u64 grid, const char* rung) {
  if (grid == 0 || grid > static_cast<u64>(INT_MAX))
    throw InvalidArgument(std::string("cuda: ") + rung + ": grid of " + std::to_string(grid) +
                          " blocks is out of range (1.." + std::to_string(INT_MAX) + ")");
  return static_cast<unsigned>(grid);
}

// Rounding chain of one pass: the elements one thread combines in sequence, then the tree.
inline u64 pass_depth(u64 n, u64 grid, unsigned block) {
  return ceil_div(std::max<u64>(n, 1), grid * block) + ceil_log2(block) + 1;
}

// A pass that leaves one value per block; passes repeat on the partials until one block
// writes the result. Rung provides name, grid<In,Acc,O>(L, n, first_pass) and
// launch<In,Acc,O>(in, n, out, grid, L).
template <class Rung, class In, class Acc, Op O> Outcome multi_pass(const Launch& L) {
  Outcome o;
  o.finish = "multi-pass";
  o.variant = Rung::name;
  const void* cur = L.in;
  u64 n = L.n;
  for (int pass = 0;; ++pass) {
    const u64 g = pass == 0 ? Rung::template grid<In, Acc, O>(L, n, true)
                            : Rung::template grid<Acc, Acc, O>(L, n, false);
    const unsigned grid = to_grid(g, Rung::name);
    Acc* dst = grid == 1 ? static_cast<Acc*>(L.out)
                         : static_cast<Acc*>(L.ws->scratch(pass % 2, std::size_t(grid) * sizeof(Acc)));
    if (pass == 0) Rung::template launch<In, Acc, O>(static_cast<const In*>(cur), n, dst, grid, L);
    else Rung::template launch<Acc, Acc, O>(static_cast<const Acc*>(cur), n, dst, grid, L);
    check_launch(Rung::name);
    ++o.launches;
    o.depth += pass_depth(n, grid, L.block);
    if (grid == 1) return o;
    cur = dst;
    n = grid;
  }
}

// One block per `per_thread * block` elements (the classic rungs).
inline u64 classic_grid(u64 n, unsigned block, unsigned per_thread) {
  return std::max<u64>(1, ceil_div(n, u64(block) * per_thread));
}

// A fixed grid: the caller's, or SMs x resident blocks, but no more blocks than give each
// thread `min_per_thread` elements. Passes after the first use one block.
inline u64 fixed_grid(const Launch& L, u64 n, bool first, const void* kernel, std::size_t smem,
                      u64 min_per_thread) {
  if (!first) return 1;
  if (L.grid) return L.grid;
  const u64 full = u64(L.caps->sm_count) * std::max(1, blocks_per_sm(kernel, L.block, smem, L.caps->device));
  return std::clamp<u64>(ceil_div(n, u64(L.block) * min_per_thread), 1, full);
}

// Rungs whose kernel is (in, n, out) with one partial per block: Derived provides name,
// kernel<In,Acc,O>(block) and smem_per_thread<Acc>() (0 or sizeof(Acc)).
template <class Derived> struct PartialRung {
  template <class In, class Acc, Op O>
  static void launch(const In* in, u64 n, Acc* out, unsigned grid, const Launch& L) {
    const std::size_t smem = Derived::template smem_per_thread<Acc>() * L.block;
    Derived::template kernel<In, Acc, O>(L.block)<<<grid, L.block, smem, L.stream>>>(in, n, out);
  }
  template <class In, class Acc, Op O> static Outcome run(const Launch& L) {
    return multi_pass<Derived, In, Acc, O>(L);
  }
};

}  // namespace xr::cuda::detail
