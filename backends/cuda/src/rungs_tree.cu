// Rungs 1-6: one value per block from a shared-memory tree, the host repeats passes on the
// partials. A new rung here is one kernel in kernels_cu/tree.cuh plus one struct and one
// entry below.
#include "kernels_cu/tree.cuh"
#include "drivers.cuh"

namespace xr::cuda::detail {
namespace {

// One or two elements per thread, grid = n / elements per block, shared memory = a value per
// thread.
template <class Derived, unsigned PerThread> struct ClassicRung : PartialRung<Derived> {
  template <class In, class Acc, Op O> static u64 grid(const Launch& L, u64 n, bool) {
    return classic_grid(n, L.block, PerThread);
  }
  template <class Acc> static constexpr std::size_t smem_per_thread() { return sizeof(Acc); }
};

struct InterleavedDivergent : ClassicRung<InterleavedDivergent, 1> {
  static constexpr const char* name = "interleaved_divergent";
  template <class In, class Acc, Op O> static auto kernel(unsigned) { return &kern::k_interleaved_divergent<In, Acc, O>; }
};
struct InterleavedStrided : ClassicRung<InterleavedStrided, 1> {
  static constexpr const char* name = "interleaved_strided";
  template <class In, class Acc, Op O> static auto kernel(unsigned) { return &kern::k_interleaved_strided<In, Acc, O>; }
};
struct Sequential : ClassicRung<Sequential, 1> {
  static constexpr const char* name = "sequential";
  template <class In, class Acc, Op O> static auto kernel(unsigned) { return &kern::k_sequential<In, Acc, O>; }
};
struct FirstAdd : ClassicRung<FirstAdd, 2> {
  static constexpr const char* name = "first_add";
  template <class In, class Acc, Op O> static auto kernel(unsigned) { return &kern::k_first_add<In, Acc, O>; }
};
struct UnrollLastWarp : ClassicRung<UnrollLastWarp, 2> {
  static constexpr const char* name = "unroll_last_warp";
  template <class In, class Acc, Op O> static auto kernel(unsigned) { return &kern::k_unroll_last_warp<In, Acc, O>; }
};
// Block size is a template parameter: only these three are instantiated (build time).
struct UnrollComplete : ClassicRung<UnrollComplete, 2> {
  static constexpr const char* name = "unroll_complete";
  template <class In, class Acc, Op O> static auto kernel(unsigned block) {
    switch (block) {
      case 128: return &kern::k_unroll_complete<128, In, Acc, O>;
      case 256: return &kern::k_unroll_complete<256, In, Acc, O>;
      default: return &kern::k_unroll_complete<512, In, Acc, O>;  // BlockRule admits only 128/256/512
    }
  }
};

}  // namespace

std::vector<RungEntry> tree_rungs() {
  const BlockRule any{1, 1024, 1, {}};
  const BlockRule warps{32, 1024, 32, {}};
  const BlockRule templated{0, 0, 0, {128, 256, 512}};
  return {
      make_entry<InterleavedDivergent, classic_dtypes>(
          "tree with tid % (2*stride): divergent warps, slow modulo, half the threads idle; one launch per pass",
          KernelKind::Rung, 256, any),
      make_entry<InterleavedStrided, classic_dtypes>(
          "index = 2*stride*tid: active threads contiguous, no divergence; costs shared-memory bank conflicts",
          KernelKind::Rung, 256, any),
      make_entry<Sequential, classic_dtypes>(
          "stride halves from blockDim/2: conflict-free; half the threads still idle after loading",
          KernelKind::Rung, 256, any),
      make_entry<FirstAdd, classic_dtypes>(
          "two elements per thread combined while loading: half the blocks; still __syncthreads per level",
          KernelKind::Rung, 256, any),
      make_entry<UnrollLastWarp, classic_dtypes>(
          "last warp finishes with __syncwarp only (race-free on Volta+, not volatile-only); loop bounds still at run time",
          KernelKind::Rung, 256, warps),
      make_entry<UnrollComplete, classic_dtypes>(
          "block size as template parameter (128/256/512), every level unrolled; still 2 elements per thread, many blocks",
          KernelKind::Rung, 256, templated),
  };
}

}  // namespace xr::cuda::detail
