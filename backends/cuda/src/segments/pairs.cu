// pairs: argmin, argmax and minmax per row, column or CSR segment (kernels_cu/segments_pairs.cuh):
// a warp per row or segment (k_seg_pairs), a thread per column of a C-order matrix
// (k_seg_pair_columns; the columns of a Fortran-order matrix are rows here).
// The one strategy for the pair ops: value-and-index records in one launch; element loads, and a
// warp per segment whatever its length.
#include <algorithm>
#include <array>
#include <climits>

#include "arith.hpp"
#include "kernels_cu/segments_pairs.cuh"
#include "segment_launch.cuh"

namespace xr::cuda::detail {
namespace {

namespace ks = xr::kern::seg;

struct PairArgs {
  const void* in;
  SegmentKind kind;
  u64 n, count, length, stride;
  const std::int64_t* offsets;
  void* out;
  LaunchShape shape;
};

// Blocks of a launch at most: 8 waves of the device (the kernels loop over the rest).
constexpr u64 kPairWaves = 8;

template <class In, Op O> void run(const PairArgs& a) {
  using Out = xr::kern::StoredRecord<O, In>;
  const LaunchShape& s = a.shape;
  const In* in = static_cast<const In*>(a.in);
  Out* out = static_cast<Out*>(a.out);
  // Blocks for `units` threads, at most kPairWaves waves of `kernel`.
  const auto grid = [&](const void* kernel, u64 units) {
    const u64 wave = u64(s.caps->sm_count) * u64(blocks_per_sm(kernel, s.block, 0, s.caps->device));
    return static_cast<unsigned>(
        std::clamp<u64>(xr::detail::ceil_div(units, s.block), 1, std::min<u64>(INT_MAX, std::max<u64>(1, wave) * kPairWaves)));
  };
  switch (a.kind) {
    case SegmentKind::Columns: {
      const auto k = ks::k_seg_pair_columns<In, O>;
      launch("k_seg_pair_columns", k, grid(reinterpret_cast<const void*>(k), a.count), s.block, 0, s.stream, in,
             a.count, a.length, a.stride, out);
      return;
    }
    case SegmentKind::Rows: {
      const auto k = ks::k_seg_pairs<In, O, ks::RowsSource>;
      launch("k_seg_pairs", k, grid(reinterpret_cast<const void*>(k), a.count * 32), s.block, 0, s.stream, in,
             ks::RowsSource{a.count, a.length, a.stride}, out);
      return;
    }
    case SegmentKind::Offsets: {
      const auto k = ks::k_seg_pairs<In, O, ks::OffsetsSource>;
      launch("k_seg_pairs", k, grid(reinterpret_cast<const void*>(k), a.count * 32), s.block, 0, s.stream, in,
             ks::OffsetsSource{a.offsets, a.n, a.count, nullptr, nullptr}, out);
      return;
    }
  }
}

// The launcher of each (pair op, input type).
using Launcher = void (*)(const PairArgs&);
using PairTable = std::array<std::array<Launcher, kDTypeCount>, pair_ops.size()>;
const PairTable& pair_table() {
  static const PairTable table = [] {
    PairTable t{};
    for_each_pair([&](auto fn) {
      constexpr Op O = decltype(fn)::op;
      for_each_dtype([&](auto x) {
        using T = decltype(x);
        t[static_cast<std::size_t>(O) - kFoldCount][static_cast<std::size_t>(dtype_of<T>)] = &run<T, O>;
      });
    });
    return t;
  }();
  return table;
}

Plan plan(const Task& t) {
  if (!is_pair(t.op))
    throw InvalidArgument("cuda: segment strategy pairs takes argmin, argmax and minmax, not " +
                          std::string(to_string(t.op)));
  Plan p;
  p.kernel = "pairs";
  p.launches = 1;
  p.finish = t.kind == SegmentKind::Columns ? "one thread per column" : "one warp per segment, warp shuffles";
  const PairArgs args{t.in, t.kind, t.n, t.count, t.length, t.stride, t.offsets, t.out, shape_of(t, 0, t.block)};
  const Launcher run = pair_table()[static_cast<std::size_t>(t.op) - kFoldCount][static_cast<std::size_t>(t.type)];
  p.pass.push_back([run, args] { run(args); });
  return p;
}

}  // namespace

const Strategy& strategy_pairs() {
  static const Strategy s = [] {
    Strategy x{90,
               strategy_info("pairs", KernelKind::Rung, {SegmentKind::Rows, SegmentKind::Columns, SegmentKind::Offsets},
                             segment_blocks(1024),
                             "argmin, argmax, minmax: a warp per row or segment with value-and-index records and "
                             "warp shuffles, a thread per column: one launch; element loads, a warp per segment "
                             "whatever its length"),
               &plan};
    x.info.ops.assign(pair_ops.begin(), pair_ops.end());
    x.info.exact = false;
    return x;
  }();
  return s;
}

}  // namespace xr::cuda::detail
