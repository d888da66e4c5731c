// Host-side templates shared by the rung families: filling a RungEntry's run table from a
// rung type, the multi-pass driver and the grid policies. Included by the .cu files only.
#pragma once

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>

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

// A rung whose kernels read every element as static_cast<Acc>(in[i]) or
// static_cast<Work>(pack.v[k]) declares `static constexpr bool maps_elements = true;` and takes
// the mapped ops as well: only its run table instantiates them (build time).
template <class Rung> constexpr bool maps_elements() {
  if constexpr (requires { Rung::maps_elements; }) return Rung::maps_elements;
  else return false;
}

// What the first pass of mapped op O over T reads: T itself where O's map leaves every value of
// T as it is (NaN skipping on integers, abs of unsigned integers), so the fold's instantiation
// serves; the unsigned integer of the same width for count_nonzero (the same bits are nonzero);
// Mapped<T, O> otherwise, read as the op whose kernels run O (any and all as count_nonzero).
template <Op O, class T>
using mapped_input_t = std::conditional_t<
    (map_of(O) == ElementMap::SkipNaN && !is_float_v<T>) || (map_of(O) == ElementMap::Abs && std::is_unsigned_v<T>) ||
        map_of(O) == ElementMap::Convert,
    T,
    Mapped<typename std::conditional_t<map_of(O) == ElementMap::NonZero && std::is_integral_v<T>, std::make_unsigned<T>,
                                       std::type_identity<T>>::type,
           kernel_mapped_op<O, T>>>;

// entry.fn[Slot][T][accumulator] = &Rung::run<In, accumulator_t<Slot, T, A>, Fold>. Where Wide
// and Native give one accumulator, both point to one instantiation.
template <class Rung, Op Slot, Op Fold, class In, class T> void put_runs(RungEntry& e) {
  auto& slot = e.fn[static_cast<std::size_t>(Slot)][static_cast<std::size_t>(dtype_of<T>)];
  slot[static_cast<std::size_t>(Accumulator::Wide)] =
      &Rung::template run<In, accumulator_t<Slot, T, Accumulator::Wide>, Fold>;
  slot[static_cast<std::size_t>(Accumulator::Native)] =
      &Rung::template run<In, accumulator_t<Slot, T, Accumulator::Native>, Fold>;
}

// The run table for every fold of core's table and every element type in Types (all_dtypes;
// classic_dtypes for the shared-memory trees and the nested launches): &Rung::run<T, Acc, O>.
template <class Rung, const auto& Types> void fill_runs(RungEntry& e) {
  for_each_dtype([&](auto t) {
    using T = decltype(t);
    if constexpr (lists(Types, dtype_of<T>))
      for_each_fold([&](auto op_fn) {
        constexpr Op O = decltype(op_fn)::op;
        put_runs<Rung, O, O, T, T>(e);
      });
  });
}

// The mapped ops' part of the table, for a rung that maps elements: &Rung::run<mapped_input_t<O,
// T>, accumulator_t<O, T, A>, fold_of(O)>, a fold of the mapped values (its passes after the
// first fold Acc partials as they are). A rung family may instantiate it in a translation unit
// of its own (extern template), as rungs_grid_mapped.cu does.
template <class Rung, const auto& Types> void fill_mapped_runs(RungEntry& e) {
  for_each_dtype([&](auto t) {
    using T = decltype(t);
    if constexpr (lists(Types, dtype_of<T>))
      for_each_mapped([&](auto fn) {
        constexpr Op O = decltype(fn)::op;
        put_runs<Rung, O, fold_of(O), mapped_input_t<O, T>, T>(e);
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
  if constexpr (maps_elements<Rung>()) {
    e.info.ops.insert(e.info.ops.end(), mapped_ops.begin(), mapped_ops.end());
    fill_mapped_runs<Rung, Types>(e);
  }
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
