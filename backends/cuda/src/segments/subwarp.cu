// subwarp: groups of 1 to 32 lanes per segment (k_group), and dense rows of 1, 2 or 4 elements a
// thread per 16-byte pack (k_packed_rows, launched here).
// Short segments: a warp's loads cover several of them at once; lanes idle where lengths vary.
#include <algorithm>
#include <climits>
#include <string>

#include "arith.hpp"
#include "policy.hpp"
#include "segment_families.cuh"

namespace xr::cuda::detail {
namespace {

struct PackedRowsArgs {
  const void* in;
  u64 count;
  unsigned log_length;
  void* out;
  LaunchShape shape;
};

struct PackedRows : NoSharedMemory {
  using Args = PackedRowsArgs;
  static constexpr bool maps_elements = true;
  template <class In, class Acc, Op O> static constexpr auto fn() {
    return ks::k_packed_rows<In, Acc, O, policy::kPackedRowsInFlight>;
  }
  template <class In, class Acc, Op O> static const void* kernel() {
    return reinterpret_cast<const void*>(fn<In, Acc, O>());
  }
  template <class In, class Acc, Op O> static void run(const Args& a) {
    launch("k_packed_rows", fn<In, Acc, O>(), grid_of(a.shape, kernel<In, Acc, O>()), a.shape.block, 0, a.shape.stream,
           static_cast<const In*>(a.in), a.count, a.log_length, static_cast<Acc*>(a.out));
  }
};

const Table<PackedRowsArgs>& packed_rows() {
  static const auto t = make_table<PackedRows>();
  return t;
}

// Dense rows of 1, 2 or 4 elements that divide a 16-byte pack, the input aligned to one.
bool packed(const Task& t) {
  return t.length >= 1 && t.length <= t.pack() && t.pack() % t.length == 0 && t.stride == t.length && t.aligned();
}

// One thread per pack of dense rows.
void plan_packed(Plan& p, const Task& t) {
  using xr::detail::ceil_div, xr::detail::ceil_log2;
  const unsigned log_length = ceil_log2(t.length);
  const u64 packs = t.count * t.length / t.pack();
  const u64 grid = std::clamp<u64>(ceil_div(packs, u64(t.block) * policy::kPackedRowsInFlight), 1, INT_MAX);
  p.finish = "one thread per pack of " + std::to_string(t.pack() / t.length) + " rows";
  p.depth = t.length;
  const PackedRowsArgs args{t.in, t.count, log_length, t.out, shape_of(t, grid, t.block)};
  p.pass.push_back(step_of(packed_rows(), t, args));
}

Plan plan(const Task& t) {
  Plan p;
  p.kernel = "subwarp";
  p.launches = 1;
  if (t.kind == SegmentKind::Rows && packed(t)) {
    plan_packed(p, t);
    return p;
  }
  u64 mean = 0;  // the mean length, from what the host knows
  switch (t.kind) {
    case SegmentKind::Rows: mean = t.length; break;
    case SegmentKind::Offsets:
      mean = t.stats.known ? t.stats.total / std::max<u64>(t.count, 1) : t.n / std::max<u64>(t.count, 1);
      break;
    case SegmentKind::Columns: layout_not_reduced("subwarp", t.kind);
  }
  const unsigned log_group = group_log_for(mean, t.pack());
  p.finish = "shuffles within groups of " + std::to_string(1u << log_group) + " lanes";
  if (t.stats.known) p.depth = group_depth(t.stats.longest, log_group, t.pack());
  p.pass.push_back(group_launch(t, log_group));
  return p;
}

}  // namespace

const Strategy& strategy_subwarp() {
  static const Strategy s{
      10,
      strategy_info("subwarp", KernelKind::Rung, {SegmentKind::Rows, SegmentKind::Offsets}, segment_blocks(512),
                    "groups of 1-32 lanes per segment (from the mean length), 4 segments in flight per group: a warp's "
                    "loads cover several short segments; lanes idle where lengths vary"),
      &plan};
  return s;
}

}  // namespace xr::cuda::detail
