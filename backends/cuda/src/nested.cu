// Rung 14, nested: built with separable compilation in its own target (CDP2 needs -rdc and
// cudadevrt). The host launches level 0; every further level is a device-side tail launch.
#include "kernels_cu/nested.cuh"
#include "drivers.cuh"

namespace xr::cuda::detail {
namespace {

struct Nested {
  static constexpr const char* name = "nested";
  template <class In, class Acc, Op O> static Outcome run(const Launch& L) {
    const u64 chunk = u64(L.block) * kern::kNestedPerThread;
    // Level sizes, known on the host: launches and the ping-pong buffers' sizes.
    Outcome o;
    o.finish = "tail launch";
    o.variant = name;
    u64 n = L.n, first_partials = 0, second_partials = 0;
    for (int level = 0;; ++level) {
      const u64 blocks = std::max<u64>(1, ceil_div(n, chunk));
      to_grid(blocks, name);
      ++o.launches;
      o.depth += pass_depth(n, blocks, L.block);
      if (level % 2 == 0) first_partials = std::max(first_partials, blocks);
      else second_partials = std::max(second_partials, blocks);
      if (blocks == 1) break;
      n = blocks;
    }
    const unsigned grid = static_cast<unsigned>(std::max<u64>(1, ceil_div(L.n, chunk)));
    Acc* a = static_cast<Acc*>(L.ws->scratch(0, std::max<u64>(first_partials, 1) * sizeof(Acc)));
    Acc* b = static_cast<Acc*>(L.ws->scratch(1, std::max<u64>(second_partials, 1) * sizeof(Acc)));
    kern::k_nested<In, Acc, O><<<grid, L.block, 0, L.stream>>>(static_cast<const In*>(L.in), L.n, a, b,
                                                                 static_cast<Acc*>(L.out));
    check_launch(name);
    return o;
  }
};

}  // namespace

RungEntry nested_rung() {
  return make_entry<Nested>(
      "CDP2: each level tail-launches the next from the device (no host loop, no device sync); device launch cost",
      KernelKind::Rung, 256, BlockRule{32, 1024, 32, {}});
}

}  // namespace xr::cuda::detail
