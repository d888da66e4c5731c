// The cub row: cub::DeviceReduce::Reduce with xreduce's own op (core's OpFn, so min/max
// propagate NaN exactly like every other rung). Temp storage is the workspace's slot 2, grown
// and kept; its size is asked once per (types, op, n), so a timed call is one CUB call, as
// in an application that reduces the same size again. The baseline of the ladder, never
// chosen by auto.
#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/transform_output_iterator.h>

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

// The index CUB writes, moved to the whole input's count (a chunk starts at L.first).
struct OffsetIndex {
  std::int64_t first;
  __host__ __device__ std::int64_t operator()(std::int64_t i) const { return i + first; }
};

// argmin and argmax: cub::DeviceReduce::ArgMin and ArgMax as CUB users call them, the value
// and the index written straight into the cell's two fields. Integer types only: CUB compares
// with operator<, which is xreduce's rule for integers (the first extreme) but never picks a
// NaN, so the float types are left out of the row.
template <class In, Op O> Outcome run_cub_arg(const Launch& L) {
  auto* cell = static_cast<Located<In>*>(L.out);
  const auto* in = static_cast<const In*>(L.in);
  const auto n = static_cast<std::int64_t>(L.n);
  const auto index = thrust::make_transform_output_iterator(&cell->index, OffsetIndex{L.first});
  const auto call = [&](void* temp, std::size_t& bytes) {
    if constexpr (O == Op::ArgMax) return cub::DeviceReduce::ArgMax(temp, bytes, in, &cell->value, index, n, L.stream);
    else return cub::DeviceReduce::ArgMin(temp, bytes, in, &cell->value, index, n, L.stream);
  };
  Workspace::CubTempSize& size = L.ws->cub_temp_size();
  const void* instantiation = reinterpret_cast<const void*>(&run_cub_arg<In, O>);
  if (size.instantiation != instantiation || size.n != L.n) {
    std::size_t query = 0;
    check(call(nullptr, query), "cub::DeviceReduce::ArgMin/ArgMax (temp size)");
    size = {instantiation, L.n, query};
  }
  std::size_t bytes = size.bytes;
  check(call(L.ws->scratch(2, std::max<std::size_t>(bytes, 1)), bytes), "cub::DeviceReduce::ArgMin/ArgMax");
  check_launch("cub::DeviceReduce::ArgMin/ArgMax");
  Outcome o;
  o.launches = L.n <= 4096 ? 1 : 2;
  o.finish = "cub";
  o.variant = Cub::name;
  return o;
}

}  // namespace

RungEntry cub_rung() {
  RungEntry e = make_entry<Cub>(
      "cub::DeviceReduce::Reduce with xreduce's NaN-propagating ops; ArgMin and ArgMax on integers: the baseline, not ours",
      KernelKind::Baseline, 0, BlockRule{0, 0, 0, {0}});
  for_each_dtype([&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_integral_v<T>) {
      const auto type = static_cast<std::size_t>(dtype_of<T>);
      e.fn[static_cast<std::size_t>(Op::ArgMin)][type] = {&run_cub_arg<T, Op::ArgMin>, &run_cub_arg<T, Op::ArgMin>};
      e.fn[static_cast<std::size_t>(Op::ArgMax)][type] = {&run_cub_arg<T, Op::ArgMax>, &run_cub_arg<T, Op::ArgMax>};
    } else {
      e.info.left_out.insert(e.info.left_out.end(), {{Op::ArgMin, dtype_of<T>}, {Op::ArgMax, dtype_of<T>}});
    }
  });
  e.info.ops.push_back(Op::ArgMin);
  e.info.ops.push_back(Op::ArgMax);
  return e;
}

}  // namespace xr::cuda::detail
