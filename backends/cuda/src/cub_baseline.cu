// The cub row: cub::DeviceReduce::Reduce with xreduce's own op (core's OpFn, so min/max
// propagate NaN exactly like every other rung). Temp storage is the workspace's slot 2, grown
// and kept; its size is asked once per (types, op, n), so a timed call is one CUB call, as
// in an application that reduces the same size again. The baseline of the ladder, never
// chosen by auto.
#include <cub/device/device_reduce.cuh>

#include "cub_op.cuh"
#include "drivers.cuh"

namespace xr::cuda::detail {
namespace {

struct Cub {
  static constexpr const char* name = "cub";
  template <class In, class Acc, Op O, class N> static int reduce(const Launch& L, N n) {
    const auto* in = static_cast<const cub_t<In>*>(L.in);
    auto* out = static_cast<cub_t<Acc>*>(L.out);
    Workspace::CubTempSize& size = L.ws->cub_temp_size();
    const void* instantiation = reinterpret_cast<const void*>(&reduce<In, Acc, O, N>);
    if (size.instantiation != instantiation || size.n != static_cast<u64>(n)) {
      std::size_t query = 0;
      check(cub::DeviceReduce::Reduce(nullptr, query, in, out, n, CubOp<Acc, O>{}, cub_identity<Acc, O>(), L.stream),
            "cub::DeviceReduce::Reduce (temp size)");
      size = {instantiation, static_cast<u64>(n), query};
    }
    std::size_t bytes = size.bytes;
    void* temp = L.ws->scratch(2, std::max<std::size_t>(bytes, 1));
    check(cub::DeviceReduce::Reduce(temp, bytes, in, out, n, CubOp<Acc, O>{}, cub_identity<Acc, O>(), L.stream),
          "cub::DeviceReduce::Reduce");
    check_launch("cub::DeviceReduce::Reduce");
    return 0;
  }
  template <class In, class Acc, Op O> static Outcome run(const Launch& L) {
    // 32-bit item count where it fits (what most CUB users pass), 64-bit above.
    if (L.n <= static_cast<u64>(INT_MAX)) reduce<In, Acc, O>(L, static_cast<int>(L.n));
    else reduce<In, Acc, O>(L, static_cast<std::int64_t>(L.n));
    Outcome o;
    // Tiles of at most a few thousand elements go in one launch (single-tile kernel); larger
    // inputs take CUB's two-launch path. Estimated from CUB's dispatch, not queried.
    o.launches = L.n <= 4096 ? 1 : 2;
    o.finish = "cub";
    // Estimated bound (CUB's order is not exposed), from CUB's structure: each thread reduces
    // its items of every tile it owns in sequence (at most n / (SMs x 128 threads) plus one
    // tile's items, <= 32), a block tree (<= 10 levels), then one block reduces at most
    // SMs x 16 x 5 block partials (<= SMs x 80 / 128 per thread, + 10 levels).
    const u64 sms = u64(L.caps->sm_count);
    o.depth = ceil_div(std::max<u64>(L.n, 1), sms * 128) + 32 + 10 + ceil_div(sms * 80, 128) + 10;
    o.variant = name;
    return o;
  }
};

}  // namespace

RungEntry cub_rung() {
  return make_entry<Cub>("cub::DeviceReduce::Reduce with xreduce's NaN-propagating ops: the baseline, not ours",
                         KernelKind::Baseline, 0, BlockRule{0, 0, 0, {0}});
}

}  // namespace xr::cuda::detail
