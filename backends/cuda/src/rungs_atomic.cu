// Rungs 11-13: the result is combined atomically. One launch writes the identity into the
// output, one launch reduces (2 launches). Native atomics: add (4- and 8-byte types; f32/f64
// order-dependent), min/max on 4- and 8-byte integers; products, float min/max and 1-byte
// accumulators (native sums of i8 and u8) use a compare-and-swap loop.
#include "kernels_cu/atomic.cuh"
#include "drivers.cuh"

namespace xr::cuda::detail {
namespace {

// Derived provides name, kernel<In,Acc,O>(), depth(n, grid, block).
template <class Derived> struct AtomicRung {
  template <class In, class Acc, Op O> static Outcome run(const Launch& L) {
    const auto k = Derived::template kernel<In, Acc, O>();
    const unsigned grid = to_grid(fixed_grid(L, L.n, true, reinterpret_cast<const void*>(k), 0, 1), Derived::name);
    Acc* out = static_cast<Acc*>(L.out);
    kern::k_fill<Acc><<<1, 1, 0, L.stream>>>(out, xr::identity<Acc>(O));
    check_launch("k_fill (identity before atomics)");
    k<<<grid, L.block, 0, L.stream>>>(static_cast<const In*>(L.in), L.n, out);
    check_launch(Derived::name);
    Outcome o;
    o.launches = 2;
    o.finish = "atomic";
    o.depth = Derived::depth(std::max<u64>(L.n, 1), grid, L.block);
    o.variant = Derived::name;
    return o;
  }
};

struct AtomicGlobal : AtomicRung<AtomicGlobal> {
  static constexpr const char* name = "atomic_global";
  template <class In, class Acc, Op O> static auto kernel() { return &kern::k_atomic_global<In, Acc, O>; }
  static u64 depth(u64 n, u64, unsigned) { return n + 1; }  // one chain through every element
};
struct AtomicShared : AtomicRung<AtomicShared> {
  static constexpr const char* name = "atomic_shared";
  template <class In, class Acc, Op O> static auto kernel() { return &kern::k_atomic_shared<In, Acc, O>; }
  // The block's elements in sequence (the busiest block), then the blocks in sequence.
  static u64 depth(u64 n, u64 grid, unsigned block) { return ceil_div(n, grid * block) * block + grid + 1; }
};
struct TreeAtomic : AtomicRung<TreeAtomic> {
  static constexpr const char* name = "tree_atomic";
  template <class In, class Acc, Op O> static auto kernel() { return &kern::k_tree_atomic<In, Acc, O>; }
  static u64 depth(u64 n, u64 grid, unsigned block) { return pass_depth(n, grid, block) + grid; }
};

// Not a rung: what every rung returns for n = 0 (the op's empty value, +0 for a float sum,
// whose identity is -0), written into the output by one launch. O is the fold (a mapped op's
// fold_of), so its empty value is the mapped op's too.
struct EmptyInput {
  static constexpr const char* name = "empty input";
  static constexpr bool maps_elements = true;  // the mapped ops' empty values: their folds'
  template <class In, class Acc, Op O> static Outcome run(const Launch& L) {
    kern::k_fill<Acc><<<1, 1, 0, L.stream>>>(static_cast<Acc*>(L.out), xr::empty_value<Acc>(O));
    check_launch("k_fill (empty input)");
    Outcome o;
    o.launches = 1;
    o.finish = "none";
    return o;  // no variant: the result names the rung that was asked for
  }
};

}  // namespace

const RungEntry& empty_input_entry() {
  static const RungEntry entry = make_entry<EmptyInput>("the empty value of n = 0", KernelKind::Rung, 1, {});
  return entry;
}

std::vector<RungEntry> atomic_rungs() {
  return {
      make_entry<AtomicGlobal>(
          "every element one atomic on one address (native add, int min/max; CAS loop otherwise): fully serialised",
          KernelKind::Rung, 256, BlockRule{1, 1024, 1, {}}),
      make_entry<AtomicShared>(
          "shared-memory atomic per element, one global atomic per block: less global contention, still 1 atomic/elem",
          KernelKind::Rung, 256, BlockRule{1, 1024, 1, {}}),
      make_entry<TreeAtomic>(
          "registers + shuffle tree per block, one global atomic per block; identity-init launch, float sums order-dependent",
          KernelKind::Rung, 256, BlockRule{32, 1024, 32, {}}),
  };
}

}  // namespace xr::cuda::detail
