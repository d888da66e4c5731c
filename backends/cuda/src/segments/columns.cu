// columns: lanes across columns, row bands over blocks finished by the last block of each column
// tile (k_columns_wide); arrays of at most 32 packs a row walk the flat array so that each lane
// keeps one column (k_columns_narrow). One element or one 16-byte pack a lane.
// The one strategy for columns: one launch and coalesced loads whatever the width; band partials.
#include <algorithm>
#include <climits>
#include <string>

#include "arith.hpp"
#include "kernels_cu/segments_columns.cuh"
#include "policy.hpp"
#include "segment_launch.cuh"

namespace xr::cuda::detail {
namespace {

namespace ks = xr::kern::seg;

struct ColumnsArgs {
  const void* in;
  u64 count, length, stride;  // count columns of length rows
  u64 tiles, band_rows;       // wide: column tiles; both: rows a band
  void* out;
  void* partials;  // one value per column and band, where there is more than one band
  unsigned* tickets;
  LaunchShape shape;
};

template <bool Narrow, bool Vec> struct Columns {
  using Args = ColumnsArgs;
  static constexpr bool maps_elements = true;  // band partials fold as they are
  template <class In> static constexpr unsigned W = Vec ? 16 / sizeof(In) : 1;
  template <class In>
  static constexpr unsigned U = std::max<unsigned>(1, policy::kColumnBytesInFlight / (W<In> * sizeof(In)));
  template <class In, class Acc> static constexpr std::size_t smem_per_thread() { return W<In> * sizeof(Acc); }
  template <class In, class Acc, Op O> static constexpr auto fn() {
    if constexpr (Narrow) return ks::k_columns_narrow<In, Acc, O, W<In>, U<In>>;
    else return ks::k_columns_wide<In, Acc, O, W<In>, U<In>>;
  }
  template <class In, class Acc, Op O> static const void* kernel() {
    return reinterpret_cast<const void*>(fn<In, Acc, O>());
  }
  template <class In, class Acc, Op O> static void run(const Args& a) {
    const LaunchShape& s = a.shape;
    const std::size_t smem = std::size_t(s.block) * smem_per_thread<In, Acc>();
    const unsigned grid = static_cast<unsigned>(std::clamp<u64>(s.grid, 1, INT_MAX));
    const In* in = static_cast<const In*>(a.in);
    Acc* out = static_cast<Acc*>(a.out);
    Acc* partials = static_cast<Acc*>(a.partials);
    if constexpr (Narrow)
      launch("k_columns_narrow", fn<In, Acc, O>(), grid, s.block, smem, s.stream, in, a.count, a.length, a.stride,
             a.band_rows, out, partials, a.tickets);
    else
      launch("k_columns_wide", fn<In, Acc, O>(), grid, s.block, smem, s.stream, in, a.count, a.length, a.stride,
             a.tiles, a.band_rows, out, partials, a.tickets);
  }
};

template <bool Narrow, bool Vec> const Table<ColumnsArgs>& columns_table() {
  static const auto t = make_table<Columns<Narrow, Vec>>();
  return t;
}

Plan plan(const Task& t) {
  using xr::detail::ceil_div;
  switch (t.kind) {
    case SegmentKind::Columns: break;
    case SegmentKind::Rows:
    case SegmentKind::Offsets: layout_not_reduced("columns", t.kind);
  }
  Plan p;
  p.kernel = "columns";
  p.launches = 1;
  const unsigned pack = t.pack();
  const bool vec = t.aligned() && t.stride % pack == 0 && t.count % pack == 0;
  const unsigned w = vec ? pack : 1;
  const u64 in_flight = std::max<u64>(1, policy::kColumnBytesInFlight / (w * t.elem()));
  const u64 rows_n = t.length;
  const u64 units = t.stride / w;
  unsigned block = t.block, warps = block / 32;
  u64 bands = 1, tiles = 0;
  u64 band_multiple = 1;  // narrow: bands of whole rounds, so only the last band ends in part of one
  const bool narrow = units <= 32 && t.count < 32u * w;
  const u64 used = 32 / units * units;  // narrow: lanes of a warp that hold a column set
  const Table<ColumnsArgs>& table = narrow ? (vec ? columns_table<true, true>() : columns_table<true, false>())
                                           : (vec ? columns_table<false, true>() : columns_table<false, false>());
  const Entry<ColumnsArgs>& e = entry_of(table, t);
  // Partials of W accumulators a thread in dynamic shared memory: past the default 48 KiB (u8
  // sums, 16 u64 a thread, at 512 threads and more) only once allowed.
  const auto allow_partials = [&] {
    allow_dynamic_smem(e.kernel, e.smem_per_thread * block, t.caps->device, "columns");
  };
  if (narrow) {
    // Narrow: lanes over whole rows; one block per band of rows, one wave of blocks.
    if (!t.block_given) {
      block = policy::kColumnsNarrowBlock;
      warps = block / 32;
    }
    allow_partials();
    const u64 resident = resident_blocks(e, *t.caps, block);
    const u64 rows_per_round = std::max<u64>(1, used * warps * in_flight / units);
    bands = std::clamp<u64>(ceil_div(rows_n, rows_per_round), 1, resident);
    band_multiple = rows_per_round;
    tiles = 1;
    p.finish = "lanes over whole rows, ";
  } else {
    // Wide: column tiles of 32 lanes, row bands to fill one wave of blocks.
    allow_partials();
    const u64 resident = resident_blocks(e, *t.caps, t.block);
    tiles = ceil_div(t.count, 32u * w);
    if (tiles > INT_MAX) throw InvalidArgument("cuda: columns: " + std::to_string(t.count) + " columns is too many");
    bands = std::clamp<u64>(resident / tiles, 1, std::max<u64>(1, ceil_div(rows_n, warps * in_flight)));
    bands = std::min<u64>(bands, INT_MAX / tiles);
    p.finish = "lanes across columns, ";
    if (t.stats.known) p.depth = ceil_div(ceil_div(rows_n, bands), warps) + warps;
  }
  const u64 band_rows = rows_n ? ceil_div(ceil_div(rows_n, bands), band_multiple) * band_multiple : 0;
  bands = rows_n ? ceil_div(rows_n, band_rows) : 1;
  if (t.stats.known && narrow) p.depth = ceil_div(band_rows * units, used * warps) + 5 + 32 / units + warps;
  p.finish += bands > 1 ? std::to_string(bands) + " row bands finished by the last block of each column tile"
                        : "one block per column tile";
  if (t.stats.known && bands > 1) p.depth += ceil_div(bands, warps) + warps + 1;
  void* partials = nullptr;
  unsigned* tickets = nullptr;
  if (bands > 1) {
    partials = t.scratch->buffer(SegmentScratch::Partials, bands * t.count * t.result_size());
    tickets = t.scratch->tickets(tiles);
  }
  const ColumnsArgs args{t.in,  t.count, t.length, t.stride, tiles, band_rows,
                         t.out, partials, tickets, shape_of(t, tiles * bands, block)};
  p.pass.push_back(step_of(table, t, args));
  return p;
}

}  // namespace

const Strategy& strategy_columns() {
  static const Strategy s{
      70,
      strategy_info("columns", KernelKind::Rung, {SegmentKind::Columns}, segment_blocks(1024),
                    "lanes across columns, row bands over blocks finished by the last block of each column tile, "
                    "narrow arrays with lanes over whole rows: one launch; band partials"),
      &plan};
  return s;
}

}  // namespace xr::cuda::detail
